"""Walking a tree the sandbox's code made: by directory descriptor, to any depth, with a few descriptors at most.

Why not paths: the worker builds these trees, and nothing stops it from nesting folders past the system's path
limit (4,096 characters) with `os.chdir` or `dir_fd`; a walk by path strings fails below that depth, and a walk
that skips what it cannot open counts a 1 GB subtree as nothing. Why not one descriptor per folder: 25,000 nested
folders then exhaust the app's descriptors, failing other requests' `open()`.

So every folder is opened from its parent by name (`O_NOFOLLOW`, never a path string) and only the folder being
listed is held open, with the few nearest the root (KEEP_OPEN); the names left in the folders above are kept as
lists, bounded by `max_entries`. Below those few the way back up is `..`, checked against the identity (device,
inode) the folder had on the way down: a folder the worker moved meanwhile stops the walk rather than leading it
somewhere else. Whatever goes wrong raises `WalkError`, which callers treat as "over the limit" or "could not
finish", never as "nothing there". An entry that vanished between its listing and its stat is skipped (it takes
no room any more).
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .folder_listings import FolderListings, ListingsWalk

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: The folders nearest the root keep their descriptor while the walk is below them (no `..` on the way back);
#: deeper ones are closed. So a walk holds at most KEEP_OPEN + 3 descriptors, whatever the tree.
KEEP_OPEN = 8


class WalkError(OSError):
    """The walk could not finish; the message says why. `changed`: the tree changed under it (worth a retry)."""

    def __init__(self, message: str, changed: bool = False) -> None:
        super().__init__(message)
        self.changed = changed


class TooManyEntries(WalkError):
    """The tree holds more entries than the walk may visit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} entries")


@dataclass
class Entry:
    """One thing in the tree. `dir_fd` is the open folder that holds it: valid until the walk moves on."""

    name: str
    st: os.stat_result
    dir_fd: int
    depth: int  # 0: directly in the root

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)


@dataclass
class _Level:
    ident: tuple[int, int]
    scan: Iterator[os.DirEntry[str]] | None  # the folder being listed now
    names: list[str] = field(default_factory=list)  # what is left of a folder above it, to stat by name
    fd: int | None = None  # kept open while a folder below is walked (the top KEEP_OPEN levels only)


def open_dir(name: str, dir_fd: int | None = None) -> int:
    """A folder's descriptor, opened without following a link (relative to `dir_fd` when given)."""
    return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


