"""Folder listings kept from one walk of a tree to the next, reused while the kernel says the folder is unchanged.

Why: after every step the app walks the workspace and the sandbox's private temp folder (the run's files, the disk
limits). Listing one folder cost eight system calls (Python's scandir on a descriptor: dup, fstat, two fcntl, two
getdents, lseek, close) and most of a tiny step's walk, while back-to-back steps mostly leave every folder as it
was. Only the names are reused: every entry is still stat'ed on every walk (sizes, blocks, links, a file grown
through a descriptor opened in an earlier step), so what a walk counts is what a full listing would count.

Why a folder's ctime can be trusted: adding, removing or renaming an entry marks the folder's ctime for update
(POSIX: creat, link, unlink, rename, mkdir, rmdir, symlink and mknod all do), and no call sets a ctime to a chosen
value (utimensat sets mtime and makes ctime now). The walk has just fstat'ed the folder it opened (by descriptor,
no link followed), so a listing taken when the folder's (device, inode, ctime) read X is the folder's entries for as
long as it reads X, provided no later change can be stamped X as well: file timestamps come from a coarse clock,
and some file systems keep whole seconds. So a listing is kept only when X lies well before the walk began
(SETTLE_FINE_NS, or SETTLE_SECONDS_NS for a ctime of whole seconds: any change after that is stamped later than
X); a folder changed lately is listed again on every walk until it settles. The clock is the app's to trust: the
sandbox's code can neither set it nor choose a ctime.
A file system that may not keep the rule locally (network, FUSE, anything not in `TRUSTED_FS`) is always listed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

#: How far before a walk's start a folder's ctime must lie for its listing to be kept: more than the coarse clock's
#: lag behind real time (a tick: 1-10 ms) plus the file system's timestamp granularity. A ctime with a fraction of
#: a second is from a file system that keeps nanoseconds (ext4's large inodes, xfs, btrfs, tmpfs); one of whole
#: seconds may be from one that keeps only seconds (ext2/3's small inodes), and must be older by more than that.
SETTLE_FINE_NS = 50_000_000
SETTLE_SECONDS_NS = 2_000_000_000
#: Local file systems that update a folder's ctime on every change of its entries.
TRUSTED_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs"})
MOUNTINFO = "/proc/self/mountinfo"

_Key = tuple[int, int]  # (device, inode) of a folder
_Kept = tuple[int, tuple[str, ...]]  # its ctime when listed, and the names


def filesystem_type(device: int, mountinfo: str = MOUNTINFO) -> str | None:
    """The type of the file system mounted from `device` (as /proc/self/mountinfo names it), None if not found."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 2 and fields[2] == wanted and " - " in line:
                    return line.split(" - ", 1)[1].split()[0]
    except OSError:
        return None
    return None


class FolderListings:
    """The listings of one tree's folders (a workspace, a temp folder), by folder (device, inode).

    Used by one walk at a time or several (the page's file listing while a run's snapshot walks): each walk
    starts from the listings kept so far and leaves the ones it met; every listing kept is valid on its own."""

    def __init__(self, fs_type: Callable[[int], str | None] = filesystem_type) -> None:
        self._kept: dict[_Key, _Kept] = {}
        self._trusted: dict[int, bool] = {}
        self._fs_type = fs_type
        self.reused = 0  # listings reused so far (tests and figures)
        self.listed = 0  # folders listed so far

    def walk(self) -> ListingsWalk:
        """What one walk reads and keeps; `ListingsWalk.finish` when it ends."""
        return ListingsWalk(self, time.time_ns())

    def trusted(self, device: int) -> bool:
        known = self._trusted.get(device)
        if known is None:
            known = self._trusted[device] = self._fs_type(device) in TRUSTED_FS
        return known


class ListingsWalk:
    """One walk's use of `FolderListings`: `names(st)` for a folder it opened, `keep(st, names)` after listing one."""

    def __init__(self, listings: FolderListings, started_ns: int) -> None:
        self._listings = listings
        self._old = listings._kept
        self._new: dict[_Key, _Kept] = {}
        self._started = started_ns  # the real-time clock before the walk's first fstat

    def names(self, st: os.stat_result) -> tuple[str, ...] | None:
        """The kept names of the folder whose fstat is `st`, if it still reads the ctime they were listed at."""
        key = (st.st_dev, st.st_ino)
        kept = self._old.get(key)
        if kept is None or kept[0] != st.st_ctime_ns:
            return None
        self._new[key] = kept
        self._listings.reused += 1
        return kept[1]

    def keep(self, st: os.stat_result, names: list[str]) -> None:
        """Keep a listing just taken of the folder whose fstat (before the listing) is `st`, if it has settled."""
        self._listings.listed += 1
        ctime = st.st_ctime_ns
        settle = SETTLE_SECONDS_NS if ctime % 1_000_000_000 == 0 else SETTLE_FINE_NS
        if ctime < self._started - settle and self._listings.trusted(st.st_dev):
            self._new[(st.st_dev, st.st_ino)] = (ctime, tuple(names))

    def finish(self) -> None:
        """The listings this walk met (reused or new) replace the kept ones: a folder gone is forgotten."""
        self._listings._kept = self._new
