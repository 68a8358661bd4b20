"""The app on the real Docker backend, its hosts reporting no `same_disk` (issue 27): the session's files then go
through the container host's own file operations (`HostFiles`), for an upload sent while the sandbox is live,
the chart the code writes, the files panel, the answer's links and the export zip.

The container bind-mounts the app's folder, so the files are on one disk either way; what this shows is that the
app works whole through the host's operations on a real backend (each is counted), and that a host reporting
no shared disk is taken at its word. The fake host of test_workspace_elsewhere.py is the one whose files are
really elsewhere. Skipped with the reason when no Docker Engine answers (CI has one: .ci/run)."""
from __future__ import annotations

import dataclasses
import os
import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from ui_testlib import Req, code_reply, write_transcript
from ui_testlib import form as settings_form

from agents.executor.docker import daemon
from agents.executor.docker import host as docker_host
from ui.app import AgentDeckApp
from ui.panels.exports import ChatExports
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.session.workspace_access import DiskFiles, HostFiles
from ui.settings import AppConfig

WHY_NOT = daemon.reachable()
if WHY_NOT is not None and os.environ.get("CI"):
    raise RuntimeError(f"CI must reach a Docker Engine for the Docker backend's tests: {WHY_NOT}")
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")

#: A 1x1 PNG the code writes (no plotting library in the image needed).
PNG_HEX = ("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
           "0000000d49444154789c6360f8cfc0f01f0005000201a5f8e1a70000000049454e44ae426082")


def test_a_chat_on_docker_whose_host_reports_no_shared_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    monkeypatch.setattr(docker_host.DockerHost, "capabilities",
                        dataclasses.replace(docker_host.CAPABILITIES, same_disk=False))
    calls: Counter[str] = Counter()
    for name in ("write", "open_versioned", "list", "read", "remove"):
        original = getattr(HostFiles, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(HostFiles, name, counted)
    replies = [
        code_reply("Read it and draw.", "rows = open('penguins.csv').read().splitlines()\n"
                                        f"open('chart.png', 'wb').write(bytes.fromhex('{PNG_HEX}'))\n"
                                        "print('rows', len(rows))"),
        code_reply("Done.", "final_answer('Saved chart.png from penguins.csv.')"),
        code_reply("Count the second table.", "more = open('more.csv').read().splitlines()\nprint('more', len(more))"),
        code_reply("Done.", "final_answer(f'more.csv has {len(more)} lines.')"),
    ]
    config = AppConfig(model=f"replay:{write_transcript(tmp_path / 'script.json', replies)}",
                       data_dir=tmp_path / "data", authorized_imports=(), max_steps=4, sandbox="docker",
                       sandbox_pool=0)
    app = AgentDeckApp(config)
    history = HistoryController(app.services)
    form = settings_form(config.model, max_steps=4)
    (tmp_path / "penguins.csv").write_text("species,mass\nAdelie,3700\nGentoo,5000\n")
    (tmp_path / "more.csv").write_text("a\nb\n")
    try:
        list(history.on_load({"token": new_token()}, Req("tab"), **form))
        list(app.run({"text": "Plot my data", "files": [str(tmp_path / "penguins.csv")]}, Req("tab"), **form))
        session = app.registry.peek("tab")
        assert session is not None and session.agent.live_sandbox is not None
        assert isinstance(session.record.files, HostFiles)  # the container's host, taken at its word
        list(app.run({"text": "And this one", "files": [str(tmp_path / "more.csv")]}, Req("tab"), **form))
        assert calls["write"] == 1  # the second upload went in through the container host (the sandbox was live)

        said = [m["content"] for m in session.record.transcript.messages() if isinstance(m["content"], str)]
        answers = [t for t in said if t.startswith(("Saved", "more.csv has", "[more.csv]"))]
        assert len(answers) == 2 and "has 2 lines" in answers[1], said[-6:]
        links = dict(re.findall(r"\[([^\]]+)\]\(gradio_api/file=([^)]+)\)", answers[0]))
        assert Path(links["chart.png"]).read_bytes() == bytes.fromhex(PNG_HEX)
        assert Path(links["penguins.csv"]).read_bytes().startswith(b"species,mass")

        shown = {Path(p).name: Path(p).read_bytes() for p in session.record.file_paths()}
        assert shown["chart.png"] == bytes.fromhex(PNG_HEX) and shown["more.csv"] == b"a\nb\n"
        assert calls["open_versioned"] >= 3 and calls["list"] >= 1

        with zipfile.ZipFile(ChatExports(app.services).export_bundle(Req("tab"))) as bundle:
            assert bundle.read("chart.png") == bytes.fromhex(PNG_HEX)
            assert bundle.read("more.csv") == b"a\nb\n" and bundle.read("penguins.csv").startswith(b"species")
    finally:
        app.registry.shutdown()


_CONTAINER_LINKS = r"""
import os
made = {}
for name, target in (("own_link.csv", "/etc/passwd"), ("up", ".."), ("root_dir", "/")):
    try:
        os.symlink(target, name)
        made[name] = "made"
    except OSError as exc:
        made[name] = exc.errno
made
"""


@pytest.mark.parametrize("same_disk", [True, False], ids=["descriptor-reads", "host-operations"])
def test_links_in_a_container_workspace_never_reach_a_file_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   same_disk: bool) -> None:
    """Code holding the real `os` in a Docker sandbox (`python_layers=False`) makes links in its workspace, to the
    container's files and to the folder above; one more was planted there pointing at a file of the app's machine.
    Whether the app reads the workspace by descriptor (the bind-mounted folder) or through the container host's
    operations, no name gives it a byte of what a link points at, and no link is listed."""
    from agents.executor import PythonSandbox
    from ui.session.workspace_access import files_of

    monkeypatch.setattr(docker_host.DockerHost, "capabilities",
                        dataclasses.replace(docker_host.CAPABILITIES, same_disk=same_disk))
    secret = tmp_path / "outside.txt"
    secret.write_text("SECRET-OF-THE-APP-MACHINE\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "planted.csv").symlink_to(secret)
    (workspace / "real.csv").write_text("a,b\n1,2\n")
    with PythonSandbox(str(workspace), backend="docker", python_layers=False) as sandbox:
        result = sandbox.run(_CONTAINER_LINKS)
        assert result.error is None, result.error
        files = files_of(sandbox.host, workspace)
        assert isinstance(files, DiskFiles if same_disk else HostFiles)
        listed = files.list()
        assert set(listed) == {"real.csv"}, listed  # links are not files
        assert files.read("real.csv") == b"a,b\n1,2\n"
        for name in ("planted.csv", "own_link.csv", "up/outside.txt", "root_dir/etc/passwd"):
            with pytest.raises(OSError):
                files.read(name)
            with pytest.raises(OSError):
                files.open_versioned(name)
        made = result.output
        try:  # a link `up` the kernel let the code make is refused; else `up` is a new folder of the workspace
            files.write("up/outside.txt", b"overwritten")
        except OSError:
            assert made.get("up") == "made", made
        else:
            assert made.get("up") != "made" and (workspace / "up").is_dir() and not (workspace / "up").is_symlink()
    assert secret.read_text() == "SECRET-OF-THE-APP-MACHINE\n"
