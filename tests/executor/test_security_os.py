"""Layers 3-4: the worker process and OS confinement.

The "open" sandbox authorizes every import ("*"), so these attacks get past the
Python-level layers and must be stopped by the process boundary, Landlock,
seccomp, rlimits and the audit hook. Each test checks that the goal was not
reached: no file outside the workspace, no secret, no child process.
"""

from __future__ import annotations

import os
import sys
import uuid

import pytest


def test_layers_reported(sandbox):
    report = sandbox.security_report()
    for layer in ("ast_guard", "import_policy", "process", "rlimits", "audit_hook"):
        assert report[layer]["active"], report[layer]
    assert set(sandbox.active_layers) <= set(report)
    if sys.platform == "linux":
        assert "seccomp" in report and "landlock" in report


def test_missing_layer_is_logged(tmp_path, caplog):
    from agents.executor import PythonSandbox

    with caplog.at_level("WARNING", logger="agents.executor"):
        with PythonSandbox(workdir=str(tmp_path), use_landlock=False) as sb:
            assert not sb.security_report()["landlock"]["active"]
            r = sb.run("open('/etc/hostname').read()")
            assert r.error is not None  # the audit hook's fallback path check
    assert any("landlock" in rec.message and "NOT active" in rec.message for rec in caplog.records)


def test_env_secret_not_visible(open_sandbox, assert_no_secret):
    r = open_sandbox.run("import os\nsorted(os.environ)")
    assert "AGENTDECK_TEST_SECRET" not in r.output
    assert_no_secret(r)


READ_ATTEMPTS = {
    "etc passwd": "open('/etc/passwd').read()",
    "proc environ": "open('/proc/self/environ').read()",
    "parent environ": "import os\nopen(f'/proc/{os.getppid()}/environ').read()",
    "parent environ bytes": "import os\nopen(f'/proc/{os.getppid()}/environ', 'rb').read()",
    "numpy fromfile": "import numpy as np, os\nnp.fromfile(f'/proc/{os.getppid()}/environ', dtype='uint8').tobytes()",
    "pandas read_csv": "import pandas as pd\npd.read_csv('/etc/passwd', sep=':', header=None).to_string()",
    "app source": f"open({os.path.abspath(__file__)!r}).read()",
    "listdir etc": "import os\nos.listdir('/etc')",
    "listdir root home": "import os\nos.listdir('/root')",
}


@pytest.mark.parametrize("code", list(READ_ATTEMPTS.values()), ids=list(READ_ATTEMPTS))
def test_reads_outside_workspace_blocked(open_sandbox, landlock_active, assert_no_secret, code):
    if "fromfile" in code and not landlock_active:
        pytest.skip("C-level reads are only stopped by Landlock")
    r = open_sandbox.run(code)
    assert r.error is not None, f"read succeeded: {str(r.output)[:200]}"
    assert "root:" not in str(r.output)
    assert_no_secret(r)


def test_default_sandbox_cannot_read_etc(sandbox):
    r = sandbox.run("open('/etc/passwd').read()")
    # /etc does not exist in the worker's private root (or Landlock refuses it where that view is missing).
    assert r.error_type in ("FileNotFoundError", "PermissionError") and r.output is None


def test_writes_outside_workspace_blocked(open_sandbox, tmp_path_factory):
    other = tmp_path_factory.mktemp("other_session")
    target_tmp = f"/tmp/agentdeck-escape-{uuid.uuid4().hex}"
    attempts = [
        f"open({target_tmp!r}, 'w').write('x')",
        f"import pandas as pd\npd.DataFrame({{'a': [1]}}).to_csv({target_tmp!r})",
        f"import numpy as np\nnp.savetxt({target_tmp!r}, [1, 2])",
        f"import numpy as np\nnp.arange(3).tofile({target_tmp!r})",
        f"open({str(other / 'stolen.txt')!r}, 'w').write('x')",
        f"import os\nos.mkdir({str(other / 'dir')!r})",
        f"import pathlib\npathlib.Path({str(other / 'p.txt')!r}).write_text('x')",
        "import os\nos.symlink('/etc/passwd', 'link_to_passwd')",
    ]
    for code in attempts:
        r = open_sandbox.run(code)
        assert r.error is not None, code
    assert not os.path.exists(target_tmp)
    assert os.listdir(other) == []
    assert not os.path.lexists(os.path.join(open_sandbox.workdir, "link_to_passwd"))


