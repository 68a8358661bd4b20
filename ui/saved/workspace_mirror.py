"""A chat's workspace files kept in a shared chat store, so another replica can bring them back.

Why: with several replicas (issue 28) a chat's workspace was the disk of the replica that served it. A chat
reopened on another replica (its replica died) got its memory back and its code re-run, but the files the person
had uploaded were gone, so the very code that read them failed. When the chat store is shared (object storage,
not the local folder), the chat's record pushes the workspace's files to the store after the person's message is
taken and after each run, and a replica that opens the chat without them pulls them back before the sandbox's
variables are rebuilt.

Content-addressed: each file is the blob `<chat>/files/<sha256>`, and `<chat>/workspace.json` maps each file name
to its hash and size. So keys stay plain whatever a file is called, an unchanged or renamed file is not sent
again, and a pull checks every byte it writes against the manifest. The manifest is read as hostile (anyone who
can write the bucket can write it): its size, every name, every hash and the totals are checked before a byte of
it is used. Files past the caps (the uploads first, then the oldest) are left out and named in the report.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from agents.executor.backend import FileTooLarge
from ui.session.workspace_access import WorkspaceFiles, plain_name
from ui.shared.blobs import ANY, BlobStore, BlobTooLarge

MANIFEST = "workspace.json"
MANIFEST_MAX_BYTES = 2 * 1024 * 1024  # a manifest of thousands of names stays far below this
MAX_MIRRORED_FILES = 2000
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class MirrorError(Exception):
    """The chat's files could not be copied to or from the shared store; the message says what to check."""


@dataclass(frozen=True)
class MirroredFile:
    sha256: str
    size: int


@dataclass
class MirrorReport:
    """What a push or pull did: files sent or written, and the names left out with why."""

    moved: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)


