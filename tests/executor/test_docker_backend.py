"""The Docker backend on a real Docker Engine (the private one of `make docker-up` in CI).

Skipped with the reason when no engine answers; under CI (CI=true) a missing engine fails instead, so the
backend is never silently untested there. One image build per session (the backend caches its tag) and few
container starts: every start costs seconds.
"""

from __future__ import annotations

import os
import signal

import pytest

from agents.executor import PythonSandbox, backends
from agents.executor.docker import daemon
from agents.executor.docker import host as docker_host
from agents.executor.docker.backend import DockerBackend
from agents.executor.docker.container import _alive
from agents.executor.errors import SandboxStartError
from agents.executor.local.process import APP_ROOT
from tests.waiting import wait_until

WHY_NOT = daemon.reachable()
if WHY_NOT is not None and os.environ.get("CI"):
    raise RuntimeError(f"CI must reach a Docker Engine for the Docker backend's tests: {WHY_NOT}")
needs_engine = pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")


@pytest.fixture(scope="module")
def backend():
    be = backends.get("docker")
    be.client_and_image()  # the image: assembled and imported once (a minute at most), reused by every start
    return be


def make(tmp_path, backend, **kwargs) -> PythonSandbox:
    kwargs.setdefault("authorized_imports", ["numpy"])
    kwargs.setdefault("timeout_s", 10)
    return PythonSandbox(str(tmp_path / "ws"), backend=backend, **kwargs)


def container_of(sb: PythonSandbox):
    return sb.host.process.container


def process_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()[0].decode()


def engine_has(backend, *ids: str) -> set[str]:
    """Which of these containers the engine still has (stopped ones included)."""
    client, _ = backend.client_and_image()
    return {c.id for c in client.containers.list(all=True, filters={"label": "agentdeck.sandbox"})} & set(ids)


def test_no_engine_gives_a_message_naming_the_settings(monkeypatch, tmp_path):
    """Without an engine the backend is unavailable, and the reason says which settings choose one."""
    from agents.host_settings import HostSettings

    monkeypatch.setattr("agents.host_settings._current", HostSettings(docker_host=f"unix://{tmp_path}/no-such.sock"))
    why = DockerBackend().unavailable_reason()
    assert why is not None and "AGENTDECK_DOCKER_HOST" in why and "make docker-up" in why
    assert "AGENTDECK_SANDBOX=local" in why
    with pytest.raises(SandboxStartError, match="AGENTDECK_DOCKER_HOST.*AGENTDECK_SANDBOX=local"):
        PythonSandbox(str(tmp_path / "ws"), backend=DockerBackend())  # a start is refused the same way


@pytest.mark.docker
@needs_engine
def test_container_holds_the_limits_and_the_worker_its_layers(tmp_path, backend):
    """One container per sandbox with Docker's isolation on top of every kernel layer of the worker; tool calls
    reach the app over the channel, files land in the workspace, and the worker is stopped between steps."""
    sb = make(tmp_path, backend, authorized_imports=["numpy", "matplotlib"], memory_limit_mb=256)
    try:
        sb.register_tools({"add": lambda a, b: a + b})
        result = sb.run("import numpy as np\nx = np.arange(4)\nprint('hello')\nadd(int(x.sum()), 1)")
        assert (result.error, result.output, result.logs.strip()) == (None, 7, "hello")
        assert sb.run("x.tolist()").output == [0, 1, 2, 3]  # state persists between steps
        drawn = sb.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('plot.png')")
        assert drawn.error is None and [a.path for a in drawn.artifacts] == ["plot.png"]
        assert (tmp_path / "ws" / "plot.png").read_bytes()[:4] == b"\x89PNG"
        report = sb.security_report()
        for layer in ("container", "filesystem_view", "landlock", "seccomp", "identity", "rlimits",
                      "freeze_between_steps", "thread_check", "cpu_time", "disk_limit"):
            assert report[layer]["active"], (layer, report[layer])
        attrs = container_of(sb).attrs
        cfg, hc = attrs["Config"], attrs["HostConfig"]
        assert hc["NetworkMode"] == "none" and hc["ReadonlyRootfs"] is True
        assert hc["CapDrop"] == ["ALL"] and "no-new-privileges" in hc["SecurityOpt"]
        assert hc["PidsLimit"] == docker_host.MAX_TASKS and hc["NanoCpus"] > 0
        assert hc["Memory"] == hc["MemorySwap"] == (256 + docker_host.BASELINE_MB) * 1024 * 1024
        assert not cfg["User"].startswith("0:") and cfg["User"] != "0"
        pid, first = sb.host.pid, container_of(sb).id
        # Stopped (SIGSTOP from this host) while the app does not wait for it: the signal is taken when the
        # process is next scheduled, before it returns to any code of its own.
        wait_until(lambda: process_state(pid) == "T", timeout=10, what="the worker stopped between steps")
    finally:
        sb.close()
    assert engine_has(backend, first) == set()


