"""The kernel confinement of the upload preview child (ui/uploads/preview_worker.py).

Why: a visitor's file is parsed by native readers (pyarrow's Parquet, openpyxl's XML, pypdf, pandas' C
parser). A memory-safety bug in one of them runs the visitor's code in the child, which without this would
hold the app's user (root on a Space): the data folder with every saved chat and the signing secret, the app's
environment with its keys (/proc/<app>/environ), other sessions' workspaces, the network. So after the readers
are loaded the child applies the sandbox worker's own layers (agents/executor/confinement.py, one
implementation), with its folder read-only and nothing writable: a private view in which only the library
folders and its own folder exist (no /proc, no other workspace to stat or watch), every capability dropped and,
when the app runs as root, a user id of its own, limits on memory, threads, open files and file size, Landlock
(reads only there, writes nothing, no TCP, signals and abstract sockets scoped) and the same seccomp filter (no
processes, sockets, file watches, pid probes; mode, owner and time changes refused where no view or id covers
them). The app copies each upload into that folder just before the child parses it.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from agents.executor import confinement, identity
from agents.executor.confinement import ConfinementConfig, read_roots
from agents.executor.local.process import SINGLE_THREAD_ENV

#: Readers loaded before confinement (later imports would still work: they read library folders only).
READERS = ("pandas", "pyarrow.parquet", "openpyxl", "pypdf", "charset_normalizer", "ui.uploads.parsing",
           "ui.uploads.pdf_preview")
MAX_OPEN_FILES = 128
#: How the app tells the child its memory limit (the child's whole environment is made here: not a setting).
CHILD_MEMORY_ENV = "PREVIEW_CHILD_MEMORY_MB"
MAX_FILE_SIZE_MB = 1  # it writes nothing (no writable folder); the limit is for /dev/null's sake


class PreviewConfinementError(RuntimeError):
    """A required layer could not be applied: the child must not parse anyone's file."""


def child_environment(memory_limit_mb: int) -> dict[str, str]:
    """The child's whole environment: no keys, and every thread pool limited (Landlock covers the thread that
    applies it and the threads it starts later, not a pool a library started while loading)."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent",
            CHILD_MEMORY_ENV: str(memory_limit_mb), **SINGLE_THREAD_ENV}


def config(app_root: str, folder: str, uid: int | None, new_root: str | None,
           memory_limit_mb: int) -> ConfinementConfig:
    """The sandbox's confinement settings for the child: its folder read-only, nothing writable."""
    return ConfinementConfig(workdir=folder, tmpdir=folder, app_root=app_root, memory_limit_mb=memory_limit_mb,
                             max_file_size_mb=MAX_FILE_SIZE_MB, max_open_files=MAX_OPEN_FILES, uid=uid,
                             new_root=new_root, read_only=True)


def library_folders(app_root: str, folder: str) -> list[str]:
    """The folders Python and the readers need (never the app's own folder, which may hold the data folder)."""
    return read_roots(config(app_root, folder, None, None, 0))


def own_user_id(app_root: str, folder: str) -> int | None:
    """A user id of its own for the child when the app runs as root and every library folder may be read by any
    user (in the private view the folders above them are the view's own, open to all); None otherwise: the
    child then stays uid 0, without any capability, and seccomp refuses mode, owner and time changes."""
    if os.geteuid() != 0 or not all(_open_to_all(path) for path in library_folders(app_root, folder)):
        return None
    return identity.allocate()


def _open_to_all(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IROTH and mode & stat.S_IXOTH)


def load_readers(modules: Iterable[str] = READERS) -> None:
    """Import the readers while their files can still be found anywhere on the import path."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional reader not installed: its files are refused by the parser
            continue


def lock_down(app_root: str, folder: str, uid: int | None, new_root: str | None, memory_limit_mb: int) -> list[str]:
    """Apply every layer to this process (after `load_readers`); one line per layer. Raises
    PreviewConfinementError when a required one cannot be applied."""
    try:
        layers = confinement.apply(config(app_root, folder, uid, new_root, memory_limit_mb))
    except confinement.ConfinementError as exc:
        raise PreviewConfinementError(str(exc)) from exc
    return [f"{layer.name}: {layer.detail}" for layer in layers]
