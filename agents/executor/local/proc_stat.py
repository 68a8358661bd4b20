"""A worker's `/proc` entries held open by the app: read cheaply every step, and bound to that one process.

Kept apart from worker_watch.py (which reads what these give) so the process that starts the worker
(process.py, and the Docker container's host) can hold one without importing the watch's other readers.
"""
from __future__ import annotations

import os

_STAT_FLAGS = os.O_RDONLY | os.O_CLOEXEC


class ProcStat:
    """The worker's `/proc/<pid>/stat`, opened once and read again with one `pread` per look (an `open` of it by
    path cost 6 more system calls and several times the CPU, and the app reads it three times a step), and its
    `/proc/<pid>/fd` folder, listed and read relative to that descriptor. Both stay bound to the process they
    were opened for: once that process is reaped they read nothing, even if the pid is reused. `close` when
    the worker is gone."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            self.fd = os.open(f"/proc/{pid}/stat", _STAT_FLAGS)
        except OSError:
            self.fd = -1  # the process is gone already: every read says "cannot be read"
        try:
            self.fd_dir = os.open(f"/proc/{pid}/fd", _STAT_FLAGS | os.O_DIRECTORY)
        except OSError:
            self.fd_dir = -1

    def fields(self) -> list[bytes]:
        """As `_stat_fields`; [] when the process is gone (or the descriptor closed)."""
        if self.fd < 0:
            return []
        try:
            data = os.pread(self.fd, 4096, 0)
        except OSError:
            return []
        return data[data.rfind(b")") + 2:].split()

    def close(self) -> None:
        fds, self.fd, self.fd_dir = (self.fd, self.fd_dir), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)
