"""Fresh-eyes attacks on the workspace-files seam (ui/session/workspace_access.py) and what stands on it.

Each test is the attack, written so it fails if the attack works."""
from __future__ import annotations

import os
from pathlib import Path

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