def test_workspace_files_work(sandbox):
    r = sandbox.run(
        "import pandas as pd, pathlib, glob\n"
        "pathlib.Path('sub').mkdir(exist_ok=True)\n"
        "pd.DataFrame({'a': [1, 2]}).to_csv('sub/t.csv', index=False)\n"
        "with open('notes.txt', 'w') as f:\n    f.write('hi')\n"
        "(pd.read_csv('sub/t.csv').a.sum(), open('notes.txt').read(), sorted(glob.glob('*')) != [])"
    )
    assert r.error is None, r.error
    assert r.output[:2] == [3, "hi"]
    paths = {a.path for a in r.artifacts}
    assert {"sub/t.csv", "notes.txt"} <= paths


PROCESS_ATTEMPTS = {
    "os system": "import os\nos.system('touch {marker}')",
    "subprocess": "import subprocess\nsubprocess.run(['touch', '{marker}'])",
    "popen": "import os\nos.popen('touch {marker}').read()",
    "fork": "import os\npid = os.fork()\nif pid == 0:\n    open('{marker}', 'w').write('x')\n    os._exit(0)",
    "posix_spawn": "import os\nos.posix_spawn('/usr/bin/touch', ['touch', '{marker}'], {{}})",
    "execv": "import os\nos.execv('/usr/bin/touch', ['touch', '{marker}'])",
    "multiprocessing": "import multiprocessing as mp\np = mp.Process(target=print)\np.start()\np.join()\n"
                       "open('{marker}', 'w').write('x')",
    "pty": "import pty\npty.fork()",
    "ctypes fork": "import ctypes\nlibc = ctypes.CDLL(None)\nif libc.fork() == 0:\n    libc._exit(0)\n"
                   "open('{marker}', 'w')",
    "asyncio subprocess": "import asyncio\nasync def m():\n"
                          "    p = await asyncio.create_subprocess_exec('touch', '{marker}')\n"
                          "    await p.wait()\nasyncio.run(m())",
}


@pytest.mark.parametrize("code", list(PROCESS_ATTEMPTS.values()), ids=list(PROCESS_ATTEMPTS))
def test_no_new_processes(open_sandbox, tmp_path, code):
    marker = str(tmp_path / "spawned")
    r = open_sandbox.run(code.format(marker=marker))
    assert r.error is not None, r.logs
    assert not os.path.exists(marker)


def test_threads_still_work(open_sandbox):
    r = open_sandbox.run("import threading\nout = []\nt = threading.Thread(target=lambda: out.append(1))\n"
                         "t.start(); t.join()\nout")
    assert r.output == [1]


SOCKET_ATTEMPTS = {
    "tcp connect": "import socket\ns = socket.create_connection(('127.0.0.1', 22), timeout=1)",
    "tcp listen": "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()",
    "udp": "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('127.0.0.1', 9))",
    "urllib": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:1/', timeout=1)",
    "unix socket": "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/run/docker.sock')",
}


@pytest.mark.parametrize("code", list(SOCKET_ATTEMPTS.values()), ids=list(SOCKET_ATTEMPTS))
def test_no_sockets(open_sandbox, code):
    r = open_sandbox.run(code + "\nprint('CONNECTED')")
    assert r.error is not None
    assert "CONNECTED" not in r.logs


def test_cannot_signal_the_app(open_sandbox):
    r = open_sandbox.run("import os, signal\nos.kill(os.getppid(), signal.SIGTERM)")
    assert r.error is not None
    r = open_sandbox.run("import os, signal\nos.kill(-1, signal.SIGTERM)")
    assert r.error is not None


def test_cannot_raise_limits(open_sandbox):
    r = open_sandbox.run("import resource\nresource.setrlimit(resource.RLIMIT_AS, "
                         "(resource.RLIM_INFINITY, resource.RLIM_INFINITY))")
    assert r.error is not None


def test_worker_does_not_import_app_package(open_sandbox):
    r = open_sandbox.run("import sys\nsorted(m for m in sys.modules if m == 'agents' or m.startswith('agents.'))")
    assert r.output == []