class TreeWalk:
    """Every entry below `root`, parents before children (iterate once). `skip()` during an entry that is a folder
    leaves it out; `on_leave(parent_fd, name)` runs when a folder's walk is done (e.g. to remove it).

    `max_entries`: past that many entries the walk raises WalkError (the caller's limit fails closed).
    `listings`: the tree's folder listings from earlier walks, reused for a folder the kernel says is unchanged
    (folder_listings.py); every entry is stat'ed all the same.
    """

    def __init__(self, root: str, max_entries: int, on_leave: Callable[[int, str], None] | None = None,
                 listings: FolderListings | None = None) -> None:
        self.root, self.max_entries, self.on_leave = root, max_entries, on_leave
        self.listings = listings
        self._listings: ListingsWalk | None = None
        self.seen = 0
        self._names: list[str] = []  # the folders from the root down to the one being listed
        self._names_length = 0  # len("/".join(self._names)) + 1 when there are any: kept, not summed per entry
        self._skip = False
        self._pending = 0  # names waiting in the lists of the folders above
        #: The root folder's fstat, taken as the walk opened it (None until then, or when there is no root).
        self.root_stat: os.stat_result | None = None

    @property
    def depth(self) -> int:
        """The depth of the entries of the folder being listed (during `on_leave`: of the folder just left)."""
        return len(self._names)

    def skip(self) -> None:
        self._skip = True

    def relpath(self, name: str) -> str:
        """`name`'s path relative to the root (its length grows with depth: callers bound it)."""
        return "/".join([*self._names, name])

    def relpath_length(self, name: str) -> int:
        return self._names_length + len(name)

    def __iter__(self) -> Iterator[Entry]:
        try:
            fd = open_dir(self.root)
        except FileNotFoundError:
            return  # no folder there: nothing in it takes room
        except OSError as exc:
            raise WalkError(f"could not open {self.root}: {exc.strerror}") from exc
        levels: list[_Level] = []
        self._listings = self.listings.walk() if self.listings is not None else None
        try:
            self.root_stat = os.fstat(fd)
            levels.append(self._level(fd, self.root_stat))
            while levels:
                level = levels[-1]
                found = self._next(level, fd)
                if found is None:
                    fd, left = self._leave(levels, fd)
                    if left is not None and self.on_leave is not None:
                        self.on_leave(fd, left)
                    continue
                name, st = found
                self.seen += 1
                if self.seen > self.max_entries:
                    raise TooManyEntries(self.max_entries)
                self._skip = False
                yield Entry(name, st, fd, len(levels) - 1)
                if stat.S_ISDIR(st.st_mode) and not self._skip:
                    fd = self._enter(levels, fd, name, st)
        except WalkError:
            raise
        except OSError as exc:
            raise WalkError(f"could not read the folder {self._shown()}: {exc.strerror or exc}") from exc
        finally:
            if self._listings is not None:
                self._listings.finish()
            for level in levels:
                _close_scan(level)
                if level.fd is not None and level.fd != fd:
                    os.close(level.fd)
            os.close(fd)

    # ----- steps --------------------------------------------------------------------------------------
    def _next(self, level: _Level, fd: int) -> tuple[str, os.stat_result] | None:
        """The next entry of the folder `fd` that still exists, or None when it has no more."""
        while True:
            if level.scan is not None:
                entry = next(level.scan, None)
                if entry is None:
                    _close_scan(level)
                    return None
                name = entry.name
            elif level.names:
                name = level.names.pop()
                self._pending -= 1
            else:
                return None
            try:
                return name, os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed meanwhile: it takes no room any more

    def _enter(self, levels: list[_Level], fd: int, name: str, st: os.stat_result) -> int:
        """Go down into the folder `name` of `fd`: returns its descriptor (the parent's is closed)."""
        level = levels[-1]
        if level.scan is not None:  # keep what is left of this folder as names: its listing holds a descriptor
            budget = self.max_entries - self.seen - self._pending
            for entry in level.scan:
                level.names.append(entry.name)
                if len(level.names) > budget:
                    raise TooManyEntries(self.max_entries)
            self._pending += len(level.names)
            level.names.reverse()
            _close_scan(level)
        try:
            child = open_dir(name, fd)
        except FileNotFoundError:
            return fd
        except OSError as exc:  # a link or a file in its place: changed; anything else (no permission): an error
            changed = exc.errno in (errno.ENOTDIR, errno.ELOOP)
            raise WalkError(f"could not open the folder {self._shown(name)} ({exc.strerror})", changed) from exc
        try:
            child_st = os.fstat(child)
            if _ident(child_st) != _ident(st):
                raise WalkError(f"the folder {self._shown(name)} was replaced during the walk", changed=True)
            levels.append(self._level(child, child_st))
        except BaseException:
            os.close(child)
            raise
        self._names.append(name)
        self._names_length += len(name) + 1
        if len(levels) <= KEEP_OPEN + 1:
            level.fd = fd
        else:
            os.close(fd)
        return child

    def _level(self, fd: int, st: os.stat_result) -> _Level:
        """The open folder `fd` (fstat `st`) to list: streamed without `listings`; with them, its names, reused
        when the folder is unchanged since they were kept, else listed now (within the entry budget)."""
        if self._listings is None:
            return _Level(_ident(st), os.scandir(fd))
        budget = self.max_entries - self.seen - self._pending
        kept = self._listings.names(st)
        if kept is None:
            names: list[str] = []
            with os.scandir(fd) as scan:
                for entry in scan:
                    names.append(entry.name)
                    if len(names) > budget:
                        raise TooManyEntries(self.max_entries)
            self._listings.keep(st, names)
        elif len(kept) > budget:
            raise TooManyEntries(self.max_entries)
        else:
            names = list(kept)
        names.reverse()  # popped from the end: the listing's order
        self._pending += len(names)
        return _Level(_ident(st), None, names)

    def _leave(self, levels: list[_Level], fd: int) -> tuple[int, str | None]:
        """Done with the folder `fd`: back up to its parent (checked to be the folder it came from); returns the
        parent's descriptor and the name of the folder left (None at the root)."""
        levels.pop()
        if not levels:
            return fd, None
        name = self._names.pop()
        self._names_length -= len(name) + 1
        if levels[-1].fd is not None:  # kept open on the way down
            parent, levels[-1].fd = levels[-1].fd, None
            os.close(fd)
            return parent, name
        parent = os.open("..", DIR_FLAGS, dir_fd=fd)
        try:
            if _ident(os.fstat(parent)) != levels[-1].ident:
                raise WalkError(f"the folder {self._shown(name)} was moved during the walk", changed=True)
        except BaseException:
            os.close(parent)
            raise
        os.close(fd)
        return parent, name

    def _shown(self, name: str = "") -> str:
        """Where the walk is, for a message: the start and end of a path that may be far too long to show."""
        path = "/".join(["", *self._names, name] if name else ["", *self._names]) or "/"
        where = path if len(path) <= 120 else f"{path[:50]}…{path[-50:]} ({len(self._names)} folders deep)"
        return f"{self.root.rstrip('/')}{where}"


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _close_scan(level: _Level) -> None:
    scan, level.scan = level.scan, None
    close = getattr(scan, "close", None)
    if close is not None:
        close()


def remove_tree(root: str, max_entries: int = 10_000_000) -> str | None:
    """Remove `root` and everything below it, at any depth, links never followed; None when it is gone, else why
    not (what could not be removed stays). Why not shutil.rmtree: it recurses once per folder, so a tree nested
    about a thousand deep raised RecursionError (not an OSError: `ignore_errors` does not cover it) and stayed."""
    def rmdir(parent_fd: int, name: str) -> None:
        try:
            os.rmdir(name, dir_fd=parent_fd)
        except OSError:
            pass  # not empty (something in it could not go): the walk's end says so

    try:
        for entry in TreeWalk(root, max_entries, on_leave=rmdir):
            if not entry.is_dir:
                try:
                    os.unlink(entry.name, dir_fd=entry.dir_fd)
                except FileNotFoundError:
                    pass
        os.rmdir(root)
    except FileNotFoundError:
        return None
    except OSError as exc:  # WalkError included
        if not os.path.lexists(root):
            return None
        return f"could not remove {root}: {exc.strerror or exc}"
    return None
