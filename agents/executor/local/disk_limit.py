"""Layer 5, the disk: the sandbox's files (workspace and private temp folder) held to `max_disk_mb` and
`max_disk_files` by the app, while code runs and after each run.

Why here and not in the worker: the worker could lie, and files it deleted but keeps open or mapped take disk
that no folder walk sees; the app reads both from the kernel (worker_watch.py), and the limit fails closed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..folder_listings import FolderListings
from . import worker_watch

if TYPE_CHECKING:
    from ..artifacts import Snapshot
    from ..execution_result import ExecutionResult
    from .process import WorkerProcess

MAPS_CHECK_S = 1.0  # how often deleted-but-mapped files are looked for (reading /proc/<pid>/maps costs ~1 ms)
#: How long a passed check of the server's free space (`min_free_mb`) stands: back-to-back tiny steps do not each
#: ask the file system (the sandbox's own limits are still checked every time).
FREE_CHECK_S = 0.25


class DiskLimit:
    """One sandbox's disk limits over its workspace and temp folder."""

    def __init__(self, workdir: str, tmpdir: str, max_mb: int, max_files: int, min_free_mb: int = 0) -> None:
        self.workdir, self.tmpdir = workdir, tmpdir
        self.max_mb, self.max_files = max_mb, max_files
        self._min_free_mb = min_free_mb
        self._maps_checked_at = 0.0
        self._after_run_at = 0.0  # when the last check after a run ended
        self._free_ok_until = 0.0  # the server's free space was enough at the last check, until then
        # The file systems the folders were made on, looked up once: a deleted file mapped from one of them is the
        # sandbox's disk (worker_watch.held_deleted). The folders are the app's; the code cannot move them.
        self._devices = worker_watch.folder_devices([workdir, tmpdir])
        # Each folder's listings from the last walk: a folder the kernel says is unchanged is not listed again
        # (its entries are still stat'ed: folder_listings.py).
        self._listings = {workdir: FolderListings(), tmpdir: FolderListings()}

    @property
    def min_free_mb(self) -> int:
        """The shared disk's floor (worker_watch.server_disk_short); a new floor is checked at once."""
        return self._min_free_mb

    @min_free_mb.setter
    def min_free_mb(self, value: int) -> None:
        self._min_free_mb = value
        self._free_ok_until = 0.0

    def over(self, worker: WorkerProcess | None, read_maps: bool = False,
             workspace: Snapshot | None = None) -> str | None:
        """Why the files are over the limits now, or None; `worker` (if alive) adds what it holds deleted.
        `read_maps`: read the mappings now, however recently they were read (the check after a run).
        `workspace`: a complete walk of the workspace just taken (the snapshot after a run, the worker frozen),
        counted instead of walking it again; an incomplete one is ignored (the workspace is walked here)."""
        pid = worker.pid if worker is not None and not worker.dead else None
        proc = getattr(worker, "proc_stat", None) if pid is not None else None
        # Deleted files kept alive by a mapping are read from /proc/<pid>/maps (about 1 ms): at most once a second,
        # so back-to-back tiny steps do not pay for it; a file hidden this way is found within the second.
        now = time.monotonic()
        mapped = read_maps or now - self._maps_checked_at >= MAPS_CHECK_S
        if mapped:
            self._maps_checked_at = now
        known = {}
        if workspace is not None and workspace.incomplete is None and workspace.entries <= self.max_files:
            known[self.workdir] = worker_watch.DiskUse(files=workspace.entries, bytes=workspace.bytes)
        floor = self.min_free_mb if now >= self._free_ok_until else 0
        why = worker_watch.disk_over([self.workdir, self.tmpdir], pid, self.max_mb, self.max_files,
                                     mapped=mapped, min_free_mb=floor, counted=known, proc=proc,
                                     devices=self._devices if len(self._devices) else None,
                                     listings=self._listings)
        if why is None and floor > 0:
            self._free_ok_until = now + FREE_CHECK_S
        return why

    def after_run(self, worker: WorkerProcess | None, workspace: Snapshot | None = None) -> tuple[str | None, bool]:
        """Why the files are over the limits after a run (None: within), and whether the temp folder holds what
        the code left there (it must then be emptied, with a fresh worker). `workspace`: see `over`."""
        # A check while the code ran may have read the mappings before the code mapped a file: then they are read
        # again now. Otherwise the once-a-second rate holds, so back-to-back tiny steps do not each pay ~1 ms.
        why = self.over(worker, read_maps=self._maps_checked_at > self._after_run_at, workspace=workspace)
        self._after_run_at = time.monotonic()
        if why is None:
            return None, False
        # The worker's own log is always there; anything else in the temp folder (or a deleted file still open)
        # is emptied with a fresh worker, which gets the new folder only after it exists.
        tmp = worker_watch.usage([self.tmpdir], max_entries=2, listings=self._listings)
        return why, bool(not tmp.complete or tmp.files > 1 or
                         (worker and worker_watch.deleted_open_bytes(worker.pid)))

    def check_after_run(self, result: ExecutionResult, worker: WorkerProcess | None,
                        empty_tmp: Callable[[], None], workspace: Snapshot | None = None) -> None:
        """Over the limits, the temp folder is emptied (`empty_tmp`, with a fresh worker) and the run is told.
        `workspace`: see `over`."""
        why, temp_used = self.after_run(worker, workspace)
        if why is not None:
            if temp_used:
                empty_tmp()
            tell_over(result, why, temp_used)


def tell_over(result: ExecutionResult, why: str, temp_emptied: bool) -> None:
    """The run's result says the disk limit was passed (and that the state is gone with the temp folder)."""
    # Imported here: the remote sandbox's supervisor imports this module inside the sandbox image, which has the
    # worker's modules but not the app's result formatting (execution_result needs agents/shown_value.py).
    from ..execution_result import lose_state

    if temp_emptied:
        lose_state(result, "the private temp folder was emptied")
    message = f"DiskLimitError: {why}. Delete files you no longer need."
    result.error = message if result.error is None else f"{result.error}\n{message}"
    result.error_type = result.error_type or "DiskLimitError"
