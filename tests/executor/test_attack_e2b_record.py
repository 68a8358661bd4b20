"""Attacks on the E2B host record (`/root/.agentdeck/host.json`, agents/executor/e2b/session.py): what a replica
that reattaches a chat's sandbox believes about it. The record lives in the sandbox, so it comes back from the
sandbox: hostile like everything else a remote sandbox sends. A sandbox whose root was taken (or a service that
hands back another record) rewrites it; the app must not take from it the folder of its own machine that it then
copies into the sandbox (its secret, other chats) or fills with the sandbox's files, nor limits it never set.

Driven through the real `e2b` SDK against the loopback stand-in (tests/executor/e2b_standin.py): the attacker's
part is the sandbox's root writing the record file, as the stand-in keeps it."""
from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("e2b")

from agents.executor.backend import SandboxLimits, SandboxSpec, WorkspaceSpec
from agents.executor.e2b.backend import E2BBackend
from agents.executor.e2b.session import RECORD, E2BSession
from agents.executor.errors import SandboxError
from agents.executor.holds import MemoryHolds
from agents.executor.remote.host import spec_to_json
from tests.executor.e2b_standin import E2BStandIn

ECHO = "python3 -m agents.executor.e2b.relay cat"  # a stand-in supervisor: the attach path needs only its stream
READY = {"op": "ready", "layers": [], "warnings": []}


@pytest.fixture
def standin():
    service = E2BStandIn()
    yield service
    service.close()


def honest_sandbox(standin: E2BStandIn, workspace: Path) -> E2BSession:
    """A sandbox as the app leaves it: its supervisor running, its record written by the app (`E2BHost`)."""
    session = E2BSession.create(standin.settings(command=ECHO), session_name=str(workspace))
    session.start_supervisor()
    spec = SandboxSpec(workspace=WorkspaceSpec(str(workspace)))
    session.save_record({"spec": spec_to_json(spec), "workspace": str(workspace), "ready": READY})
    return session


def app_folder(tmp_path: Path) -> Path:
    """A folder of the app's machine the sandbox must never reach: the data folder's signing secret."""
    folder = tmp_path / "app-data"
    folder.mkdir()
    (folder / "secret").write_bytes(b"the server's signing secret")
    return folder


def rewrite(standin: E2BStandIn, session: E2BSession, change) -> None:  # type: ignore[no-untyped-def]
    """The sandbox's root rewrites the record (as the stand-in keeps it)."""
    path = standin.sandboxes[session.id].local(RECORD)
    with open(path, "rb") as handle:
        kept = json.load(handle)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(change(kept), handle)


def sandbox_files(standin: E2BStandIn, session: E2BSession) -> set[str]:
    root = standin.sandboxes[session.id].local(session.settings.workdir)
    return {os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names}


def hostile_record(kept: dict, folder: Path, signed: bool) -> dict:
    """The record naming `folder` as the workspace (and limits lifted): inside the sealed envelope with the app's
    seal kept (`signed`), or as a plain record like the ones the app wrote before it sealed them."""
    sealed = isinstance(kept.get("record"), str)
    body = json.loads(kept["record"]) if sealed else dict(kept)
    body["workspace"] = str(folder)
    body["spec"] = {**body["spec"], "limits": {**body["spec"]["limits"], "max_file_size_mb": 10**9,
                                               "max_disk_mb": 10**9}}
    return {**kept, "record": json.dumps(body, separators=(",", ":"), sort_keys=True)} if signed and sealed \
        else body


@pytest.mark.parametrize("signed", [True, False], ids=["signature-kept", "plain-record"])
def test_a_rewritten_record_neither_reads_nor_fills_a_folder_of_the_apps_machine(standin, tmp_path, signed):
    honest = tmp_path / "chat-workspace"
    honest.mkdir()
    folder = app_folder(tmp_path)
    session = honest_sandbox(standin, honest)
    rewrite(standin, session, lambda kept: hostile_record(kept, folder, signed))
    host = None
    try:
        with pytest.raises(SandboxError, match="record"):
            host = E2BBackend(standin.settings(command=ECHO)).attach(session.id)
    finally:
        if host is not None:  # the attack got through: what it reached is what the asserts below say
            host.close()
        assert "secret" not in sandbox_files(standin, session), "the app copied its own secret into the sandbox"
        assert sorted(os.listdir(folder)) == ["secret"]
        session.close()