@pytest.mark.docker
@needs_engine
def test_code_holding_the_real_os_finds_no_network_host_or_root(tmp_path, backend):
    """An attacker with the real os and socket modules (python_layers=False) inside the container."""
    sb = make(tmp_path, backend, python_layers=False)
    try:
        probe = sb.run(
            "import os, socket\n"
            # The app's folder itself may exist as a bare parent of a virtual environment inside it (a fresh
            # clone's .venv); its own files must not.
            f"app = {APP_ROOT!r}\n"
            "out = {'uid': os.getuid(), 'seen': [p for p in ('/etc', '/proc', '/var', '/sys', app + '/app.py', "
            "app + '/ui', app + '/agents', app + '/README.md') if os.path.exists(p)]}\n"
            "for name, fn in [('socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),\n"
            "                 ('proc', lambda: open('/proc/1/status').read()),\n"
            "                 ('passwd', lambda: open('/etc/passwd').read()),\n"
            "                 ('setuid', lambda: os.setuid(0))]:\n"
            "    try:\n"
            "        fn(); out[name] = 'ALLOWED'\n"
            "    except BaseException as exc:\n"
            "        out[name] = type(exc).__name__\n"
            "out")
        assert probe.error is None, probe.error
        out = probe.output
        assert out["uid"] != 0
        assert all(out[k] != "ALLOWED" for k in ("socket", "proc", "passwd", "setuid")), out
        assert out["seen"] == []  # the private view: neither the container's folders nor the app's exist
    finally:
        sb.close()


@pytest.mark.docker
@needs_engine
def test_interrupt_reaches_the_container_and_keeps_the_variables(tmp_path, backend):
    sb = make(tmp_path, backend, timeout_s=1)
    try:
        sb.run("kept = 41")
        result = sb.run("while True:\n    pass")
        assert result.error_type == "TimeoutError" and "timeout_s" in result.error  # SIGINT from this host
        assert not result.state_lost
        assert sb.run("kept + 1").output == 42
    finally:
        sb.close()


@pytest.mark.docker
@needs_engine
def test_killed_container_tells_the_agent_its_variables_are_gone(tmp_path, backend):
    """A container killed between steps (by an operator or the engine): the next step says the state is lost and
    why, and runs in a fresh container; the dead one is removed."""
    sb = make(tmp_path, backend)
    try:
        sb.run("kept = 1")
        dead = container_of(sb)
        dead.kill()
        wait_until(lambda: not os.path.exists(f"/proc/{dead.attrs['State']['Pid']}"), what="the container's end")
        result = sb.run("kept")
        assert result.state_lost
        text = f"{result.error}"
        assert "SIGKILL" in text or "killed" in text, text
        assert "NameError" in sb.run("kept").error  # a fresh container: nothing of the old one
        fresh = container_of(sb).id
        assert fresh != dead.id and engine_has(backend, dead.id) == set()  # the dead one removed at the restart
    finally:
        sb.close()
    assert engine_has(backend, fresh) == set()


@pytest.mark.docker
@needs_engine
def test_out_of_memory_in_the_cgroup_is_named(tmp_path, backend, monkeypatch):
    """The container's memory cgroup is the last word on memory: with no allowance above `memory_limit_mb` a
    computation that stays under the worker's address-space limit is killed by it, and the step says so."""
    monkeypatch.setattr(docker_host, "BASELINE_MB", 0)
    sb = make(tmp_path, backend, memory_limit_mb=200)
    try:
        result = sb.run("import numpy as np\nbig = np.ones(190 * 1024 * 1024 // 8)\nbig.sum()")
        assert result.state_lost, (result.error, result.output)
        assert "memory" in (result.error or ""), result.error
    finally:
        sb.close()


