"""A hostile sandbox service lists names that are not in plain form (`a\\b`, `./x`, `a//b`, `x/`): each is an
alias of another local path once the app writes it (a backslash becomes a folder step on the app's side), so one
remote file could land under a name the listing never showed, or two listed names could be one local file.
The host must refuse every listed name that is not already in its one plain form."""
from __future__ import annotations

import pytest

from agents.executor.backend import FileInfo, SandboxSpec, WorkspaceSpec
from agents.executor.remote.files import RemoteWorkspace


class Listed:
    """A service whose listing is whatever the attacker wants; every file holds `payload`."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def put(self, relpath: str, data: bytes, max_bytes: int) -> None: ...
    def get(self, relpath: str, max_bytes: int) -> bytes: return b"payload"
    def list(self, max_entries: int) -> dict[str, FileInfo]:
        return {n: FileInfo(size=7, mtime_ns=1) for n in self.names}
    def remove(self, relpath: str) -> None: ...


class Host(RemoteWorkspace):
    def __init__(self, files: Listed, workspace: str) -> None:
        self.spec = SandboxSpec(WorkspaceSpec(workspace))
        self._init_files(files)


@pytest.mark.parametrize("name", ["a\\.hidden", "./up.txt", "dir//f", "dir/./f", "f/", "a\\b"])
def test_attack_a_listed_alias_name_writes_nothing(tmp_path, name):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "up.txt").write_bytes(b"the person's upload")
    host = Host(Listed([name]), str(ws))
    host._workspace_assigned(str(ws))
    with pytest.raises(ValueError, match="invalid entry"):
        host.list_files()
    host.pull_workspace()
    assert sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*")) == ["up.txt"]
    assert (ws / "up.txt").read_bytes() == b"the person's upload"


def test_attack_plain_names_still_pull(tmp_path):
    ws = tmp_path / "ws"
    host = Host(Listed(["out.csv", "dir/f.txt"]), str(ws))
    host._workspace_assigned(str(ws))
    host.pull_workspace()
    assert (ws / "out.csv").read_bytes() == b"payload" and (ws / "dir" / "f.txt").read_bytes() == b"payload"