def test_a_record_of_another_sandbox_is_refused(standin, tmp_path):
    """A record is bound to its sandbox: one copied from another sandbox (another chat's) does not verify."""
    first = honest_sandbox(standin, tmp_path / "first")
    second = honest_sandbox(standin, tmp_path / "second")
    try:
        with open(standin.sandboxes[first.id].local(RECORD), "rb") as handle:
            theirs = handle.read()
        with open(standin.sandboxes[second.id].local(RECORD), "wb") as handle:
            handle.write(theirs)
        with pytest.raises(SandboxError, match="record"):
            E2BBackend(standin.settings(command=ECHO)).attach(second.id)
    finally:
        first.close()
        second.close()


def test_an_attach_given_the_replicas_own_workspace_uses_it_not_the_records(standin, tmp_path):
    """Another replica keeps the chat's files in its own folder: the caller names it, the record's path (another
    machine's) is not used, and the record's limits are the ones the app wrote."""
    session = honest_sandbox(standin, tmp_path / "replica-a")
    mine = tmp_path / "replica-b"
    mine.mkdir()
    (mine / "upload.csv").write_bytes(b"a,b\n1,2\n")
    host = E2BBackend(standin.settings(command=ECHO)).attach(session.id, workspace=WorkspaceSpec(str(mine)))
    try:
        assert host.spec.workspace is not None and host.spec.workspace.path == str(mine)
        assert host.spec.limits == SandboxLimits()
        assert "upload.csv" in sandbox_files(standin, session)
        assert not (tmp_path / "replica-a").exists() or not os.listdir(tmp_path / "replica-a")
    finally:
        host.close()


def test_a_live_sandbox_is_not_handed_to_another_workspace(standin, tmp_path):
    """In the process that holds it, a sandbox id named with another chat's folder (a chat whose record names
    someone else's sandbox) gets neither that sandbox's variables nor its files."""
    session = honest_sandbox(standin, tmp_path / "theirs")
    backend = E2BBackend(standin.settings(command=ECHO))
    theirs = backend.attach(session.id, workspace=WorkspaceSpec(str(tmp_path / "theirs")))
    try:
        assert backend.attach(session.id, workspace=WorkspaceSpec(str(tmp_path / "theirs"))) is theirs
        (tmp_path / "mine").mkdir()
        with pytest.raises(SandboxError, match="another workspace"):
            backend.attach(session.id, workspace=WorkspaceSpec(str(tmp_path / "mine")))
    finally:
        theirs.close()


WORKER_ATTACK = r'''
import os
out = {}
def attempt(name, fn):
    try:
        out[name] = "ok: " + repr(fn())[:80]
    except BaseException as exc:
        out[name] = "blocked: " + type(exc).__name__
def read():
    with open("/root/.agentdeck/host.json", "rb") as fh:
        return fh.read(64)
def replace():
    with open("/root/.agentdeck/host.json", "w") as fh:
        fh.write('{"record": "{}", "mac": "x"}')
def plant():
    with open("/root/.agentdeck/host.json.new", "w") as fh:
        fh.write("{}")
    os.rename("/root/.agentdeck/host.json.new", "/root/.agentdeck/host.json")
attempt("read", read)
attempt("replace", replace)
attempt("plant-and-rename", plant)
attempt("unlink", lambda: os.unlink("/root/.agentdeck/host.json"))
attempt("listdir", lambda: os.listdir("/root/.agentdeck"))
attempt("chmod", lambda: os.chmod("/root/.agentdeck", 0o777))
out
'''