@pytest.mark.docker
@pytest.mark.slow
@needs_engine
def test_engine_that_dies_mid_session(tmp_path, backend):
    """The private engine is killed while a sandbox's step runs: the sandbox keeps working (its process and channel
    do not need the engine), a new one is refused naming the engine's address, closing leaves no process or folder,
    the container's record is removed once an engine answers again, and the restarted engine keeps the other
    sandboxes' containers running."""
    if daemon.docker_host() != "unix://" + daemon.private_socket() or daemon._pid() is None:
        pytest.skip("needs the private engine of `make docker-up` (this test kills it)")
    bystander = make(tmp_path / "bystander", backend)
    bystander.run("mine = 'still here'")
    sb = make(tmp_path, backend)
    try:
        sb.register_tools({"kill_engine": lambda: os.kill(daemon._pid(), signal.SIGKILL)})
        sb.run("kept = 5")
        pid, container_id = sb.host.pid, container_of(sb).id
        tmpdir, private = sb.host.tmpdir, sb.host._private
        mid_run = sb.run("kill_engine()\nkept * 2")  # the engine dies while the step runs
        assert (mid_run.error, mid_run.output) == (None, 10)
        wait_until(lambda: daemon.reachable() is not None, what="the engine's end")
        assert sb.run("kept * 3").output == 15
        with pytest.raises(Exception, match="AGENTDECK_DOCKER_HOST|docker-up"):
            make(tmp_path / "second", backend)
        sb.close()
        wait_until(lambda: not _alive(pid), timeout=10, what="the container's process to end")
        assert not os.path.exists(tmpdir) and not os.path.exists(private)
        assert container_id in docker_host.unremoved
    finally:
        sb.close()
        daemon.up()  # the other tests' engine, with its images (kept in its data folder)
    try:
        assert engine_has(backend, container_id) == set() and not docker_host.unremoved
        # The restarted engine kept the other sandboxes running (--live-restore): their sessions go on.
        assert bystander.run("mine").output == "still here"
        assert engine_has(backend, container_of(bystander).id)
    finally:
        bystander.close()


@pytest.mark.docker
@pytest.mark.slow
@needs_engine
def test_containers_of_a_killed_app_are_removed_by_the_next(tmp_path, backend):
    """An app killed with a sandbox open leaves its container (stopped between steps, holding memory); the next
    app's first start removes it, and leaves alone the containers of apps still running (this one's)."""
    import subprocess
    import sys

    from agents.executor.docker.backend import sweep_orphans

    mine = make(tmp_path / "mine", backend)
    try:
        mine.run("1")
        _, tag = backend.client_and_image()
        script = ("import os, signal, sys\nfrom agents.executor import PythonSandbox\n"
                  f"from agents.host_settings import configure_host\nconfigure_host(docker_image={tag!r})\n"
                  f"sb = PythonSandbox({str(tmp_path / 'killed')!r}, backend='docker')\n"
                  "sb.run('1')\nprint(sb.host.process.container.id, flush=True)\n"
                  "os.kill(os.getpid(), signal.SIGKILL)\n")
        env = dict(os.environ, PYTHONPATH=str(APP_ROOT))
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                             cwd=str(tmp_path))
        assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
        orphan = out.stdout.strip()
        client, _ = backend.client_and_image()
        assert orphan in {c.id for c in client.containers.list(all=True)}
        assert sweep_orphans(client) >= 1
        left = {c.id for c in client.containers.list(all=True)}
        assert orphan not in left and container_of(mine).id in left
        assert mine.run("2").output == 2
    finally:
        mine.close()


@pytest.mark.docker
@needs_engine
def test_a_missing_image_is_named(tmp_path, monkeypatch):
    """A start that cannot happen says which setting to change (checked before any folder or container exists)."""
    from agents.host_settings import HostSettings

    monkeypatch.setattr("agents.host_settings._current", HostSettings(docker_image="agentdeck-sandbox:no-such-build"))
    with pytest.raises(SandboxStartError, match="AGENTDECK_DOCKER_IMAGE=agentdeck-sandbox:no-such-build"):
        PythonSandbox(str(tmp_path / "ws"), backend=DockerBackend())


