"""The backend protocol around the sandbox: names and availability, the local host's workspace files (the code
in the worker is the attacker: it plants links), and warm starts (a pooled sandbox is handed out once)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from agents.executor import PythonSandbox, backends
from agents.executor.backend import FileTooLarge, SandboxBackend, SandboxHost, SandboxSpec, WorkspaceSpec
from agents.executor.pool import WarmPool
from tests.waiting import wait_until

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement")


def test_backends_by_name():
    assert "local" in backends.available()
    assert isinstance(backends.get("local"), SandboxBackend)
    with pytest.raises(backends.UnknownBackend, match="known: local"):
        backends.resolve("no-such-backend")
    with pytest.raises(TypeError):
        backends.resolve(42)  # type: ignore[arg-type]


def test_the_default_backend_is_a_parameter_never_the_environment(monkeypatch, tmp_path):
    """A library user's sandbox runs where the program says (`sandbox=`), else on `local`: the app's
    AGENTDECK_SANDBOX is the app's setting, passed by name (ui/agent_factory.py), never read here."""
    monkeypatch.setenv("AGENTDECK_SANDBOX", "no-such-backend")
    with pytest.raises(backends.UnknownBackend):
        PythonSandbox(str(tmp_path), backend="no-such-backend")
    with PythonSandbox(str(tmp_path)) as sb:
        assert sb.backend.name == "local" and isinstance(sb.host, SandboxHost)
        assert sb.run("1 + 1").output == 2


