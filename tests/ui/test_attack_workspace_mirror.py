"""Attacks on the chat's workspace copy in a shared store (ui/saved/workspace_mirror.py) by someone who can write
the bucket: a file's blob or the manifest made huge, to make every replica that opens the chat read it all into
memory. Each test counts the bytes the real store's client handed to the app (fsspec's memory file system, and
S3 on moto's server) and fails if the app read past the bound the manifest (or the manifest's cap) sets."""
from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from shared_servers import s3_client, s3_endpoint  # noqa: F401 (fixture)

from ui.saved.workspace_mirror import MANIFEST, MANIFEST_MAX_BYTES, MirrorError, WorkspaceMirror
from ui.session.workspace_access import DiskFiles
from ui.shared.blobs import BlobStore, BlobTooLarge, LocalBlobs
from ui.shared.blobs_fsspec import FsspecBlobs
from ui.shared.blobs_s3 import S3Blobs

KEY = "owners/" + "a" * 64 + "/" + "b" * 32
BOMB = 8 * 1024 * 1024  # far past any bound below, small enough for a loaded test machine


class _CountingBody:
    def __init__(self, body: Any, seen: list[int]) -> None:
        self._body, self._seen = body, seen

    def read(self, amount: int | None = None) -> bytes:
        data = self._body.read() if amount is None else self._body.read(amount)
        self._seen.append(len(data))
        return data

    def close(self) -> None:
        self._body.close()


def _counted(kind: str, request: pytest.FixtureRequest) -> tuple[BlobStore, list[int]]:
    """A real store whose client records how many bytes each read handed over."""
    seen: list[int] = []
    if kind == "fsspec":
        store = FsspecBlobs(f"memory://attack-{secrets.token_hex(6)}/chats")
        real_cat = store.fs.cat_file

        def cat_file(path: str, *args: Any, **kwargs: Any) -> bytes:
            data = real_cat(path, *args, **kwargs)
            seen.append(len(data))
            return data

        store.fs.cat_file = cat_file  # type: ignore[method-assign]
        return store, seen
    client = s3_client(request.getfixturevalue("s3_endpoint"))
    bucket = f"attack-{secrets.token_hex(6)}"
    client.create_bucket(Bucket=bucket)
    s3 = S3Blobs(f"s3://{bucket}/agentdeck", client=client)
    real_get = client.get_object

    def get_object(**kwargs: Any) -> Any:
        reply = real_get(**kwargs)
        reply["Body"] = _CountingBody(reply["Body"], seen)
        return reply

    client.get_object = get_object
    return s3, seen


@pytest.fixture(params=["fsspec", "s3"])
def counted(request: pytest.FixtureRequest) -> tuple[BlobStore, list[int]]:
    return _counted(request.param, request)


def _replica(tmp_path: Path, name: str) -> DiskFiles:
    folder = tmp_path / name / "workspace"
    folder.mkdir(parents=True)
    return DiskFiles(folder)


def test_attack_a_file_blob_swapped_for_a_huge_one_is_not_read(counted: tuple[BlobStore, list[int]],
                                                               tmp_path: Path) -> None:
    blobs, seen = counted
    first, second = _replica(tmp_path, "one"), _replica(tmp_path, "two")
    first.write("data.csv", b"a,b\n1,2\n")
    WorkspaceMirror(blobs, KEY, 64 * 1024 * 1024).push(first)
    blobs.put(f"{KEY}/files/{hashlib.sha256(b'a,b' + bytes([10]) + b'1,2' + bytes([10])).hexdigest()}",
              b"x" * BOMB)
    seen.clear()
    report = WorkspaceMirror(blobs, KEY, 64 * 1024 * 1024).pull(second)
    assert "data.csv" in report.left_out and not second.taken("data.csv")
    assert max(seen, default=0) <= 64 * 1024, f"the app read {max(seen):,} bytes of a blob the manifest says is 8"


def test_attack_a_huge_manifest_is_refused_without_reading_it(counted: tuple[BlobStore, list[int]],
                                                              tmp_path: Path) -> None:
    blobs, seen = counted
    blobs.put(f"{KEY}/{MANIFEST}", json.dumps({"files": {}}).encode() + b" " * BOMB)
    seen.clear()
    with pytest.raises(MirrorError, match="over"):
        WorkspaceMirror(blobs, KEY, 10_000).pull(_replica(tmp_path, "two"))
    assert sum(seen) <= MANIFEST_MAX_BYTES + 1, f"the app read {sum(seen):,} bytes of an oversized manifest"


def test_attack_the_local_store_honours_the_bound_too(tmp_path: Path) -> None:
    store = LocalBlobs(tmp_path / "chats")
    store.put("owners/x/files/big", b"y" * 4096)
    with pytest.raises(BlobTooLarge):
        store.get("owners/x/files/big", max_bytes=100)
    blob = store.get("owners/x/files/big", max_bytes=4096)
    assert blob is not None and blob.data == b"y" * 4096
    assert store.get("owners/x/files/none", max_bytes=10) is None
