"""Fresh-eyes attacks on the workspace-files seam (ui/session/workspace_access.py) and what stands on it.

Each test is the attack, written so it fails if the attack works."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from agents.executor import PythonSandbox
from tests.waiting import wait_until
from ui.chat.published_files import FilePublisher, NotPublishable
from ui.session.chat_record import ChatRecord
from ui.session.workspace_access import DiskFiles, relative_name
from ui.uploads.batch import ingest_uploads

# A text upload mixing UTF-8 with Windows-1252 lines is stored re-encoded as UTF-8 (ui/uploads/parsing.py): each
# of these cp1252 bytes (curly quotes, ellipsis, dash) becomes three bytes.
_DENSE = ("\u201c\u2026\u201d\u2013" * 40).encode("cp1252") + b"\n"


def _mixed_upload(folder: Path, lines: int = 1500) -> Path:
    source = folder / "notes.txt"
    source.write_bytes("caf\u00e9 au lait\n".encode("utf-8") + _DENSE * lines)
    return source


def test_uploads_that_grow_when_stored_cannot_pass_the_workspace_quota(tmp_path: Path) -> None:
    """The quota is checked against the upload's size, but what is stored is its UTF-8 text, up to three times
    bigger: two uploads under a quota of twice their size stored six times it. What the workspace takes after a
    message must stay within the quota."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    source = _mixed_upload(tmp_path)
    size = source.stat().st_size
    quota = 2 * size
    results = ingest_uploads([(str(source), "a.txt"), (str(source), "b.txt")], workspace,
                             max_upload_bytes=size, quota_bytes=quota)
    assert any(r.ok for r in results) or all("more than" in (r.error or "") for r in results)
    stored = DiskFiles(workspace).used_bytes()
    assert stored <= quota, f"the workspace takes {stored:,} bytes after uploads under a quota of {quota:,}"
    for result in results:
        if not result.ok:
            assert "more than" in (result.error or "")  # refused for the quota, said so


def test_a_stored_upload_is_counted_at_its_stored_size(tmp_path: Path) -> None:
    """One upload that fits the quota as sent but not as stored is refused, nothing left behind."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    source = _mixed_upload(tmp_path)
    size = source.stat().st_size
    [result] = ingest_uploads([(str(source), "a.txt")], workspace, max_upload_bytes=size, quota_bytes=size + 10)
    assert not result.ok and "more than" in (result.error or ""), result.error
    assert os.listdir(workspace) == []


def test_relative_name_is_fooled_by_no_spelling_of_a_path(tmp_path: Path) -> None:
    """Names the chat or the worker may give: `..` out and back, a sibling sharing the prefix, the root itself,
    trailing slashes, a symlinked root's real form, /proc/self/root: only names inside come back, none with `..`."""
    real = tmp_path / "real" / "workspace"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    root = tmp_path / "link" / "workspace"
    outside = [f"{root}/../workspace2/x.csv", f"{root}2/x.csv", f"{root}/..", str(root), f"{root}/", f"{root}/.",
               f"{real}/../x.csv", "../x.csv", "a/../../x.csv", f"/proc/self/root{root}/x.csv",
               f"{root}/sub/../../workspace2/x.csv", "/etc/passwd"]
    for name in outside:
        assert relative_name(name, root) is None, name
    assert relative_name(f"{root}/a/../b.csv", root) == "b.csv"
    assert relative_name(f"{real}/b.csv", root) == "b.csv"
    assert relative_name(f"{root}//b.csv/", str(root) + "/") == "b.csv"
    assert relative_name("./b.csv", root) == "b.csv"


_WORKER_LINKS = r"""
import os, ctypes
libc = ctypes.CDLL(None, use_errno=True)
with open("shown.csv", "w") as fh:
    fh.write("a,b\n1,2\n")
tried = {}
def attempt(name, fn):
    try:
        fn()
        tried[name] = "done"
    except OSError as exc:
        tried[name] = exc.errno
attempt("symlink", lambda: os.symlink("shown.csv", "own_link"))
attempt("move-link", lambda: os.replace("link_f", "moved"))
attempt("hard-link-link", lambda: os.link("link_f", "again", follow_symlinks=False))
tried["exchange"] = libc.renameat2(-100, b"shown.csv", -100, b"link_f", 2) or "done"
tried
"""

# What a container's code can do (its kernel rules allow links): exchange, atomically, a name with a link out.
_SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
while not os.path.exists("stop"):
    libc.renameat2(-100, b"d", -100, b"link_d", 2)
    libc.renameat2(-100, b"shown.csv", -100, b"link_f", 2)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement")
def test_the_worker_cannot_make_or_move_a_link_of_its_own(tmp_path: Path) -> None:
    """Code holding the real os and ctypes, in a local sandbox, tries to make a symbolic link, move one planted
    in its workspace, hard-link it, or exchange it atomically with a file (renameat2): the kernel refuses all."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "link_f").symlink_to(tmp_path / "outside.txt")
    with PythonSandbox(str(workspace), python_layers=False) as sandbox:
        result = sandbox.run(_WORKER_LINKS)
    assert result.error is None, result.error
    assert "done" not in result.output.values(), result.output
    assert (workspace / "link_f").is_symlink() and (workspace / "shown.csv").is_file()


def test_names_swapped_for_links_never_get_a_file_out_published(tmp_path: Path) -> None:
    """A process keeps exchanging (renameat2, atomic) a workspace file with a link to a file outside, and a
    folder with a link to a folder outside, while the app publishes those names, spelled as the chat names them
    and through /proc/self/root (not the workspace's spelling by its text, so the other way of publishing takes
    it). No published copy holds the outside file, and both outcomes were seen (the race ran)."""
    secret = "SECRET-" + uuid.uuid4().hex
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.csv").write_text(secret + "\n")
    record = ChatRecord(tmp_path / "session", threading.RLock())
    record._publisher = FilePublisher(root=tmp_path / "published")
    workspace = record.workspace
    (workspace / "d").mkdir()
    (workspace / "d" / "x.csv").write_text("a,b\n1,2\n")
    (workspace / "shown.csv").write_text("a,b\n1,2\n")
    (workspace / "link_d").symlink_to(outside)
    (workspace / "link_f").symlink_to(outside / "x.csv")
    names = [workspace / "shown.csv", workspace / "d" / "x.csv",
             Path(f"/proc/self/root{workspace}/shown.csv"), Path(f"/proc/self/root{workspace}/d/x.csv")]
    outcomes = {"published": 0, "refused": 0}
    contents: set[str] = set()

    def attempt_all() -> bool:
        for name in names:
            try:
                published = record.publish(name)
            except (NotPublishable, OSError):
                outcomes["refused"] += 1
                continue
            outcomes["published"] += 1
            contents.add(Path(published.path).read_text())
        return outcomes["published"] >= 40 and outcomes["refused"] >= 40

    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(workspace)])
    try:
        wait_until(attempt_all, what="the app to publish and refuse the swapped names many times")
    finally:
        (workspace / "stop").touch()
        swapper.wait(10)
    assert contents == {"a,b\n1,2\n"}, contents
    assert not any(secret in path.read_text(errors="replace") for path in (tmp_path / "published").rglob("*")
                   if path.is_file())
