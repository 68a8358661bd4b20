"""The preview child with its parser replaced by an attacker's code (tests/ui/test_attack_preview.py).

Why: a visitor's file is parsed by native readers (pyarrow, openpyxl's XML, pypdf); a bug in one of them runs
the visitor's code in the child. This stands for that code: each "preview" tries what such code would try and
reports, as its preview text, which attempts worked.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from typing import Any

#: What to reach for (set by the test's boot line): a secret file, a path to write, the app's pid, a port; or a
#: "mode" that replaces the whole attack (see `other_attack`).
TARGETS: dict[str, Any] = {}
#: Every upload this child has read ("remember" mode: a reader bug that keeps what the next visitors send).
SEEN: list[str] = []


def spin() -> None:
    while True:
        pass


def other_attack(mode: str, path: str) -> tuple[str, str]:
    """`remember`: answer with every upload read so far and this child's pid, and keep burning CPU in a thread
    between files; `huge`: a preview far past what the parser ever makes; `kind`: a kind of file other than the
    upload's."""
    if mode == "remember":
        import threading

        SEEN.append(open(path).read())
        if len(SEEN) == 1:
            threading.Thread(target=spin, daemon=True).start()
        return "csv", json.dumps({"pid": os.getpid(), "seen": SEEN})
    if mode == "huge":
        return "csv", "x" * (20 * 1024 * 1024)
    return "pdf", "%PDF"


def kernel_facts(path: str) -> dict[str, Any]:
    """`kernel`: what the kernel lets this child be and do (its user, how many threads and files it may hold),
    whether calls naming a process tell the app's live pid from a dead one (x86_64 numbers), and whether it can
    watch a folder, stat outside its own or take an abstract socket name."""
    import ctypes
    import threading

    facts: dict[str, Any] = {"uid": os.getuid()}
    release, threads = threading.Event(), []
    try:
        for _ in range(300):
            thread = threading.Thread(target=release.wait)
            thread.start()
            threads.append(thread)
    except RuntimeError:
        pass
    facts["threads"] = len(threads)
    release.set()
    for thread in threads:
        thread.join()
    files = []
    try:
        for _ in range(1000):
            files.append(open(path, "rb"))  # held open on purpose
    except OSError:
        pass
    facts["open_files"] = len(files)
    for fh in files:
        fh.close()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(4096)
    b = ctypes.addressof(buf)

    def probe(pid: int) -> dict[str, str]:  # "result/errno" (no lists: the reply allows few brackets)
        word = ctypes.c_uint32(pid)
        calls = {"get_robust_list": (274, pid, b, b + 64), "migrate_pages": (256, pid, 64, b, b + 64),
                 "move_pages": (279, pid, 1, b, None, b + 64, 0), "getpgid": (121, pid), "getsid": (124, pid),
                 "sched_getaffinity": (204, pid, 128, b), "kill": (62, pid, 0), "prlimit64": (302, pid, 7, None, b),
                 "pidfd_open": (434, pid, 0), "getpriority": (140, 0, pid), "setpgid": (109, pid, pid),
                 "clock_gettime": (228, ctypes.c_int((~pid << 3) | 2).value, b),
                 "futex_trylock_pi": (202, ctypes.byref(word), 8 | 128, 0, None, None, 0)}
        out = {}
        for name, (nr, *args) in calls.items():
            ctypes.set_errno(0)
            ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
            out[name] = f"{int(ret)}/{ctypes.get_errno() if ret < 0 else 0}"
        return out

    if os.uname().machine == "x86_64":
        facts["live"], facts["dead"] = probe(TARGETS["app_pid"]), probe(TARGETS["dead_pid"])
    facts["inotify"] = libc.inotify_init1(0) >= 0
    facts["stat outside"] = "".join("1" if os.path.lexists(p) else "0" for p in TARGETS["outside"])
    pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        pair[0].bind(b"\0" + TARGETS["abstract"].encode())
        facts["abstract bind"] = True
    except OSError:
        facts["abstract bind"] = False
    return facts


def attack(path: str, original_name: str | None = None) -> tuple[str, str]:
    targets = TARGETS
    if targets.get("mode") == "kernel":
        return "csv", json.dumps(kernel_facts(path))
    if "mode" in targets:
        return other_attack(targets["mode"], path)
    worked: dict[str, str] = {}

    def attempt(what: str, action) -> None:
        try:
            worked[what] = str(action())[:200]
        except BaseException as exc:  # every failure is the expected outcome
            worked.pop(what, None)
            _ = exc

    attempt("read the upload", lambda: open(path).read())
    attempt("read a secret", lambda: open(targets["secret"]).read())
    attempt("list the secret's folder", lambda: os.listdir(os.path.dirname(targets["secret"])))
    attempt("read the app's environment", lambda: open(f"/proc/{os.getppid()}/environ", "rb").read())
    attempt("read /etc/passwd", lambda: open("/etc/passwd").read())
    attempt("write outside", lambda: open(targets["write"], "w").write("planted"))
    def changed(change, read) -> str:  # the effect, not the call's answer (a call may be made a no-op)
        before = read()
        change()
        if read() == before:
            raise PermissionError("unchanged")
        return "changed"

    secret = targets["secret"]
    attempt("change a file's mode", lambda: changed(lambda: os.chmod(secret, 0o666), lambda: os.stat(secret).st_mode))
    attempt("change a file's times",
            lambda: changed(lambda: os.utime(secret, (0, 0)), lambda: os.stat(secret).st_mtime_ns))
    attempt("signal the app", lambda: os.kill(targets["app_pid"], 0) or "sent")

    def connect() -> str:
        with socket.create_connection(("127.0.0.1", targets["port"]), timeout=2):
            return "connected"

    attempt("connect to the network", connect)
    attempt("start a program", lambda: subprocess.run(["/bin/true"], check=True))
    return "csv", json.dumps(worked)


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    from ui.uploads import parsing, preview_worker

    parsing.parse_preview = attack  # type: ignore[assignment]
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    preview_worker.main()


if __name__ == "__main__":
    main()
