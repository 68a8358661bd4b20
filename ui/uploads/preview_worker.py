"""Upload previews are parsed in a child process with memory and time limits, never in the app.

Why: a visitor's file is hostile input to pandas, openpyxl and pyarrow. An 889 KB Parquet file of zeros
expands to gigabytes and a crafted .xlsx costs tens of seconds of CPU; in the app process either would
hurt every other session. The child has an address-space limit, runs below the app's priority, and
each preview has a deadline: past it the child is killed (and started again for the next file), and
the person is told the file could not be previewed. One file at a time for the whole server, each in a child of
its own: the child is killed once its reply is in (the next one is started then, loading its readers meanwhile), so
a reader bug that ran a visitor's code never sees the next visitor's file nor keeps running between files. Its
reply is held to what the parser makes (a small frame, a preview of at most MAX_PREVIEW_CHARS, the kind the
upload's name says).

The child is confined by the sandbox worker's own kernel layers (ui/uploads/preview_confinement.py): a reader bug
that runs the visitor's code there reaches nothing of the app or of other sessions. It reads only its own folder,
into which the app copies each upload just before the child parses it (and removes it after).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from agents.executor import identity
from agents.executor.protocol import ChannelClosed, FrameReader, ProtocolError, write_frame
from ui.uploads.parsing import MAX_PREVIEW_CHARS, SUPPORTED_EXTENSIONS, UploadError
from ui.uploads.preview_confinement import (
    CHILD_MEMORY_ENV,
    PreviewConfinementError,
    child_environment,
    load_readers,
    lock_down,
    own_user_id,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: The child's limits when no settings say otherwise (the app's: AGENTDECK_PREVIEW_MEMORY_MB / _TIMEOUT_S, read
#: through ui/config/ when the service starts, never at import: a bad value is named by the start-up check).
MEMORY_LIMIT_MB = 768
TIME_LIMIT_S = 15.0
#: The largest reply frame read from the child: a preview of MAX_PREVIEW_CHARS is at most 12 bytes a character
#: in JSON (a surrogate pair escaped), and an error message is shorter.
MAX_REPLY_BYTES = 64 * 1024
MAX_ERROR_CHARS = 1000
#: The import path by real names, before anything is imported: the child's private view holds the library folders
#: under their real paths only (a virtual environment reached through a link would be missing after confinement).
REAL_IMPORT_PATH = "import os, sys; sys.path[:] = [os.path.realpath(p) if os.path.isdir(p) else p for p in sys.path]"
BOOT = f"{REAL_IMPORT_PATH}; sys.path.insert(0, sys.argv[1]); from ui.uploads.preview_worker import main; main()"


_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[^\s'\":/]+/)+[^\s'\":/]*")


def scrub_paths(text: str, path: str, name: str) -> str:
    """A reader's message with the server's paths taken out: the upload's own path becomes its name."""
    return _ABSOLUTE_PATH.sub("…", text.replace(path, name))


class PreviewFailed(Exception):
    """The child could not preview the file (too slow, too big in memory, crashed); the message says which."""


