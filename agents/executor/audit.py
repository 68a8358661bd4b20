"""Layer 4b: a CPython audit hook that watches what running code asks the interpreter for.

Why a hook besides Landlock and seccomp: it names the refused action in a
clear Python exception, it counts files written (max_files_written), and where
Landlock is missing it still refuses file access outside the workspace for
anything that goes through Python's own open/os functions. Once installed it is
never switched off: there is no flag user code could clear (the worker's own
bookkeeping passes its rules), and audit hooks cannot be removed. It gives
early, clear errors; the kernel layers are what make the sandbox safe.
"""

from __future__ import annotations

import copy
import os
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_DENIED_EVENTS = frozenset(
    """os.system os.exec os.posix_spawn os.spawn os.fork os.forkpty os.killpg
    subprocess.Popen pty.spawn sys._current_frames sys.settrace sys.setprofile
    sys.addaudithook gc.get_objects gc.get_referrers gc.get_referents code.__new__
    function.__new__ sys.remote_exec cpython.remove_audit_hooks""".split()
)
_WRITE_PATH_EVENTS = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
    "os.chmod": (0,), "os.chown": (0,), "os.link": (0, 1), "os.symlink": (0, 1),
    "os.truncate": (0,), "os.utime": (0,), "shutil.rmtree": (0,), "os.chdir": (),
}
_READ_PATH_EVENTS = {"os.listdir": (0,), "os.scandir": (0,)}


_T = TypeVar("_T")


def _own_copy(value: _T) -> _T:
    """A function of its own with the same (immutable) code: giving the original a new ``__code__`` changes
    nothing the hook runs."""
    if isinstance(value, types.FunctionType):
        copied: Any = types.FunctionType(value.__code__, value.__globals__, value.__name__, value.__defaults__,
                                         value.__closure__)
        return copied  # type: ignore[no-any-return]  # a FunctionType, as `value` is
    return value


def _is_user_frame(depth: int = 3) -> bool:
    """True if the Python frame that triggered the event runs sandboxed code."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return False
    name = frame.f_code.co_filename
    return name.startswith("<step ") or name.endswith("guarded_runtime.py")


class AuditPolicy:
    """The rules of the audit hook and the count of files written in the current run."""

    def __init__(self, workdir: str, tmpdir: str, read_roots: list[str], max_files_written: int,
                 filesystem_fallback: bool):
        self.workdir = os.path.realpath(workdir)
        self.write_roots = (self.workdir + os.sep, os.path.realpath(tmpdir) + os.sep)
        self.read_roots = tuple(os.path.realpath(p).rstrip(os.sep) + os.sep for p in read_roots)
        self.max_files_written = max_files_written
        self.fallback = filesystem_fallback
        self.files_written: set[str] = set()
        self.pid = os.getpid()
        self._clear_count: Callable[[], None] = self.files_written.clear  # after install(): the hook's count

    def start_run(self) -> None:
        self._clear_count()

    def _deny(self, what: str) -> NoReturn:
        raise PermissionError(f"{what} is blocked by the sandbox")

    def _real(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
        return os.path.realpath(os.fsdecode(os.fspath(path)))

    def _under(self, real: str, roots: tuple[str, ...]) -> bool:
        return (real + os.sep).startswith(roots)

    def _check_write(self, path: Any, event: str) -> None:
        real = self._real(path)
        if real in ("/dev/null",):
            return
        if self.fallback and not self._under(real, self.write_roots):
            self._deny(f"{event} outside the workspace ({real})")
        if self._under(real, self.write_roots) and real not in self.files_written:
            if not os.path.exists(real):
                if len(self.files_written) >= self.max_files_written:
                    raise PermissionError(
                        f"too many files written in one run (limit {self.max_files_written}; "
                        "raise it with max_files_written=...)"
                    )
                self.files_written.add(real)

    def _check_read(self, path: Any, event: str) -> None:
        if not self.fallback:
            return
        real = self._real(path)
        if real.startswith("/dev/") or self._under(real, self.write_roots + self.read_roots):
            return
        self._deny(f"{event} of {real}")

    def _open(self, args: tuple[Any, ...]) -> None:
        path, mode, flags = args
        if isinstance(path, int):
            self._deny("opening a file descriptor by number")
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing:
            self._check_write(path, "writing")
        else:
            self._check_read(path, "reading")


    def _dispatch(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            self._open(args)
        elif event in _DENIED_EVENTS:
            self._deny(f"'{event}'")
        elif event.startswith(("ctypes.", "socket.")):
            if event == "socket.__new__" and len(args) > 1 and args[1] == 1:  # AF_UNIX (socketpair)
                return
            self._deny(f"'{event}'")
        elif event == "os.kill":
            if args and args[0] != self.pid:
                self._deny("sending a signal to another process")
        elif event in ("object.__getattr__", "sys._getframe"):
            if _is_user_frame():
                self._deny(f"'{event}' from sandboxed code")
        elif event in ("object.__setattr__", "object.__delattr__"):
            target = args[0] if args else None
            if isinstance(target, type) and target.__module__ != "__main__" and _is_user_frame():
                self._deny(f"changing the library class '{target.__qualname__}'")
        elif event in _WRITE_PATH_EVENTS:
            for i in _WRITE_PATH_EVENTS[event]:
                if i < len(args) and isinstance(args[i], (str, bytes, os.PathLike)):
                    self._check_write(args[i], event)
        elif event in _READ_PATH_EVENTS:
            for i in _READ_PATH_EVENTS[event]:
                if i < len(args) and isinstance(args[i], (str, bytes, os.PathLike)):
                    self._check_read(args[i], event)

    def install(self) -> None:
        """Install the hook for the rest of the process's life (it cannot be removed or paused).

        The hook works on a private copy of this policy, of a private copy of its class, that nothing else
        refers to: changing the object the worker keeps (``audit._deny = ...``) or its class changes nothing
        the hook reads. (Code that can write memory at will could still find it: the kernel is the boundary.)
        """
        private = copy.copy(self)
        # A class of its own that no module names: patching `AuditPolicy._deny` on the class the worker
        # imports changes nothing the hook calls.
        private.__class__ = type("AuditPolicy", (), {k: _own_copy(v) for k, v in vars(AuditPolicy).items()
                                                    if k not in ("__dict__", "__weakref__")})
        private.files_written = set()
        self._clear_count = private.files_written.clear  # the worker resets the count through this only
        dispatch = private._dispatch
        busy = [False]  # a closure cell, not an attribute: the checks may raise audited events themselves

        def hook(event: str, args: tuple[Any, ...]) -> None:
            if busy[0]:
                return
            busy[0] = True
            try:
                dispatch(event, args)
            finally:
                busy[0] = False

        sys.addaudithook(hook)
