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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..tree_walk import TooManyEntries, TreeWalk, WalkError
from .proc_stat import ProcStat

# Read by callers and tests as the watch's (explicit re-exports).
from .server_disk import free_mb as free_mb
from .server_disk import server_disk_short as server_disk_short

if TYPE_CHECKING:
    from ..folder_listings import FolderListings
    from .process import WorkerProcess

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def task_count(pid: int) -> int:
    """Threads of the process (-1 when it cannot be read, e.g. the process is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return -1


_STATE, _UTIME, _STIME, _THREADS = 0, 11, 12, 17  # indexes in `_stat_fields` (fields 3, 14, 15 and 20 of stat)




def _stat_fields(pid: int, stat: ProcStat | None = None) -> list[bytes]:
    """/proc/<pid>/stat after the command name (field 3, the state, first); [] when it cannot be read.
    `stat`: the process's held descriptor, read instead of opening the file by path."""
    if stat is not None:
        return stat.fields()
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return []
    return data[data.rfind(b")") + 2:].split()


def cpu_seconds(pid: int, stat: ProcStat | None = None) -> float:
    """User plus system CPU time the process used so far, all threads included."""
    fields = _stat_fields(pid, stat)
    try:
        return (int(fields[_UTIME]) + int(fields[_STIME])) / _TICKS
    except (IndexError, ValueError):
        return 0.0


def thread_count(pid: int, stat: ProcStat | None = None) -> int:
    """Threads of the process as its stat says (-1 when it cannot be read); one read, no folder listing."""
    fields = _stat_fields(pid, stat)
    try:
        return int(fields[_THREADS])
    except (IndexError, ValueError):
        return -1


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


@dataclass
class DiskUse:
    files: int = 0  # every entry: files, folders, links, fifos (each takes an inode and room in its folder)
    bytes: int = 0  # allocated bytes, folders' own included
    complete: bool = True  # False: the walk could not finish (count as over any limit)
    why: str = ""  # why it could not
    too_many: bool = False  # it stopped at its entry cap


WALK_TRIES = 3  # a walk of a tree that changed under it (code running meanwhile) is tried again this often


def usage(folders: list[str], max_entries: int = 100_000, counted: dict[str, DiskUse] | None = None,
          listings: Mapping[str, FolderListings] | None = None) -> DiskUse:
    """Every entry below `folders` and the bytes it takes, at any depth, links never followed (tree_walk.py).
    `counted`: folders the caller has just walked completely itself (their count is taken as it is).
    `listings`: a folder's listings from earlier walks (folder_listings.py: every entry is still stat'ed).

    Fails closed: a walk that cannot finish (past `max_entries`, a folder it may not read, a tree still changing
    after WALK_TRIES) comes back `complete=False`, never as a smaller count."""
    use = DiskUse()
    for folder in folders:
        known = (counted or {}).get(folder)
        if known is not None and known.complete:
            use.files += known.files
            use.bytes += known.bytes
            if use.files > max_entries:
                use.complete, use.too_many, use.why = False, True, f"more than {max_entries:,} entries"
                return use
            continue
        for attempt in range(WALK_TRIES):
            part = DiskUse()
            walk = TreeWalk(folder, max_entries - use.files, listings=(listings or {}).get(folder))
            try:
                for entry in walk:
                    part.files += 1
                    part.bytes += entry.st.st_blocks * 512
            except WalkError as exc:
                if exc.changed and attempt + 1 < WALK_TRIES:
                    continue
                use.files += part.files
                use.bytes += part.bytes
                use.complete, use.why, use.too_many = False, str(exc), isinstance(exc, TooManyEntries)
                return use
            break
        use.files += part.files
        use.bytes += part.bytes
    return use


@dataclass
class HeldDeleted:
    """Files the process deleted but still holds (`held_deleted`): what they take, and how many could not be
    sized at all."""

    bytes: int = 0
    # Deleted files kept only mapped (no descriptor) on the sandbox's own file systems whose size the kernel would
    # not show (/proc/<pid>/map_files needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE): the limit fails closed.
    unsized: int = 0


