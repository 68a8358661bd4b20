"""The app's own view of a worker, read from the kernel rather than from what the worker says.

Why: the worker runs hostile code and can lie on its channel. How many threads it has, how much
CPU it used and how much disk its files take are read here from ``/proc`` and the file system by
the app, so a step cannot hide a thread it left running, defeat the CPU limit from inside, or fill
the disk through its private temp folder.
"""

from __future__ import annotations

import os
import select
import stat
import time

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def task_count(pid: int) -> int:
    """Threads of the process (-1 when it cannot be read, e.g. the process is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return -1


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process used so far, all threads included."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return 0.0
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (IndexError, ValueError):
        return 0.0


def _task_ticks(pid: int) -> dict[int, tuple[str, int]]:
    out: dict[int, tuple[str, int]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        try:
            out[int(tid)] = (fields[0].decode(), int(fields[11]) + int(fields[12]))
        except (IndexError, ValueError):
            continue
    return out


# A parked thread (an idle pool of pyarrow or OpenBLAS) waits in futex(); anything else a thread left
# behind does (running, sleeping, reading a pipe such as the command channel) means code outlived its step.
_PARKED_SYSCALLS = {"x86_64": {202}, "amd64": {202}, "aarch64": {98}, "arm64": {98}}.get(
    os.uname().machine.lower(), set())


def unparked_threads(pid: int) -> int | None:
    """Threads besides the main one that are not parked in futex(); None if the kernel will not say."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    except OSError:
        return None
    count = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall", "rb") as fh:
                first = fh.read().split(b" ", 1)[0]
        except FileNotFoundError:
            continue  # ended meanwhile
        except OSError:
            return None
        if not first.lstrip(b"-").isdigit() or int(first) not in _PARKED_SYSCALLS:
            count += 1
    return count


def busy_threads(pid: int, sample_s: float) -> int:
    """Threads besides the main one that run or use CPU over ``sample_s`` (parked pool threads do not)."""
    first = _task_ticks(pid)
    if len(first) <= 1:
        return 0
    time.sleep(sample_s)
    second = _task_ticks(pid)
    busy = 0
    for tid, (state, ticks) in second.items():
        if tid == pid:
            continue
        before = first.get(tid)
        if state == "R" or before is None or ticks > before[1]:
            busy += 1
    return busy


def has_pending(fd: int) -> bool:
    """True if the worker wrote something the app did not ask for (checked between runs)."""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def usage(folder: str, max_entries: int = 50000) -> tuple[int, int]:
    """(files, bytes) of regular files below ``folder``, links never followed."""
    files = size = seen = 0
    stack = [folder]
    while stack and seen < max_entries:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
                elif stat.S_ISREG(st.st_mode):
                    files += 1
                    size += st.st_blocks * 512
    return files, size