@pytest.mark.docker
def test_worker_code_holding_the_real_os_cannot_read_or_replace_the_record(tmp_path):
    """The worker (uid 1000 with the real `os`: python_layers=False) in a container of the sandbox image, the
    record's folder mounted where E2B's envd keeps it: it can neither read, replace, plant, remove nor open up the
    record, and another backend reattaches with the record the app wrote."""
    from agents.executor import PythonSandbox
    from agents.executor.docker import daemon
    from tests.executor import e2b_standin_docker as standin_docker
    from tests.executor.e2b_standin_docker import DockerRunner

    why_not = daemon.reachable()
    if why_not is not None:
        pytest.skip(f"no Docker Engine: {why_not}")

    class RootMounted(DockerRunner):
        """The stand-in's container with the record's folder mounted where E2B's envd keeps it (root's, open to
        read as envd makes folders). Only that folder: the image keeps this machine's paths (maybe under /root)."""

        def start(self, sandbox, argv, env, cwd):  # type: ignore[no-untyped-def]
            os.makedirs(sandbox.local("/root/.agentdeck"), exist_ok=True)
            os.chmod(sandbox.local("/root/.agentdeck"), 0o755)
            volume = f"{sandbox.local('/root/.agentdeck')}:/root/.agentdeck"

            class Mounting:  # the runner module's `subprocess`, its `docker run` given the extra volume
                def __getattr__(self, name):  # type: ignore[no-untyped-def]
                    return getattr(subprocess, name)

                @staticmethod
                def Popen(command, *args, **kwargs):  # type: ignore[no-untyped-def]
                    if "run" in command:
                        at = command.index("-w")
                        command = [*command[:at], "-v", volume, *command[at:]]
                    return subprocess.Popen(command, *args, **kwargs)

            standin_docker.subprocess = Mounting()  # type: ignore[assignment]
            try:
                return super().start(sandbox, argv, env, cwd)
            finally:
                standin_docker.subprocess = subprocess

    service = E2BStandIn(runner=RootMounted())
    try:
        sb = PythonSandbox(workdir=str(tmp_path / "ws"), backend=E2BBackend(service.settings()), timeout_s=30,
                           python_layers=False)
        try:
            result = sb.run(WORKER_ATTACK)
            got = result.output
            assert isinstance(got, dict) and set(got) == {"read", "replace", "plant-and-rename", "unlink",
                                                          "listdir", "chmod"}, (result.error, got)
            assert all(value.startswith("blocked") for value in got.values()), got
            # Another replica's backend; its own lease store: the record is what is tried here, not the hold
            host = E2BBackend(service.settings(), holds=MemoryHolds()).attach(
                sb.host.id, workspace=WorkspaceSpec(str(tmp_path / "ws")))
            try:
                assert host.ready is not None and host.ready["op"] == "ready"
            finally:
                host.close()
        finally:
            sb.close()
        # The same with the kernel layers off: the file is there and readable (the attack above can fail); its
        # user id alone still keeps it from being changed.
        bare = PythonSandbox(workdir=str(tmp_path / "ws2"), backend=E2BBackend(service.settings()), timeout_s=30,
                             python_layers=False, use_landlock=False, private_root=False)
        try:
            got = bare.run(WORKER_ATTACK).output
            assert got["read"].startswith("ok") and got["listdir"].startswith("ok"), got
            assert all(got[name].startswith("blocked") for name in ("replace", "plant-and-rename", "unlink")), got
            # chmod "succeeds" under seccomp, which makes metadata changes no-ops: the folder is as it was.
            folder = service.sandboxes[bare.host.id].local("/root/.agentdeck")
            assert stat.S_IMODE(os.stat(folder).st_mode) == 0o755, got
            E2BBackend(service.settings(), holds=MemoryHolds()).attach(
                bare.host.id, workspace=WorkspaceSpec(str(tmp_path / "ws2"))).close()
        finally:
            bare.close()
    finally:
        service.close()