#: Deleted mappings that are memory, not the sandbox's disk: shared anonymous memory, memfd, System V and POSIX
#: shared memory (bounded by the memory limit, not max_disk_mb). Only those off the sandbox's own file systems.
_MEMORY_MAPPINGS = ("/dev/zero ", "/memfd:", "/SYSV", "/dev/shm/")


def deleted_open_bytes(pid: int, mapped: bool = True, proc: ProcStat | None = None) -> int:
    """Bytes of files the process deleted but still holds, open or mapped into its memory (a mapping keeps a
    whole file alive after its descriptor is closed); invisible to a folder walk. Each file counted once.
    `proc`: the process's held descriptors: its fd folder is listed and read through them (no path lookups)."""
    return held_deleted(pid, mapped, proc).bytes


def held_deleted(pid: int, mapped: bool = True, proc: ProcStat | None = None,
                 devices: frozenset[int] = frozenset()) -> HeldDeleted:
    """`deleted_open_bytes`, plus how many deleted files kept only mapped could not be sized. A mapped file is
    sized through /proc/<pid>/map_files (a privileged read); where that is refused its mapped range is counted,
    and it is `unsized` when it lies on one of `devices` (the sandbox's folders' file systems) or is not plainly
    memory: the worker may have written far more than it mapped before it closed the file."""
    seen: dict[tuple[int, int], int] = {}

    def count(path: str, dir_fd: int | None = None) -> None:
        try:
            st = os.stat(path, dir_fd=dir_fd)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode):
            seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512

    fd_dir = proc.fd_dir if proc is not None and proc.fd_dir >= 0 else None
    try:
        fds = os.listdir(fd_dir if fd_dir is not None else f"/proc/{pid}/fd")
    except OSError:
        return HeldDeleted()
    for fd in fds:
        try:
            if fd_dir is not None:
                if os.readlink(fd, dir_fd=fd_dir).endswith(" (deleted)"):
                    count(fd, fd_dir)
            elif os.readlink(f"/proc/{pid}/fd/{fd}").endswith(" (deleted)"):
                count(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
    if not mapped:  # /proc/<pid>/maps costs about a millisecond to generate: the caller spaces these out
        return HeldDeleted(sum(seen.values()))
    try:
        with open(f"/proc/{pid}/maps") as fh:
            regions = [line.rstrip("\n").split(None, 5) for line in fh if line.rstrip().endswith(" (deleted)")]
    except OSError:
        regions = []
    unsized: set[tuple[int, int]] = set()
    for fields in regions:
        if len(fields) != 6 or fields[4] == "0":
            continue
        before = len(seen)
        count(f"/proc/{pid}/map_files/{fields[0]}")
        if len(seen) > before:
            continue
        # map_files refused (no CAP_SYS_ADMIN/CAP_CHECKPOINT_RESTORE): the device and inode the line names.
        try:
            major, minor = (int(x, 16) for x in fields[3].split(":"))
            key = (os.makedev(major, minor), int(fields[4]))
            start, end = (int(x, 16) for x in fields[0].split("-"))
        except ValueError:
            key, start, end = (-1, -1), 0, 0
        if key in seen and key not in unsized:
            continue  # still open too: sized through its descriptor
        seen[key] = seen.get(key, 0) + end - start  # at least the mapped range
        if key[0] in devices or not fields[5].startswith(_MEMORY_MAPPINGS):
            unsized.add(key)
    return HeldDeleted(sum(seen.values()), len(unsized))


def is_stopped(pid: int, stat: ProcStat | None = None) -> bool:
    """Whether the process is stopped (SIGSTOP), as the kernel reports it."""
    fields = _stat_fields(pid, stat)
    return bool(fields) and fields[_STATE] in (b"T", b"t")


def woke_up(pid: int, frozen_at: float, settle_s: float = 0.05, stat: ProcStat | None = None) -> bool:
    """A worker the app stopped is found running. SIGSTOP takes effect asynchronously: a worker stopped less
    than `settle_s` ago is not checked (it is about to be thawed anyway, and could not have done much); one
    stopped earlier must show as stopped now."""
    if time.monotonic() - frozen_at < settle_s:
        return False
    return not is_stopped(pid, stat)


def thread_left_running(worker: WorkerProcess, sample_s: float) -> bool:
    """Whether a thread besides the main one still runs, as the kernel sees it (pool threads park in futex).
    The count comes from the worker's stat (`worker.proc_stat`, one read); only a worker with more than one
    thread has its threads listed and looked at one by one. A count that cannot be read is not taken as one
    thread: the listing decides, as before."""
    if worker.dead:
        return False
    count = thread_count(worker.pid, getattr(worker, "proc_stat", None))
    if count == 1 or (count < 0 and task_count(worker.pid) <= 1):
        return False
    deadline = time.monotonic() + sample_s
    while True:  # a thread that is just ending gets a moment
        unparked = unparked_threads(worker.pid)
        if unparked is None:
            return busy_threads(worker.pid, sample_s) > 0
        if unparked == 0:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.002)


