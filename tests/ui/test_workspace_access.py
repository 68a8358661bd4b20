"""The UI's file operations against a sandbox host that does NOT share the app's disk (ui/session/workspace_access.py).

The fake host keeps the workspace in its own folder (like a remote pod would) and answers only through the
`SandboxHost` file operations; the app's folder stays empty, so anything the UI read from it directly would be
missing here."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from agents.executor.backend import Capabilities, FileTooLarge
from agents.executor.local import workspace_files
from agents.executor.local.shared_disk import SharedDiskFiles
from ui.panels.bundles import write_bundle
from ui.session.workspace_access import DiskFiles, HostFiles, files_of
from ui.session.workspace_files import listed_files


class ElsewhereHost(SharedDiskFiles):
    """A host whose worker writes `workdir`, a folder the app does not use as its workspace."""

    capabilities = Capabilities(same_disk=False)

    def __init__(self, workdir: Path) -> None:
        self.workdir, self._uid = str(workdir), None


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[ElsewhereHost, Path, Path]:
    remote, app = tmp_path / "remote", tmp_path / "app-workspace"
    remote.mkdir()
    app.mkdir()
    (remote / "sub").mkdir()
    (remote / "chart.png").write_bytes(b"png")
    (remote / "sub" / "data.csv").write_bytes(b"a,b\n1,2\n")
    (remote / ".hidden").write_bytes(b"x")
    (remote / "escape").symlink_to("/etc/passwd")
    return ElsewhereHost(remote), remote, app


def test_files_of_picks_the_host_without_same_disk(setup) -> None:
    host, _, app = setup
    assert isinstance(files_of(host, app), HostFiles)
    assert isinstance(files_of(None, app), DiskFiles)


def test_list_read_write_remove_go_to_the_host(setup) -> None:
    host, remote, app = setup
    files = files_of(host, app)
    assert set(files.list()) == {"chart.png", "sub/data.csv"}  # no hidden name, no link
    assert [Path(p).relative_to(app).as_posix() for p in listed_files([], [], files)] == \
        sorted(["chart.png", "sub/data.csv"], key=lambda n: (files.list()[n].mtime_ns, n))
    assert files.read("sub/data.csv") == b"a,b\n1,2\n"
    with pytest.raises(FileTooLarge):
        files.read("sub/data.csv", max_bytes=3)
    with pytest.raises(PermissionError):
        files.read("escape")
    with pytest.raises(PermissionError):
        files.read("../app-workspace/x")
    files.write("upload.txt", b"hello", exclusive=True)
    assert (remote / "upload.txt").read_bytes() == b"hello"
    with pytest.raises(FileExistsError):
        files.write("upload.txt", b"again", exclusive=True)
    with pytest.raises(FileTooLarge):
        files.write("big.bin", b"x" * 10, max_bytes=5)
    files.remove("chart.png")
    assert not (remote / "chart.png").exists()
    files.remove("escape")  # the link itself goes, its target untouched
    assert Path("/etc/passwd").exists()
    assert list(app.iterdir()) == []  # nothing went through the app's own folder


def test_a_zip_of_the_files_panel_reads_through_the_host(setup, tmp_path: Path) -> None:
    host, _, app = setup
    bundle = write_bundle(tmp_path / "all.zip", files_of(host, app), ["chart.png", "sub/data.csv", "escape"])
    assert bundle.included == ["chart.png", "sub/data.csv"]
    assert bundle.left_out == ["escape: not a regular file"]
    with zipfile.ZipFile(tmp_path / "all.zip") as archive:
        assert archive.read("sub/data.csv") == b"a,b\n1,2\n"


def test_an_exclusive_write_never_replaces_a_file_on_the_same_disk(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        workspace_files.write(str(tmp_path), "kept.txt", b"other", 100, None, exclusive=True)
    assert (tmp_path / "kept.txt").read_bytes() == b"mine"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]  # no temporary left behind
