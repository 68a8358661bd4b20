"""The kernel is the boundary, continued: probes of other processes, file-system watches and abstract socket
names, from code holding the real ``os`` and ``ctypes`` (``python_layers=False``, see test_attack_kernel.py)."""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid

import pytest

from agents.executor import PythonSandbox

# Each test runs once per usable sandbox backend (conftest.py: sandbox_backend).
pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.usefixtures("sandbox_backend")]


@pytest.fixture(scope="module")
def bare(sandbox_backend, tmp_path_factory):
    """A sandbox with no Python-level layers, as after a full bypass."""
    sb = PythonSandbox(str(tmp_path_factory.mktemp("bare")), authorized_imports=["*"], timeout_s=30,
                       python_layers=False)
    yield sb
    sb.close()

# Calls that take a pid or tid, as an attacker holding ctypes would make them (x86_64 numbers). Each line:
# name, then the arguments, where P stands for the probed pid and B for a writable 4 KiB buffer.
PID_PROBES = r'''
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
B = ctypes.create_string_buffer(4096)
b = ctypes.addressof(B)
def probe(P):
    futex_word = ctypes.c_uint32(P)
    iov = (ctypes.c_uint64 * 2)(b, 8)
    header = (ctypes.c_uint32 * 2)(0x20080522, P)
    clock = ctypes.c_int((~P << 3) | 2).value
    calls = {
        "get_robust_list": (274, P, b, b + 64), "migrate_pages": (256, P, 64, b, b + 64),
        "move_pages": (279, P, 1, b, None, b + 64, 0), "process_vm_readv": (310, P, iov, 1, iov, 1, 0),
        "pidfd_open": (434, P, 0), "sched_getaffinity": (204, P, 128, b), "sched_getparam": (143, P, b),
        "sched_getscheduler": (145, P), "sched_rr_get_interval": (148, P, b), "sched_getattr": (315, P, b, 56, 0),
        "sched_setscheduler": (144, P, 0, b), "sched_setaffinity": (203, P, 8, b), "getpgid": (121, P),
        "getsid": (124, P), "setpgid": (109, P, P), "getpriority": (140, 0, P), "setpriority": (141, 0, P, 10),
        "ioprio_get": (252, 1, P), "ioprio_set": (251, 1, P, 0), "kill": (62, P, 0), "tkill": (200, P, 0),
        "tgkill": (234, P, P, 0), "rt_sigqueueinfo": (129, P, 0, b), "rt_tgsigqueueinfo": (297, P, P, 0, b),
        "prlimit64": (302, P, 7, None, b), "kcmp": (312, P, P, 0, 0, 0), "capget": (125, header, b),
        "waitid": (247, 1, P, b, 4 | 1, None), "wait4": (61, P, None, 1, None),
        "clock_gettime": (228, clock, b), "clock_getres": (229, clock, b),
        "futex_trylock_pi": (202, ctypes.byref(futex_word), 8 | 128, 0, None, None, 0),
        "perf_event_open": (298, b, P, -1, -1, 0), "prctl_set_ptracer": (157, 0x59616D61, P, 0, 0, 0),
        "ptrace_attach": (101, 16, P, None, None),
    }
    out = {}
    for name, (nr, *args) in calls.items():
        ctypes.set_errno(0)
        ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
        out[name] = [int(ret), ctypes.get_errno() if ret < 0 else 0]
    return out
json.dumps({"live": probe(LIVE), "dead": probe(DEAD)})
'''


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="system call numbers of x86_64")
def test_calls_naming_a_process_answer_the_same_whether_it_lives_or_not(bare):
    """A live pid is information (another session's worker, the app): every call that takes a pid must answer
    exactly as it does for a pid that names no process."""
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    code = f"LIVE, DEAD = {os.getpid()}, {gone.pid}\n" + PID_PROBES
    r = bare.run(code)
    assert r.error is None, r.error
    answers = json.loads(r.output)
    differing = {name: (answers["live"][name], answers["dead"][name]) for name in answers["live"]
                 if answers["live"][name] != answers["dead"][name]}
    assert not differing, differing
    assert all(ret < 0 for ret, _ in answers["live"].values()), answers["live"]


def test_no_file_system_watches(bare):
    """inotify or fanotify on the shared library folders would show which files other sessions open (the
    preview child, and the worker without a private view, could watch other workspaces too)."""
    library = os.path.dirname(json.__file__)
    code = ("import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "out = {'inotify_init1': libc.inotify_init1(0), 'fanotify_init': libc.fanotify_init(0, 0)}\n"
            "fd = libc.inotify_init1(0)\n"
            f"out['inotify_add_watch'] = libc.inotify_add_watch(fd if fd >= 0 else 0, {library.encode()!r}, 0x20)\n"
            "out")
    r = bare.run(code)
    assert r.error is None, r.error
    assert r.output == {"inotify_init1": -1, "fanotify_init": -1, "inotify_add_watch": -1}, r.output


def test_abstract_socket_names_cannot_be_taken_or_reached(bare):
    """socketpair() is the worker's only socket; naming an abstract address with it would squat a name the app
    or another session then cannot bind, or reach a socket outside."""
    name = f"agentdeck-squat-{uuid.uuid4().hex[:8]}"
    outside = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    outside.bind(("\0" + name + "-app").encode())
    outside.settimeout(0.2)
    try:
        code = ("import socket\nout = {}\n"
                "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                f"try:\n    a.bind(b'\\0{name}'); out['bind'] = 'bound'\nexcept OSError: out['bind'] = -1\n"
                f"try:\n    a.sendto(b'hi', b'\\0{name}-app'); out['sendto'] = 'sent'\n"
                "except OSError: out['sendto'] = -1\n"
                f"try:\n    b.connect(b'\\0{name}-app'); out['connect'] = 'connected'\n"
                "except OSError: out['connect'] = -1\n"
                "a.send(b'x'); out['send'] = 0 if b.recv(8) == b'x' else 'broken'\n"
                "out")
        r = bare.run(code)
        assert r.error is None, r.error
        assert r.output == {"bind": -1, "sendto": -1, "connect": -1, "send": 0}, r.output
        with pytest.raises(OSError):
            outside.recv(16)  # nothing reached the app's socket
        mine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mine.bind(("\0" + name).encode())  # the name is still free for the app
        mine.close()
    finally:
        outside.close()


def test_the_worker_has_abstract_socket_names_of_its_own(tmp_path):
    """The second layer under seccomp's refusal: the private view's network namespace gives the worker its own
    abstract UNIX names, so a name it binds (here with seccomp switched off) is no name the app or another
    session uses."""
    name = f"agentdeck-squat-{uuid.uuid4().hex[:8]}"
    with PythonSandbox(str(tmp_path), python_layers=False, use_seccomp=False) as sb:
        if not sb.security_report()["filesystem_view"]["active"]:
            pytest.skip("no private view (and so no network namespace) on this machine")
        r = sb.run(f"import socket\nheld = socket.socketpair()[0]\nheld.bind(b'\\0{name}')\n'bound'")
        assert r.output == "bound", r  # seccomp is off: the bind itself succeeds, in the worker's namespace
        mine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mine.bind(("\0" + name).encode())  # the app's own namespace still has the name free
        mine.close()
