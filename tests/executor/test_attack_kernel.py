"""The kernel is the boundary: attacks from code that already bypassed every Python-level layer.

The sandboxes here run with ``python_layers=False``: no syntax-tree guard, the real builtins, no audit
hook, so the code holds the real ``os`` and ``ctypes`` as a full bypass would. Every attack runs from
the worker's main thread and again from a thread the code starts (threads created after confinement
inherit it; a thread older than confinement cannot exist, see ``test_preconfinement_thread_refused``).
Each attempt reports what happened, and the test also checks from outside that nothing changed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import uuid

import pytest

from agents.executor import PythonSandbox
from agents.executor.errors import SandboxStartError
from agents.executor.local import worker_watch
from agents.executor.local.process import APP_ROOT
from tests.waiting import wait_until

# Each test runs once per usable sandbox backend (conftest.py: sandbox_backend).
pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.usefixtures("sandbox_backend")]

ATTACK = r'''
import os, sys, ctypes, json, socket, signal, threading, errno
P = json.loads(PARAMS)
out = {}

def attempt(name, fn):
    try:
        res = fn()
        out[name] = "SUCCEEDED: " + repr(res)[:200]
    except BaseException as exc:
        out[name] = "blocked: " + type(exc).__name__

def read(path):
    with open(path, "rb") as fh:
        return fh.read(64)

def write_new(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"import os; os.system('touch /tmp/pwned')\n")
    os.close(fd)
    return path

def run_all(tag):
    for key, path in P["read"].items():
        attempt(f"{tag}:read:{key}", lambda p=path: read(p))
        attempt(f"{tag}:stat:{key}", lambda p=path: tuple(os.stat(p))[:3])
    attempt(f"{tag}:listdir:/proc", lambda: os.listdir("/proc"))
    attempt(f"{tag}:read:/proc/1/environ", lambda: read("/proc/1/environ"))
    attempt(f"{tag}:read:app-environ", lambda: read(f"/proc/{P['app_pid']}/environ"))
    for key, folder in P["write_dirs"].items():
        attempt(f"{tag}:create:{key}", lambda d=folder: write_new(os.path.join(d, P["marker"] + tag)))
    for key, path in P["meta"].items():
        attempt(f"{tag}:chmod:{key}", lambda p=path: os.chmod(p, 0o777))
        attempt(f"{tag}:chown:{key}", lambda p=path: os.chown(p, os.getuid(), os.getgid()))
        attempt(f"{tag}:utime:{key}", lambda p=path: os.utime(p, (1, 1)))
        attempt(f"{tag}:setxattr:{key}", lambda p=path: os.setxattr(p, b"user.pwned", b"1"))
    attempt(f"{tag}:chmod:parent-of-workspace", lambda: os.chmod(os.path.realpath(".."), 0o777))
    def fchmod_library():
        fd = os.open(P["library_file"], os.O_RDONLY)
        try:
            os.fchmod(fd, 0o777)
        finally:
            os.close(fd)
    attempt(f"{tag}:fchmod:library-file", fchmod_library)
    def link_out():
        os.symlink(P["read"]["secret"], "link-" + tag)
        return read("link-" + tag)
    attempt(f"{tag}:symlink-read:secret", link_out)
    attempt(f"{tag}:hardlink:library-file", lambda: os.link(P["library_file"], "hard-" + tag))
    attempt(f"{tag}:rename-out",
            lambda: os.rename(write_new("mv-" + tag), os.path.join(P["write_dirs"]["parent"], "mv-" + tag)))
    attempt(f"{tag}:fork", lambda: os.fork())
    attempt(f"{tag}:posix_spawn", lambda: os.posix_spawn("/bin/sh", ["sh", "-c", "true"], {}))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def raw_execve():
        r = libc.syscall(59, b"/bin/sh", None, None)
        if r < 0:
            raise OSError(ctypes.get_errno(), "execve")
        return r
    attempt(f"{tag}:execve-syscall", raw_execve)
    attempt(f"{tag}:socket-inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    def raw_socket():
        fd = libc.socket(2, 1, 0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "socket")
        r = libc.connect(fd, P["sockaddr"], 16)
        if r < 0:
            raise OSError(ctypes.get_errno(), "connect")
        return fd
    attempt(f"{tag}:socket-connect-ctypes", raw_socket)
    attempt(f"{tag}:kill-app", lambda: os.kill(P["app_pid"], 0))
    attempt(f"{tag}:kill-init", lambda: os.kill(1, 0))
    def ptrace_app():
        r = libc.ptrace(16, P["app_pid"], None, None)
        if r != 0:
            raise OSError(ctypes.get_errno(), "ptrace")
        return r
    attempt(f"{tag}:ptrace-app", ptrace_app)
    attempt(f"{tag}:setuid-0", lambda: os.setuid(0))
    def raise_memory_limit():
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    attempt(f"{tag}:raise-memory-limit", raise_memory_limit)
    def unshare_ns():
        r = libc.unshare(0x00020000 | 0x10000000)
        if r != 0:
            raise OSError(ctypes.get_errno(), "unshare")
    attempt(f"{tag}:unshare", unshare_ns)

run_all("main")
t = threading.Thread(target=run_all, args=("thread",))
t.start()
t.join()
json.dumps(out)
'''


@pytest.fixture(scope="module")
def arena(sandbox_backend, tmp_path_factory):
    """Targets outside the workspace, a loopback listener, and a sandbox with no Python-level layers."""
    base = tmp_path_factory.mktemp("arena")
    workspace = base / "ws"
    workspace.mkdir()
    other = base / "other-session"
    other.mkdir()
    (other / "chat.json").write_text("another user's saved chat")
    secret = base / "secret"
    secret.write_text("signing-secret-value")
    library_dir = os.path.dirname(os.path.dirname(json.__file__))  # the standard library
    site_packages = os.path.dirname(os.path.dirname(pytest.__file__))
    library_file = json.__file__
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    sockaddr = (2).to_bytes(2, "little") + port.to_bytes(2, "big") + bytes([127, 0, 0, 1]) + bytes(8)
    marker = f"agentdeck-attack-{uuid.uuid4().hex[:8]}-"
    params = {
        "read": {"secret": str(secret), "other-workspace": str(other / "chat.json"),
                 "app-file": os.path.join(APP_ROOT, "app.py"), "etc-shadow": "/etc/shadow",
                 "root-home": os.path.expanduser("~/.bashrc")},
        "write_dirs": {"parent": str(base), "other-workspace": str(other), "site-packages": site_packages,
                       "stdlib": library_dir, "app": APP_ROOT, "tmp": "/tmp"},
        "meta": {"secret": str(secret), "other-workspace": str(other / "chat.json"), "library": library_file,
                 "app-file": os.path.join(APP_ROOT, "app.py")},
        "library_file": library_file, "app_pid": os.getpid(), "marker": marker,
        "sockaddr": list(sockaddr),
    }
    params_code = f"PARAMS = {json.dumps(json.dumps(params))}\n"
    params_code += "P_SOCK = None\n"
    sb = PythonSandbox(str(workspace), authorized_imports=["*"], timeout_s=30, python_layers=False)
    before = {p: os.stat(p) for p in params["meta"].values()}
    before[str(base)] = os.stat(base)
    yield {"sb": sb, "params": params, "code": params_code + ATTACK.replace('P["sockaddr"]', 'bytes(P["sockaddr"])'),
           "listener": listener, "before": before, "base": base}
    sb.close()
    listener.close()

def test_python_layers_are_really_off(arena):
    """The premise: this code holds the real os and ctypes and no audit hook stands in its way."""
    r = arena["sb"].run("import os, ctypes\n(os.getpid() > 0, ctypes.sizeof(ctypes.c_int), type(os).__name__)")
    assert r.error is None, r.error
    assert r.output == [True, 4, "module"]
    assert arena["sb"].security_report()["python_layers"]["active"] is False

def test_every_kernel_promise_holds_on_every_thread(arena):
    r = arena["sb"].run(arena["code"])
    assert r.error is None, r.error
    outcomes = json.loads(r.output)
    assert any(k.startswith("thread:") for k in outcomes) and any(k.startswith("main:") for k in outcomes)
    breaches = {k: v for k, v in outcomes.items() if not v.startswith("blocked")}
    assert not breaches, breaches
    # From outside: nothing was created, changed or contacted.
    for folder in arena["params"]["write_dirs"].values():
        planted = [n for n in os.listdir(folder) if n.startswith(arena["params"]["marker"])]
        for name in planted:
            os.unlink(os.path.join(folder, name))
        assert not planted, (folder, planted)
    assert not os.path.exists(os.path.join(str(arena["base"]), "mv-main"))
    for path, old in arena["before"].items():
        new = os.stat(path)
        assert (new.st_mode, new.st_uid, new.st_gid, new.st_mtime_ns) == (
            old.st_mode, old.st_uid, old.st_gid, old.st_mtime_ns), path
    with pytest.raises(OSError):
        arena["listener"].accept()

def test_worker_has_no_identity_or_capability_to_abuse(arena):
    code = (
        "import os, ctypes\n"
        "hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)\n"
        "data = (ctypes.c_uint32 * 6)()\n"
        "ctypes.CDLL(None).capget(hdr, data)\n"
        "(os.getuid(), os.geteuid(), list(data), os.getgroups(), os.getgid())"
    )
    r = arena["sb"].run(code)
    assert r.error is None, r.error
    uid, euid, caps, groups, gid = r.output
    # No supplementary group but, on the Docker backend, its own primary group (the engine always lists it).
    assert caps == [0] * 6 and set(groups) <= {gid}
    if os.geteuid() == 0:
        assert uid == euid != 0 and gid != 0  # ids of its own, not the app's root

def test_nothing_outside_exists_in_the_worker_view(arena):
    """stat() answers for nothing outside: the app, other sessions, /proc and /etc are not in the view."""
    if not arena["sb"].security_report()["filesystem_view"]["active"]:
        pytest.skip("no private file system view on this machine (needs root or user namespaces)")
    paths = [arena["params"]["read"]["secret"], arena["params"]["read"]["other-workspace"],
             os.path.join(APP_ROOT, "app.py"), os.path.join(APP_ROOT, "agents"),
             "/proc/self", "/etc/passwd", str(arena["base"] / "other-session")]
    r = arena["sb"].run(f"import os\n[os.path.lexists(p) for p in {paths!r}]")
    assert r.error is None, r.error
    assert r.output == [False] * len(paths)

def test_site_packages_cannot_be_planted_even_as_the_app_user(arena):
    """The .pth attack: nothing the worker can do puts a file where the next interpreter would run it."""
    site = arena["params"]["write_dirs"]["site-packages"]
    r = arena["sb"].run(f"open({os.path.join(site, 'zz-agentdeck.pth')!r}, 'w').write('import os')")
    assert r.error is not None
    assert not os.path.exists(os.path.join(site, "zz-agentdeck.pth"))

def test_worker_interpreter_runs_no_pth_files(arena):
    r = arena["sb"].run("import sys\n(sys.flags.no_site, 'site' in sys.modules)")
    assert r.output == [1, False]

def test_ipc_memfd_and_pid_probes_are_refused(arena):
    code = (
        "import os, ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "out = {}\n"
        "out['shmget'] = libc.shmget(1234, ctypes.c_size_t(1 << 20), 0o1000 | 0o666)\n"
        "out['msgget'] = libc.msgget(1234, 0o1000 | 0o666)\n"
        "out['semget'] = libc.semget(1234, 1, 0o1000 | 0o666)\n"
        "try:\n    os.memfd_create('m'); out['memfd'] = 'made'\nexcept OSError: out['memfd'] = -1\n"
        f"try:\n    os.getsid({os.getpid()}); out['getsid'] = 'seen'\nexcept OSError: out['getsid'] = -1\n"
        f"out['pidfd_open'] = libc.syscall(434, {os.getpid()}, 0)\n"
        "out"
    )
    r = arena["sb"].run(code)
    assert r.error is None, r.error
    assert all(v == -1 for v in r.output.values()), r.output

def test_nothing_can_wake_a_frozen_worker(arena):
    """SIGSTOP between steps holds only if nothing can send the worker SIGCONT on its own: no POSIX timer,
    no owner or chosen signal for I/O, lease or directory notices."""
    code = (
        "import os, ctypes, fcntl\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "out = {}\n"
        "tid = ctypes.c_void_p()\n"
        "out['timer_create'] = libc.timer_create(1, None, ctypes.byref(tid))\n"
        "r, w = os.pipe()\n"
        "for name, command, arg in (('F_SETOWN', 8, os.getpid()), ('F_SETSIG', 10, 18), ('F_SETOWN_EX', 15, 0),\n"
        "                           ('F_SETLEASE', 1024, 0), ('F_NOTIFY', 1026, 0)):\n"
        "    out[name] = libc.fcntl(r, command, arg)\n"
        "pid = ctypes.c_int(os.getpid())\n"
        "out['FIOSETOWN'] = libc.ioctl(r, 0x8901, ctypes.byref(pid))\n"
        "out['SIOCSPGRP'] = libc.ioctl(r, 0x8902, ctypes.byref(pid))\n"
        "on = ctypes.c_int(1)\n"
        "out['FIOASYNC'] = libc.ioctl(r, 0x5452, ctypes.byref(on))\n"
        "out['F_GETFL still works'] = 0 if fcntl.fcntl(r, fcntl.F_GETFL) >= 0 else 'broken'\n"
        "out"
    )
    r = arena["sb"].run(code)
    assert r.error is None, r.error
    ordinary = r.output.pop("F_GETFL still works")
    assert ordinary == 0 and all(v == -1 for v in r.output.values()), r.output

@pytest.mark.app_side_worker("its pid is signalled from here; test_remote_supervisor.py reads it remotely")
def test_no_parent_death_signal_and_a_woken_worker_is_replaced(tmp_path):
    """PR_SET_PDEATHSIG fires when the *thread* that started the worker ends: refused. Should anything else
    wake a frozen worker, the next step finds it running and replaces it."""
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        r = sb.run("import ctypes\nctypes.CDLL(None, use_errno=True).prctl(1, 18, 0, 0, 0)")
        assert r.output == -1, r
        sb.run("stamp = 1")
        worker = sb._worker
        wait_until(lambda: worker_watch.is_stopped(worker.pid), 10, "the worker to be stopped")
        worker.process.frozen_at -= 1.0  # as if stopped a second ago: the settle window is for a stop still landing
        os.kill(worker.pid, signal.SIGCONT)  # a wake-up from outside the app's own thaw
        r = sb.run("'stamp' in dir()")
        assert r.state_lost and r.output is False and "woke the sandbox up" in (r.error or "") + str(r.logs), r

def test_open_files_cannot_be_parked_out_of_sight_and_no_cross_process_probes(arena):
    code = (
        "import os, socket, array, ctypes, fcntl, json\n"
        "out = {}\n"
        "a, b = socket.socketpair()\n"
        "fd = os.open('parked.bin', os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "try:\n"
        "    a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])\n"
        "    out['sendmsg'] = 'sent'\n"
        "except OSError: out['sendmsg'] = -1\n"
        "a.send(b'plain sends still work'); out['send'] = 0 if b.recv(64) else 'broken'\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "header = (ctypes.c_uint32 * 2)(0x20080522, 1)\n"
        "data = (ctypes.c_uint32 * 6)()\n"
        "out['capget(1)'] = libc.capget(header, data)\n"
        f"lib = open({json.__file__!r}, 'rb')\n"
        "try:\n    fcntl.flock(lib, fcntl.LOCK_EX | fcntl.LOCK_NB); out['flock'] = 'locked'\n"
        "except OSError: out['flock'] = -1\n"
        "os.close(fd); os.unlink('parked.bin')\n"
        "out"
    )
    r = arena["sb"].run(code)
    assert r.error is None, r.error
    assert r.output.pop("send") == 0 and all(v == -1 for v in r.output.values()), r.output

@pytest.mark.app_side_worker("it patches the app's copy of local/process.py; the supervisor runs its own")
def test_preconfinement_thread_refused(tmp_path, monkeypatch):
    """A worker whose libraries started threads before confinement refuses to start."""
    import agents.executor.local.process as process

    monkeypatch.setattr(process, "SINGLE_THREAD_ENV", {})
    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS starts no pool on one core")
    with pytest.raises(SandboxStartError, match="threads before confinement"):
        with PythonSandbox(str(tmp_path), authorized_imports=["numpy", "pandas"]) as sb:
            sb.run("1")

@pytest.mark.app_side_worker("its pid is looked up here; test_remote_supervisor.py reads it remotely")
def test_no_process_of_the_sandbox_survives_close(tmp_path):
    sb = PythonSandbox(str(tmp_path))
    sb.run("1")
    pid = sb._worker.pid
    sb.close()
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"

def test_ordinary_analysis_code_still_works(tmp_path):
    data = tmp_path / "ws"
    data.mkdir()
    (data / "in.csv").write_text("a,b\n1,2\n3,4\n")
    libs = ["pandas", "numpy", "matplotlib", "seaborn", "scipy", "openpyxl", "jinja2", "shutil"]
    with PythonSandbox(str(data), authorized_imports=libs) as sb:
        code = (
            "import pandas as pd, numpy as np, shutil, jinja2, scipy.stats, seaborn as sns\n"
            "import matplotlib.pyplot as plt\n"
            "df = pd.read_csv('in.csv')\n"
            "html = df.style.to_html()\n"
            "t = jinja2.Template('{{ n }} rows').render(n=len(df))\n"
            "shutil.copy('in.csv', 'copy.csv')\n"
            "df.to_excel('out.xlsx')\n"
            "back = pd.read_excel('out.xlsx')\n"
            "sns.barplot(x=df['a'], y=df['b'])\n"
            "plt.savefig('chart.png')\n"
            "r = scipy.stats.pearsonr(df['a'], df['b'])\n"
            "(len(html) > 100, t, len(back), round(float(r[0]), 3))"
        )
        r = sb.run(code)
        assert r.error is None, r.error
        assert r.output == [True, "2 rows", 2, 1.0]
        assert (data / "copy.csv").read_text() == "a,b\n1,2\n3,4\n"
        assert {a.path for a in r.artifacts} >= {"copy.csv", "out.xlsx", "chart.png"}

def test_uploads_from_the_app_become_writable_by_the_code(tmp_path):
    with PythonSandbox(str(tmp_path)) as sb:
        sb.run("1")
        (tmp_path / "upload.csv").write_text("x\n1\n")  # written by the app (root here) after start-up
        os.chmod(tmp_path / "upload.csv", 0o644)
        r = sb.run("open('upload.csv', 'a').write('2\\n')\nopen('upload.csv').read()")
        assert r.error is None, r.error
        assert r.output == "x\n1\n2\n"

def test_pyarrow_pool_reserves_nothing(tmp_path):
    with PythonSandbox(str(tmp_path), authorized_imports=["pandas"]) as sb:
        r = sb.run("import pandas as pd\ns = pd.Series(['a', 'b'] * 1000, dtype='string[pyarrow]')\n"
                   "int(s.str.len().sum())")
        assert r.error is None, r.error
        assert r.output == 2000

def test_a_planted_matplotlibrc_is_not_read_by_the_next_worker(tmp_path):
    with PythonSandbox(str(tmp_path), authorized_imports=["matplotlib"]) as sb:
        sb.run("open('matplotlibrc', 'w').write('figure.dpi: 3000\\n')")
        sb.reset()
        r = sb.run("import matplotlib\nmatplotlib.rcParams['figure.dpi']")
        assert r.output != 3000

def test_read_roots_never_hold_the_workspace(tmp_path, monkeypatch):
    """A folder on sys.path that contains the workspaces must not become a read root (neighbours exposed)."""
    from agents.executor.confinement import ConfinementConfig, read_roots

    ws = tmp_path / "sessions" / "ws"
    ws.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = ConfinementConfig(workdir=str(ws), tmpdir=str(tmp_path / "t"), app_root="/nonexistent",
                            memory_limit_mb=100, max_file_size_mb=1, max_open_files=10)
    assert all(not str(ws).startswith(root.rstrip("/") + "/") for root in read_roots(cfg))
