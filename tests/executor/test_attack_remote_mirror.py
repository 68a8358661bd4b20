"""Attack on a remote sandbox's workspace mirror (issue 28): the app copies the files a run made into its own
folder, each within `max_file_size_mb`, and (so the docstring says) all within `max_disk_mb`. The sandbox's
disk limit counts blocks, so code there can make files that cost it nothing (sparse files, hard links of one
file) yet list at the full size; the app writes each one out densely. Each run adds a few new such names: the
app's copy must still never hold more than `max_disk_mb`, however many runs it takes."""
from __future__ import annotations

from agents.executor.backend import FileInfo, SandboxLimits, SandboxSpec, WorkspaceSpec
from agents.executor.remote.files import RemoteWorkspace

MB = 1024 * 1024


class SparseFiles:
    """A sandbox whose code adds `per_run` new names per run, each listed (and read back) as a full 1 MB."""

    def __init__(self, per_run: int) -> None:
        self.per_run, self.made = per_run, 0
        self.names: list[str] = []

    def next_run(self) -> None:
        self.names += [f"zeros-{i}.bin" for i in range(self.made, self.made + self.per_run)]
        self.made += self.per_run

    def put(self, relpath: str, data: bytes, max_bytes: int) -> None: ...
    def get(self, relpath: str, max_bytes: int) -> bytes: return bytes(min(MB, max_bytes + 1))
    def list(self, max_entries: int) -> dict[str, FileInfo]:
        return {n: FileInfo(size=MB, mtime_ns=1) for n in self.names}
    def remove(self, relpath: str) -> None: ...


class Host(RemoteWorkspace):
    def __init__(self, files: SparseFiles, workspace: str, limits: SandboxLimits) -> None:
        self.spec = SandboxSpec(WorkspaceSpec(workspace), limits=limits)
        self._init_files(files)


def local_bytes(ws) -> int:
    return sum(p.stat().st_size for p in ws.rglob("*") if p.is_file())


def test_attack_runs_of_sparse_files_cannot_grow_the_apps_copy_past_the_disk_limit(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "upload.csv").write_bytes(b"a,b\n1,2\n")  # the person's own file stays
    files = SparseFiles(per_run=2)
    host = Host(files, str(ws), SandboxLimits(max_disk_mb=3, max_file_size_mb=1))
    host._workspace_assigned(str(ws))
    for _ in range(6):  # 12 MB listed over six runs, 2 MB a run (each run within the limit on its own)
        files.next_run()
        host.pull_workspace()
        assert local_bytes(ws) <= 3 * MB, f"the app's copy holds {local_bytes(ws):,} bytes, over max_disk_mb"
    assert (ws / "upload.csv").read_bytes() == b"a,b\n1,2\n"
    assert local_bytes(ws) > MB  # the files that fit were still copied


def test_files_deleted_in_the_sandbox_free_room_for_new_ones(tmp_path):
    ws = tmp_path / "ws"
    files = SparseFiles(per_run=2)
    host = Host(files, str(ws), SandboxLimits(max_disk_mb=2, max_file_size_mb=1))
    host._workspace_assigned(str(ws))
    files.next_run()
    host.pull_workspace()
    assert sorted(p.name for p in ws.iterdir()) == ["zeros-0.bin", "zeros-1.bin"]
    files.names = []
    files.next_run()  # the code deleted the first two and made two new ones
    host.pull_workspace()
    assert sorted(p.name for p in ws.iterdir()) == ["zeros-2.bin", "zeros-3.bin"]


def test_attack_changed_files_skipped_for_room_still_count_against_the_copy(tmp_path):
    """The code touches every file already copied (so each is to be fetched again) and adds new names sorting
    first: the copy's older versions stay while the new names fill the room, unless they are counted."""
    ws = tmp_path / "ws"
    files = SparseFiles(per_run=3)
    host = Host(files, str(ws), SandboxLimits(max_disk_mb=3, max_file_size_mb=1))
    host._workspace_assigned(str(ws))
    files.next_run()
    host.pull_workspace()
    for run in range(4):
        files.names = [f"a{run}-{i}.bin" for i in range(3)] + files.names
        listed = files.list

        def touched(max_entries: int, listed=listed, run=run) -> dict[str, FileInfo]:
            return {n: FileInfo(size=MB, mtime_ns=2 + run) for n in listed(max_entries)}

        files.list = touched  # type: ignore[method-assign]
        host.pull_workspace()
        files.list = listed  # type: ignore[method-assign]
        assert local_bytes(ws) <= 3 * MB, f"the app's copy holds {local_bytes(ws):,} bytes, over max_disk_mb"