def _slot_mounts() -> list[str]:
    with open("/proc/self/mountinfo") as fh:
        return [line.split()[4] for line in fh if "agentdeck-slot-" in line]


def _preloaded(host) -> bool:
    """A pooled container's worker has loaded numpy and sleeps waiting for its session, unconfined (no `ready`)."""
    pid = host.process.pid
    try:
        with open(f"/proc/{pid}/maps") as fh:
            maps = fh.read()
    except OSError:
        return False
    return host.ready is None and "numpy" in maps and process_state(pid) == "S"


@pytest.mark.docker
@pytest.mark.slow
@needs_engine
def test_warm_container_gets_the_sessions_workspace_and_nothing_else(tmp_path, backend):
    """A session takes a pooled container whose worker preloaded numpy before any session was known; its workspace
    is bound in at `assign`: the app's file is there, the code's file lands in the app's folder, nothing of the
    previous session is, every layer is active; closing leaves no container, mount or slot folder."""
    import time

    from agents.executor.backend import SandboxSpec
    from agents.executor.pool import WarmPool

    assert backend.capabilities.warm_start  # the tests run as root, like the app here
    pool = WarmPool(backend, size=1)
    first = second = None
    spec = SandboxSpec(workspace=None)
    try:
        first = make(tmp_path / "a", backend, pool=pool)  # none ready yet: a cold start, which asks for a warm one
        spec = first.spec  # the pool's key: everything but the workspace, tools and environment
        assert first.run("secret_of_a = 42\nopen('a.txt', 'w').write('a')").error is None
        wait_until(lambda: pool.ready_hosts(spec) and _preloaded(pool.ready_hosts(spec)[0]), 120,
                   "a pooled container to preload numpy")
        pooled = pool.ready_hosts(spec)[0]
        slot_path = pooled._slot.path
        (tmp_path / "b" / "ws").mkdir(parents=True)
        (tmp_path / "b" / "ws" / "from_app.txt").write_text("the app's file")
        started = time.monotonic()
        second = make(tmp_path / "b", backend, pool=pool)
        r = second.run("import glob\nopen('by_code.txt', 'w').write('the code')\n"
                       "['secret_of_a' in dir(), open('from_app.txt').read(), sorted(glob.glob('*'))]")
        print(f"warm Docker start to the first result: {time.monotonic() - started:.3f} s")
        assert r.error is None, r.error
        assert second.host is pooled  # the path taken: the pooled, preloaded container
        assert r.output == [False, "the app's file", ["by_code.txt", "from_app.txt"]]
        assert (tmp_path / "b" / "ws" / "by_code.txt").read_text() == "the code"
        assert not (tmp_path / "a" / "ws" / "by_code.txt").exists()
        assert all(info["active"] for info in second.security_report().values()), second.security_report()
        assert slot_path in _slot_mounts()
        container_id = container_of(second).id
        second.close()
        assert slot_path not in _slot_mounts() and not os.path.exists(slot_path)
        assert not engine_has(backend, container_id)
        assert (tmp_path / "b" / "ws" / "by_code.txt").exists()  # the session's files stay the app's
    finally:
        for sb in (first, second):
            if sb is not None:
                sb.close()
        wait_until(lambda: not pool._thread or pool.ready_hosts(spec), 120, "the pool's refill to settle")
        pool.close()
    assert not [p for p in _slot_mounts() if f"-{os.getpid()}-" in p]


@pytest.mark.docker
@needs_engine
def test_slots_of_a_killed_app_are_swept(tmp_path):
    """A killed app's slot (still a mount point) is detached and removed at the next start; a live app's stays."""
    import subprocess
    import tempfile

    from agents.executor.docker import slot

    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = tempfile.mkdtemp(prefix=f"{slot.PREFIX}{gone.pid}-")
    slot._mount(orphan, orphan, slot.MS_BIND)
    live = slot.WorkspaceSlot()
    try:
        assert orphan in _slot_mounts()
        assert slot.sweep() >= 1
        assert orphan not in _slot_mounts() and not os.path.exists(orphan)
        assert live.path in _slot_mounts()
    finally:
        live.release()
    assert live.path not in _slot_mounts() and not os.path.exists(live.path)