def end_of_run(worker: WorkerProcess, sample_s: float) -> tuple[bool, float]:
    """`thread_left_running`, then `cpu_seconds`: one read of the worker's stat gives both when it has one thread
    (a step's usual end; a read per figure cost a `pread` of /proc, about 8 us, each). A worker with more threads,
    or one whose count cannot be read, is sampled as `thread_left_running` does, and its CPU read after that."""
    if worker.dead:
        return False, 0.0
    stat = getattr(worker, "proc_stat", None)
    fields = _stat_fields(worker.pid, stat)
    try:
        if int(fields[_THREADS]) == 1:
            return False, (int(fields[_UTIME]) + int(fields[_STIME])) / _TICKS
    except (IndexError, ValueError):
        pass
    left = thread_left_running(worker, sample_s)
    return left, cpu_seconds(worker.pid, stat)


def disk_over(folders: list[str], pid: int | None, max_mb: int, max_files: int, mapped: bool = True,
              min_free_mb: int = 0, counted: dict[str, DiskUse] | None = None,
              proc: ProcStat | None = None, devices: frozenset[int] | None = None,
              listings: Mapping[str, FolderListings] | None = None) -> str | None:
    """Why the sandbox's files are over its limits (its folders, plus files its process deleted but holds
    open), or None. A walk cut short by its entry cap counts as over: the limit fails closed. `min_free_mb`:
    the space the file systems of `folders` must keep free (the server's disk is shared by every sandbox).
    `counted`: see `usage`; `proc`: see `deleted_open_bytes`; `devices`: the file systems of `folders` as the
    caller found them when it made them (else looked up now: `folder_devices`); `listings`: see `usage`."""
    short = server_disk_short(folders, min_free_mb)
    if short is not None:
        return short
    use = usage(folders, max_entries=max_files + 1, counted=counted, listings=listings)
    held = (held_deleted(pid, mapped, proc, folder_devices(folders) if devices is None else devices)
            if pid is not None else HeldDeleted())
    used = use.bytes + held.bytes
    if use.too_many or use.files > max_files:
        return (f"the sandbox holds more than {max_files:,} files and folders "
                "(max_disk_files; the app can raise it)")
    if not use.complete:
        return uncounted(use.why, max_files, max_mb)
    if held.unsized:
        return (f"the code keeps {held.unsized} deleted file(s) mapped into memory whose size cannot be read here "
                "(that needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, which the sandbox's supervisor lacks), so they "
                f"count as over the limit of {max_mb} MB (max_disk_mb); unmap a file before deleting it")
    if used > max_mb * 1024 * 1024:
        return (f"the sandbox's files take {used // (1024 * 1024)} MB, over the limit of {max_mb} MB "
                "(max_disk_mb; the app can raise it)")
    return None


def uncounted(why: str, max_files: int, max_mb: int) -> str:
    """Why the limits count as passed when the sandbox's files could not be counted (`why`): they fail closed."""
    return (f"the app could not count the sandbox's files ({why}), so they count as over the limits "
            f"(max_disk_files {max_files:,}, max_disk_mb {max_mb})")


def folder_devices(folders: list[str]) -> frozenset[int]:
    """The devices of the file systems holding `folders` (those that exist)."""
    out = set()
    for folder in folders:
        try:
            out.add(os.stat(folder).st_dev)
        except OSError:
            continue
    return frozenset(out)


def pss_bytes(pid: int) -> int | None:
    """The process's proportional set size (shared library pages split among the processes that map them), or
    None if it cannot be read (gone, or another user's without the right to read it)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
