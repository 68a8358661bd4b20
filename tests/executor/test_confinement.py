"""The OS layers on their own, each applied in a throwaway Python process.

These bypass layers 1-3 entirely: a plain interpreter installs only seccomp or
only Landlock and then tries what sandboxed code would try.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PKG = os.path.join(os.path.dirname(__file__), "..", "..", "agents", "executor")
BOOT = f"import sys,types;p=types.ModuleType('sbx');p.__path__=[{os.path.abspath(PKG)!r}];sys.modules['sbx']=p\n"


def run_isolated(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-c", BOOT + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux only")
def test_seccomp_blocks_processes_and_sockets(tmp_path):
    marker = tmp_path / "child_ran"
    proc = run_isolated(f"""
        import os, socket, threading, errno
        from sbx import seccomp
        try:
            seccomp.install()
        except OSError as exc:
            print("UNAVAILABLE", exc); raise SystemExit(0)
        for name, fn in [("fork", os.fork),
                         ("exec", lambda: os.execv("/bin/true", ["true"])),
                         ("spawn", lambda: os.posix_spawn("/bin/true", ["true"], {{}})),
                         ("socket", lambda: socket.socket()),
                         ("kill parent", lambda: os.kill(os.getppid(), 0))]:
            try:
                if fn() == 0:
                    open({str(marker)!r}, "w").write("x"); os._exit(0)
                print("ALLOWED", name)
            except OSError as exc:
                print("BLOCKED", name, exc.errno)
        out = []
        t = threading.Thread(target=lambda: out.append(1)); t.start(); t.join()
        a, b = socket.socketpair()
        print("THREAD", out, "SOCKETPAIR ok")
    """)
    if "UNAVAILABLE" in proc.stdout:
        pytest.skip(proc.stdout)
    assert "ALLOWED" not in proc.stdout, proc.stdout + proc.stderr
    assert proc.stdout.count("BLOCKED") == 5
    assert "THREAD [1] SOCKETPAIR ok" in proc.stdout
    assert not marker.exists()


@pytest.mark.skipif(sys.platform != "linux", reason="Linux only")
def test_landlock_limits_files(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    proc = run_isolated(f"""
        import os
        from sbx import landlock
        if landlock.abi_version() < 1:
            print("UNAVAILABLE"); raise SystemExit(0)
        import sys
        landlock.restrict([os.path.dirname(os.__file__)], [{str(work)!r}])
        open({str(work / "ok.txt")!r}, "w").write("fine")
        for name, fn in [("read outside", lambda: open({str(outside)!r}).read()),
                         ("write outside", lambda: open({str(tmp_path / "new.txt")!r}, "w")),
                         ("etc", lambda: open("/etc/passwd").read()),
                         ("environ", lambda: open("/proc/self/environ").read()),
                         ("exec", lambda: os.execv(sys.executable, ["python"]))]:
            try:
                fn(); print("ALLOWED", name)
            except OSError as exc:
                print("BLOCKED", name)
    """)
    if "UNAVAILABLE" in proc.stdout:
        pytest.skip("no Landlock on this kernel")
    assert "ALLOWED" not in proc.stdout, proc.stdout + proc.stderr
    assert proc.stdout.count("BLOCKED") == 5, proc.stdout + proc.stderr
    assert (work / "ok.txt").read_text() == "fine"
    assert not (tmp_path / "new.txt").exists()