class WorkspaceMirror:
    """The copy of one chat's workspace in a shared `BlobStore` under the chat's key (`owners/<owner>/<chat>`)."""

    def __init__(self, blobs: BlobStore, chat_key: str, max_bytes: int,
                 max_files: int = MAX_MIRRORED_FILES) -> None:
        self._blobs = blobs
        self._key = chat_key
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._known: dict[str, MirroredFile] | None = None  # the manifest as last read or written
        self._hashed: dict[str, tuple[int, int, str]] = {}  # name -> (size, mtime_ns, sha256) hashed here

    def _file_key(self, sha256: str) -> str:
        return f"{self._key}/files/{sha256}"

    # ----- the manifest ------------------------------------------------------------------------------------
    def manifest(self) -> dict[str, MirroredFile]:
        """The files the store holds for this chat (empty when none were pushed); MirrorError if it is unusable."""
        if self._known is None:
            try:
                blob = self._blobs.get(f"{self._key}/{MANIFEST}", max_bytes=MANIFEST_MAX_BYTES)
            except BlobTooLarge:
                raise MirrorError(f"the chat's file list in the store is over {MANIFEST_MAX_BYTES:,} bytes: it "
                                  "was not written by this app") from None
            self._known = {} if blob is None else self._parse(blob.data)
        return dict(self._known)

    def _parse(self, data: bytes) -> dict[str, MirroredFile]:
        if len(data) > MANIFEST_MAX_BYTES:
            raise MirrorError(f"the chat's file list in the store is {len(data):,} bytes, over "
                              f"{MANIFEST_MAX_BYTES:,}: it was not written by this app")
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise MirrorError(f"the chat's file list in the store is not JSON ({exc})") from exc
        files = raw.get("files") if isinstance(raw, dict) else None
        if not isinstance(files, dict) or len(files) > self.max_files:
            raise MirrorError("the chat's file list in the store has no `files` table, or too many files")
        parsed: dict[str, MirroredFile] = {}
        total = 0
        for name, entry in files.items():
            sha, size = (entry.get("sha256"), entry.get("size")) if isinstance(entry, dict) else (None, None)
            if not (isinstance(name, str) and _plain_name(name) and isinstance(sha, str) and _SHA256.match(sha)
                    and type(size) is int and 0 <= size):
                raise MirrorError(f"the chat's file list in the store has a bad entry for {name!r}")
            total += size
            parsed[name] = MirroredFile(sha, size)
        if total > self.max_bytes:
            raise MirrorError(f"the chat's file list in the store adds up to {total:,} bytes, over the workspace "
                              f"limit of {self.max_bytes:,} (AGENTDECK_MAX_WORKSPACE_MB)")
        return parsed

    def _write_manifest(self, files: dict[str, MirroredFile]) -> None:
        body = {"files": {name: {"sha256": f.sha256, "size": f.size} for name, f in sorted(files.items())}}
        self._blobs.put(f"{self._key}/{MANIFEST}", json.dumps(body).encode(), expect=ANY)
        self._known = dict(files)

    # ----- push and pull -----------------------------------------------------------------------------------
    def push(self, files: WorkspaceFiles, first: Iterable[str] = ()) -> MirrorReport:
        """Send the workspace's files the store does not have yet and write the manifest; blobs no file names any
        more are deleted. `first`: names kept before others when the caps leave some out (the uploads)."""
        report = MirrorReport()
        old = self.manifest()
        listed = files.list()
        order = [n for n in dict.fromkeys(first) if n in listed]
        order += [n for n, _ in sorted(listed.items(), key=lambda kv: (kv[1].mtime_ns, kv[0])) if n not in order]
        kept: dict[str, MirroredFile] = {}
        total = 0
        stored = {f.sha256 for f in old.values()}
        for name in order:
            info = listed[name]
            if not _plain_name(name):
                continue
            if len(kept) >= self.max_files or total + info.size > self.max_bytes:
                report.left_out[name] = "over the workspace limit of the shared store"
                continue
            seen = self._hashed.get(name)
            if seen is not None and seen[:2] == (info.size, info.mtime_ns) and info.mtime_ns:
                entry = MirroredFile(seen[2], seen[0])
            else:
                try:
                    data = files.read(name, self.max_bytes - total)
                except FileTooLarge:
                    report.left_out[name] = "over the workspace limit of the shared store"
                    continue
                except OSError:
                    continue  # removed (or replaced by a link) since the listing: nothing to keep
                entry = MirroredFile(hashlib.sha256(data).hexdigest(), len(data))
                if entry.sha256 not in stored:
                    self._blobs.put(self._file_key(entry.sha256), data, expect=ANY)
                    stored.add(entry.sha256)
                    report.moved.append(name)
                self._hashed[name] = (entry.size, info.mtime_ns, entry.sha256)
            kept[name] = entry
            total += entry.size
        if kept != old:
            self._write_manifest(kept)
            for sha in {f.sha256 for f in old.values()} - {f.sha256 for f in kept.values()}:
                self._blobs.delete(self._file_key(sha))
        return report

    def pull(self, files: WorkspaceFiles) -> MirrorReport:
        """Write the manifest's files the workspace lacks (a file of the same name and size is left alone), each
        checked against its hash; one missing from the store or changed there is left out and named."""
        report = MirrorReport()
        wanted = self.manifest()
        if not wanted:
            return report
        present = files.list()
        for name, entry in wanted.items():
            here = present.get(name)
            if here is not None and here.size == entry.size:
                continue
            try:  # never more than the manifest's size: a bucket writer decides how large the blob is
                blob = self._blobs.get(self._file_key(entry.sha256), max_bytes=entry.size)
            except BlobTooLarge:
                report.left_out[name] = "changed in the shared store since it was saved"
                continue
            if blob is None:
                report.left_out[name] = "missing from the shared store"
                continue
            if len(blob.data) != entry.size or hashlib.sha256(blob.data).hexdigest() != entry.sha256:
                report.left_out[name] = "changed in the shared store since it was saved"
                continue
            try:
                files.write(name, blob.data, max_bytes=max(entry.size, 1))
            except OSError as exc:
                report.left_out[name] = f"could not be written here ({exc.__class__.__name__})"
                continue
            report.moved.append(name)
        return report


def _plain_name(name: str) -> bool:
    """A workspace-relative file name the mirror keeps: inside the workspace, in plain form (`a\\.x` would be
    written as the hidden `a/.x`), and not hidden."""
    return plain_name(name) and not any(part.startswith(".") for part in name.split("/"))


def describe(report: MirrorReport, verb: str) -> str | None:
    """One line for the chat about files left out (None when nothing was)."""
    if not report.left_out:
        return None
    names = ", ".join(f"`{n}` ({why})" for n, why in list(report.left_out.items())[:5])
    more = len(report.left_out) - 5
    return f"⚠️ Some files of this chat could not be {verb}: {names}" + (f" and {more} more" if more > 0 else "") + "."


def mirror_for(blobs: BlobStore, chat_key: str, max_bytes: int, shared: bool) -> WorkspaceMirror | None:
    """The chat's mirror when its store is shared by replicas, else None (one machine: the folder is enough)."""
    return WorkspaceMirror(blobs, chat_key, max_bytes) if shared else None