def test_workspace_files_never_follow_what_the_code_planted(tmp_path):
    """The worker owns the workspace: links in it (to a file outside, or a folder outside; planted here from the
    app's side, since this machine's Landlock already refuses the worker a link to outside, which another backend
    may not) make the app's file operations refuse, never read or write outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("app secret")
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False) as sb:
        r = sb.run("open('ok.txt', 'w').write('fine')\n'done'")
        assert r.output == "done", r.error
        os.symlink(secret, tmp_path / "ws" / "link.txt")
        os.symlink(outside, tmp_path / "ws" / "dir")
        host = sb.host
        assert host is not None
        assert host.get_file("ok.txt") == b"fine"
        for path in ("link.txt", "dir/secret.txt", "../outside/secret.txt", "/etc/passwd"):
            with pytest.raises(PermissionError):
                host.get_file(path)
        with pytest.raises(PermissionError):
            host.put_file("dir/secret.txt", b"overwritten")
        with pytest.raises(FileExistsError):  # an exclusive put (an upload) neither replaces nor follows it
            host.put_file("link.txt", b"upload", exclusive=True)
        assert os.path.islink(tmp_path / "ws" / "link.txt")
        host.put_file("link.txt", b"replaced")  # the link itself is replaced, its target untouched
        assert secret.read_text() == "app secret"
        assert not os.path.islink(tmp_path / "ws" / "link.txt")
        with pytest.raises(FileTooLarge):
            host.get_file("ok.txt", max_bytes=2)
        with pytest.raises(FileTooLarge):
            host.put_file("big.bin", b"x" * 10, max_bytes=5)
        assert "big.bin" not in host.list_files() and host.list_files()["ok.txt"].size == 4
        assert sb.run("open('link.txt').read()").output == "replaced"  # the worker may change what the app put


def _preloaded(pool: WarmPool, spec: SandboxSpec) -> bool:
    """A pooled worker is ready once it has loaded numpy and sleeps waiting for its session (read from /proc)."""
    hosts = pool._ready.get(next(iter(pool._templates)), []) if pool._templates else []
    for host in hosts:
        pid = host.process.pid
        try:
            maps = open(f"/proc/{pid}/maps").read()
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return "numpy" in maps and state == "S"
    return False


def test_warm_sandboxes_start_fast_and_are_never_shared(tmp_path):
    pool = WarmPool(backends.get("local"), size=1)
    imports = ["numpy", "pandas"]
    spec = SandboxSpec(workspace=None, authorized_imports=tuple(imports))
    try:
        first = PythonSandbox(str(tmp_path / "a"), authorized_imports=imports, pool=pool)  # cold: asks for a warm one
        first_host = first.host
        assert first.run("secret_of_a = 41 + 1\nopen('a.txt', 'w').write('a')").error is None
        wait_until(lambda: _preloaded(pool, spec), 60, "a warm sandbox to be ready")
        started = time.monotonic()
        second = PythonSandbox(str(tmp_path / "b"), authorized_imports=imports, pool=pool)
        r = second.run("import numpy\nimport glob\n['secret_of_a' in dir(), sorted(glob.glob('*'))]")
        elapsed = time.monotonic() - started
        assert r.error is None, r.error
        assert r.output == [False, []], r.output  # nothing of the other session: its variables nor its files
        assert elapsed < 0.5, elapsed
        assert second.host is not first_host
        assert all(info["active"] for name, info in second.security_report().items()
                   if name not in ("python_layers",)), second.security_report()
        first.close()
        assert first_host not in [h for hosts in pool._ready.values() for h in hosts]  # a used host never returns
        second.reset()  # a restart takes a fresh host, never one that ran code
        assert second.run("'secret_of_a' in dir()").output is False
        second.close()
    finally:
        pool.close()


def test_workspace_spec_defaults_are_the_sandbox_parameters():
    """SandboxLimits' fields are PythonSandbox's parameters of the same names (CodeAgent passes them through)."""
    import dataclasses
    import inspect

    from agents.executor.backend import SandboxLimits

    params = inspect.signature(PythonSandbox.__init__).parameters
    for f in dataclasses.fields(SandboxLimits):
        assert f.name in params and params[f.name].default == f.default, f.name
    assert WorkspaceSpec("x").extra_read_paths == ()


def test_an_agents_first_step_starts_from_the_pool_the_app_warmed(tmp_path):
    """The app warms the pool at start with its agents' arguments (ui/server.py): the agent's sandbox is the
    pooled one, so even the first session starts warm."""
    import dataclasses

    from agents import CodeAgent, ReplayModel
    from agents.executor import pool
    from agents.executor.backend import SandboxLimits
    from agents.loop.code_agent import BASE_IMPORTS

    limits = SandboxLimits(min_free_mb=0)
    CodeAgent.warm_up(["numpy"], 20.0, "local", limits)
    warm = pool.for_backend(backends.get("local"))
    spec = SandboxSpec(workspace=None, authorized_imports=tuple(sorted({*BASE_IMPORTS, "numpy"})),
                       limits=dataclasses.replace(limits, timeout_s=20.0))
    try:
        wait_until(lambda: warm.ready_hosts(spec), 60, "the pool to start a sandbox")
        pooled = warm.ready_hosts(spec)[0]
        agent = CodeAgent(model=ReplayModel([]), authorized_imports=["numpy"], workdir=tmp_path,
                          executor_timeout_s=20.0, sandbox="local", sandbox_limits=limits, sandbox_pool=True)
        try:
            assert agent.sandbox.host is pooled
            assert agent.sandbox.run("import numpy\nint(numpy.arange(4).sum())").output == 6
        finally:
            agent.close()
    finally:
        warm.close()


@pytest.mark.parametrize("name", backends.available())
def test_each_backend_reports_the_promises_it_cannot_hold(name, tmp_path):
    """The security report names every watch promise, active exactly when the backend's host can keep it."""
    promises = {"suspend": "freeze_between_steps", "thread_check": "thread_check", "cpu_time": "cpu_time",
                "disk_usage": "disk_limit"}
    with PythonSandbox(str(tmp_path), backend=name) as sb:
        report = sb.security_report()
        host = sb.host
        assert host is not None and report["backend"]["detail"].endswith(repr(name))
        for capability, key in promises.items():
            assert report[key]["active"] is getattr(host.capabilities, capability), (key, report[key])
            assert report[key]["detail"], key


def test_a_warm_sandbox_that_died_while_it_waited_is_replaced_by_a_cold_start(tmp_path):
    import signal

    pool = WarmPool(backends.get("local"), size=1)
    spec = SandboxSpec(workspace=None)
    try:
        pool.prewarm(spec)
        wait_until(lambda: pool.ready_hosts(spec), 60, "the pool to start a sandbox")
        dying = pool.ready_hosts(spec)[0]
        os.kill(dying.process.pid, signal.SIGKILL)
        wait_until(lambda: dying.process.proc.poll() is not None, 10, "the pooled worker to die")
        with PythonSandbox(str(tmp_path), pool=pool) as sb:
            assert sb.host is not dying
            assert sb.run("6 * 7").output == 42
    finally:
        pool.close()
