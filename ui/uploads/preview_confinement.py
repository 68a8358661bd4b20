"""The kernel confinement of the upload preview child (ui/uploads/preview_worker.py).

Why: a visitor's file is parsed by native readers (pyarrow's Parquet, openpyxl's XML, pypdf, pandas' C
parser). A memory-safety bug in one of them runs the visitor's code in the child, which without this would
hold the app's user (root on a Space): the data folder with every saved chat and the signing secret, the app's
environment with its keys (/proc/<app>/environ), the network. So, as for the sandbox worker (the same layers,
agents/executor/), after the readers are loaded the child drops every capability (and, when the app runs as
root, takes a user id of its own), and Landlock lets it read only the library folders and its own folder, into
which the app copies each upload, and write nothing; seccomp refuses sockets, new processes, ptrace and
signals to others, and changes of any file's mode, times, owner or extended attributes (Landlock does not cover
them). The memory and time limits stay as they were.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from agents.executor import identity, landlock, seccomp
from agents.executor.confinement import ConfinementConfig, check_single_threaded, read_roots
from agents.executor.local.process import SINGLE_THREAD_ENV

#: Readers loaded before confinement (later imports would still work: they read library folders only).
READERS = ("pandas", "pyarrow.parquet", "openpyxl", "pypdf", "charset_normalizer", "ui.uploads.parsing",
           "ui.uploads.pdf_preview")


class PreviewConfinementError(RuntimeError):
    """A required layer could not be applied: the child must not parse anyone's file."""


def child_environment(memory_limit_mb: int) -> dict[str, str]:
    """The child's whole environment: no keys, and every thread pool limited (Landlock covers the thread that
    applies it and the threads it starts later, not a pool a library started while loading)."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent",
            "AGENTDECK_PREVIEW_MEMORY_MB": str(memory_limit_mb), **SINGLE_THREAD_ENV}


def library_folders(app_root: str, folder: str) -> list[str]:
    """The folders Python and the readers need (never the app's own folder, which may hold the data folder)."""
    config = ConfinementConfig(workdir=folder, tmpdir=folder, app_root=app_root, memory_limit_mb=0,
                               max_file_size_mb=0, max_open_files=0)
    return read_roots(config)


def own_user_id(app_root: str, folder: str) -> int | None:
    """A user id of its own for the child when the app runs as root and the libraries are open to every user
    (a Python installed under /root is not: the child then stays uid 0, without any capability)."""
    if os.geteuid() != 0 or not all(_open_to_all(path) for path in library_folders(app_root, folder)):
        return None
    return identity.allocate()


def _open_to_all(path: str) -> bool:
    """Whether any user may list `path` and reach it through every folder above it."""
    parts = os.path.realpath(path).split(os.sep)
    for index in range(1, len(parts) + 1):
        try:
            mode = os.stat(os.sep + os.path.join(*parts[1:index]) if index > 1 else os.sep).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    return bool(mode & stat.S_IROTH)


def load_readers(modules: Iterable[str] = READERS) -> None:
    """Import the readers while their files can still be found anywhere on the import path."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional reader not installed: its files are refused by the parser
            continue


def lock_down(app_root: str, folder: str, uid: int | None) -> list[str]:
    """Apply every layer to this process (after `load_readers`); one line per layer. Raises
    PreviewConfinementError when one cannot be applied."""
    try:
        layers = [check_single_threaded(), identity.become(uid)]
        result = landlock.restrict(read_paths=[*library_folders(app_root, folder), folder], write_paths=[])
        layers.append(f"landlock ABI {result.abi}: reads its folder and the libraries, writes nothing")
        # Landlock does not cover a file's mode, times, owner or extended attributes, and the child may keep the
        # app's user (no id of its own): those calls are refused, or it could open the data folder to every
        # local user or lock the app out of it. The parser never needs them.
        layers.append(f"seccomp ({seccomp.install(deny_metadata=True)})")
    except Exception as exc:  # every layer is required
        raise PreviewConfinementError(f"{type(exc).__name__}: {exc}") from exc
    return layers
