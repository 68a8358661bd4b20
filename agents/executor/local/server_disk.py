"""The server's own disk: the floor of free space every sandbox's writes must leave (`min_free_mb`).

Kept apart from worker_watch.py (which checks it with the sandbox's own limits) to keep that module small.
"""

from __future__ import annotations

import os


def free_mb(path: str) -> int:
    """Megabytes an unprivileged writer may still use on the file system holding `path` (or the nearest folder
    above it that exists; 0 if unknown)."""
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        info = os.statvfs(path)
    except OSError:
        return 0
    return info.f_bavail * info.f_frsize // (1024 * 1024)


def server_disk_short(folders: list[str], min_free_mb: int) -> str | None:
    """Why the disk holding `folders` is too full to write on (less than `min_free_mb` free), or None.

    Why: each sandbox's own limit (max_disk_mb) bounds one session, not the server: saved chats keep their
    workspaces, so visitors starting chat after chat would fill the disk every session and the saved chats
    share; past the floor, writes stop for everyone instead of the disk running out under them."""
    if min_free_mb <= 0:
        return None
    for folder in folders:
        left = free_mb(folder)
        if left < min_free_mb:
            return (f"the server's disk is almost full ({left} MB free; the app keeps {min_free_mb} MB free: "
                    "min_free_mb)")
    return None