class PreviewService:
    """The app's handle on the preview child: `preview(path, name)` -> (kind, text) or raises."""

    def __init__(self, memory_limit_mb: int | None = None, time_limit_s: float | None = None,
                 boot: str = BOOT) -> None:
        if memory_limit_mb is None or time_limit_s is None:
            from ui.config.current import current_settings

            settings = current_settings()
            memory_limit_mb = settings.preview_memory_mb if memory_limit_mb is None else memory_limit_mb
            time_limit_s = settings.preview_timeout_s if time_limit_s is None else time_limit_s
        self.memory_limit_mb = memory_limit_mb
        self.time_limit_s = time_limit_s
        self.boot = boot  # the child's program (the attack tests replace its parser)
        self.max_reply_bytes = MAX_REPLY_BYTES
        self._uid: int | None = None
        self._folder: str | None = None
        self._private: str | None = None  # app-private: the mount point of the child's private root
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._out_fd = -1
        self._reader: FrameReader | None = None

    def _start(self) -> FrameReader:
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        if self._folder is None:  # the child's only readable folder: one upload at a time is copied in
            self._folder = tempfile.mkdtemp(prefix="agentdeck-preview-")
            self._uid = own_user_id(str(PROJECT_ROOT), self._folder)
            if self._uid is not None:
                os.chown(self._folder, self._uid, self._uid)
            self._private = tempfile.mkdtemp(prefix="agentdeck-preview-app-")
            os.mkdir(os.path.join(self._private, "root"), 0o755)
        assert self._private is not None
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", self.boot, str(PROJECT_ROOT), str(cmd_r), str(res_w), self._folder,
             str(-1 if self._uid is None else self._uid), os.path.join(self._private, "root")],
            pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=child_environment(self.memory_limit_mb), start_new_session=True,
            close_fds=True)
        os.close(cmd_r)
        os.close(res_w)
        # The count of brackets is a cheap bound on parsing work made before parsing; it counts those inside the
        # preview's text too (a table of lists), and a reply of at most 64 KiB costs little to parse at any depth.
        self._out_fd, self._reader = cmd_w, FrameReader(res_r, max_bytes=self.max_reply_bytes,
                                                        max_containers=self.max_reply_bytes)
        return self._reader

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        for fd in (self._out_fd, self._reader.fd if self._reader else -1):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._out_fd, self._reader = -1, None

    def preview(self, path: str | Path, name: str) -> tuple[str, str]:
        with self._lock:
            reader = self._reader
            if reader is None or self._proc is None or self._proc.poll() is not None:
                self._stop()
                reader = self._start()
            copy = self._copy_in(path, name)
            try:
                write_frame(self._out_fd, {"path": copy, "name": name})
                reply = reader.read(timeout=self.time_limit_s)
            except ProtocolError as exc:
                reply = {"invalid": str(exc)} if not isinstance(exc, ChannelClosed) else {"crashed": True}
            except OSError:
                reply = {"crashed": True}
            finally:
                os.unlink(copy)
                self._replace_child()
            if reply is None:
                raise PreviewFailed(f"took longer than {self.time_limit_s:.0f} s to read, so it was not added "
                                    "(a much simpler or smaller file would work)")
            return self.result(reply, copy, name)

    def result(self, reply: dict[str, Any], copy: str, name: str) -> tuple[str, str]:
        """(kind, preview) from the child's reply about `copy` (the upload `name`), or the error to show."""
        if reply.get("crashed") or "invalid" not in reply and "kind" not in reply and "error" not in reply:
            raise PreviewFailed(f"needed more than {self.memory_limit_mb} MB of memory to read, so it was "
                                "not added (is it a compressed file that expands to a huge table?)")
        return self._checked(reply, copy, name)

    def _replace_child(self) -> None:
        """The child that read a file is killed (whatever a reader bug left running in it dies with it) and the
        next file's child is started now, so its readers are loaded by the time the next upload comes."""
        self._stop()
        try:
            self._start()
        except OSError:  # started again by the next preview
            self._stop()

    @staticmethod
    def _checked(reply: dict[str, Any], copy: str, name: str) -> tuple[str, str]:
        """The child's reply as the parser makes it, or PreviewFailed: the child may run a visitor's code."""
        if reply.get("error") is not None and "invalid" not in reply:
            raise UploadError(scrub_paths(str(reply["error"])[:MAX_ERROR_CHARS], copy, name))
        kind, preview = reply.get("kind"), reply.get("preview")
        expected = SUPPORTED_EXTENSIONS.get(os.path.splitext(name)[1].lower())
        if "invalid" in reply or kind != expected or not isinstance(preview, str) or len(preview) > MAX_PREVIEW_CHARS:
            raise PreviewFailed("could not be read: its reader sent a reply no reader makes, so it was not added")
        return str(kind), preview

    def _copy_in(self, path: str | Path, name: str) -> str:
        """A copy of the upload in the child's folder, readable by the child's user (its name keeps the
        upload's extension, which the parser goes by)."""
        assert self._folder is not None
        copy = os.path.join(self._folder, "upload" + os.path.splitext(str(name))[1][:16])
        try:
            shutil.copyfile(path, copy)
        except OSError as exc:
            raise UploadError(f"could not be read: {exc.strerror}") from None
        if self._uid is not None:
            os.chown(copy, self._uid, self._uid)
        return copy

    def close(self) -> None:
        with self._lock:
            self._stop()
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
                identity.release(self._uid)
                self._folder, self._uid = None, None
            if self._private is not None:
                shutil.rmtree(self._private, ignore_errors=True)
                self._private = None


_service: PreviewService | None = None
_service_lock = threading.Lock()


def preview_service() -> PreviewService:
    global _service
    with _service_lock:
        if _service is None:
            _service = PreviewService()
        return _service


def main() -> None:
    """The child's entry: `python -I -c BOOT <app root> <command fd> <reply fd> <folder> <uid or -1> <new root>`."""
    app_root, fd_in, fd_out, folder, uid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    serve(fd_in, fd_out, app_root, folder, None if int(uid) < 0 else int(uid), sys.argv[6])


def serve(fd_in: int, fd_out: int, app_root: str, folder: str, uid: int | None, new_root: str | None) -> None:
    """The child: limits and confinement first, then one preview per request until the app closes the pipe."""
    os.nice(5)
    limit_mb = int(os.environ.get(CHILD_MEMORY_ENV, str(MEMORY_LIMIT_MB)))  # set by its parent, never an operator
    from ui.uploads import parsing  # noqa: F401 - loaded before the confinement closes the file system

    load_readers()  # before the limit: the limit is for the file, not the libraries
    try:
        lock_down(app_root, folder, uid, new_root, limit_mb)
    except PreviewConfinementError as exc:
        refuse(fd_in, fd_out, str(exc))
        return
    reader = FrameReader(fd_in)
    while True:
        try:
            request = reader.read()
        except (ChannelClosed, ProtocolError):
            return
        write_frame(fd_out, answer(request))


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The child's reply to one request {"path", "name"}: the preview, or what went wrong."""
    from ui.uploads import parsing as uploads

    try:
        kind, preview = uploads.parse_preview(Path(request["path"]), request.get("name"))
        return {"kind": kind, "preview": preview}
    except uploads.UploadError as exc:
        return {"error": str(exc)}
    except MemoryError:
        return {"crashed": True}
    except Exception as exc:
        return {"error": f"could not be read: {uploads.first_error_line(exc)}"}


def refuse(fd_in: int, fd_out: int, why: str) -> None:
    """A child that could not be confined parses nothing: each request is answered with the reason."""
    reader = FrameReader(fd_in)
    while True:
        try:
            reader.read()
        except (ChannelClosed, ProtocolError):
            return
        write_frame(fd_out, {"error": f"could not be read: this server cannot confine its file reader ({why})"})
