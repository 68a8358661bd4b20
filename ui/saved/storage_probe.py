"""At start-up, try on the data folder the file operations the saved-chat store relies on.

Why: the data folder may be a mounted volume (a Storage Bucket at /data on a Space, a network share) whose
semantics differ from a disk's. The store writes each small file as a temporary file renamed over the old one
under a `flock` (agents/memory/atomic.py), and publishes a generated secret with a hard link. A volume that
refuses one of these would make every save fail later, one chat at a time; trying them once at start-up names
the problem in the log before any visitor meets it.
"""
from __future__ import annotations

import fcntl
import logging
import os
import secrets
from pathlib import Path

LOG = logging.getLogger("agentdeck")


def probe(folder: Path, needs_link: bool) -> list[str]:
    """The operations that failed in `folder` (empty: all worked), each as "<what>: <error>". Leaves nothing."""
    problems: list[str] = []
    tag = secrets.token_hex(6)
    target, temporary, lock, linked = (folder / f".probe-{tag}{suffix}" for suffix in ("", ".tmp", ".lock", ".ln"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"old")
        temporary.write_bytes(b"new")
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
    except OSError as exc:
        return [f"writing a file: {exc.strerror or exc}"]
    try:
        os.replace(temporary, target)
        if target.read_bytes() != b"new":
            problems.append("renaming a file over another: the old content stayed")
    except OSError as exc:
        problems.append(f"renaming a file over another (atomic saves): {exc.strerror or exc}")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            os.close(fd)
    except OSError as exc:
        problems.append(f"locking a file (flock): {exc.strerror or exc}")
    if needs_link:
        try:
            os.link(target, linked)
        except OSError as exc:
            problems.append(f"hard links (a generated secret file): {exc.strerror or exc}")
    for path in (target, temporary, lock, linked):
        try:
            path.unlink()
        except OSError:
            pass
    return problems


def check_data_folder(folder: Path, needs_link: bool) -> list[str]:
    """`probe`, with a warning in the log naming what fails and what to do."""
    problems = probe(folder, needs_link)
    if problems:
        LOG.warning("AgentDeck: the data folder %s does not support what saving chats needs (%s). Saves will fail "
                    "there: put AGENTDECK_DATA_DIR on a local disk or a volume with POSIX renames and locks%s.",
                    folder, "; ".join(problems),
                    ", and set AGENTDECK_SECRET" if any(p.startswith("hard links") for p in problems) else "")
    return problems
