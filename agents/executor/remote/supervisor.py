"""The supervisor: runs beside the worker inside a remote sandbox and watches it from outside.

Why: the app cannot signal or read `/proc` of a worker on another machine, and must never take the worker's
word for its own threads, CPU or disk. The supervisor (uid 0 of the sandbox, a few capabilities: see
`interface.SUPERVISOR_CAPABILITIES`) starts the project's worker unchanged, as its own user id, through the
local backend's `WorkerProcess` (so the worker applies the same kernel layers: private view, rlimits, identity,
Landlock, seccomp) and answers the app's control requests with the local backend's own readings
(`local/worker_watch.py`, `local/disk_limit.py`). The worker cannot signal, trace or become it: another user
id, and its seccomp filter and Landlock scope allow signals only to itself.

The stream is this process's stdin/stdout (`wire.py`); nothing else may write to fd 1, so fds 0-2 are pointed at
/dev/null first. The worker's bytes are relayed raw (the app parses and bounds them). When stdin ends the worker
is killed and the supervisor exits: a cut stream leaves nothing running.

Command line: see `interface.supervisor_command`.
"""

from __future__ import annotations

import argparse
import os
import queue
import secrets
import select
import shutil
import signal
import tempfile
import threading
from typing import Any

from ..artifacts import snapshot
from ..backend import SandboxLimits, SandboxSpec, WorkspaceSpec
from ..local import worker_watch
from ..local.disk_limit import DiskLimit
from ..local.process import WorkerProcess, minimal_env
from ..worker_init import init_command
from . import wire

WRITE_BACKLOG_BYTES = 64 * 1024 * 1024  # command bytes the worker may leave unread before it is killed


class Supervisor:
    """One worker and the stream: `serve()` until stdin ends."""

    def __init__(self, args: argparse.Namespace, fd_in: int, fd_out: int) -> None:
        self.args = args
        self.fd_in, self.fd_out = fd_in, fd_out
        self.out_lock = threading.Lock()
        self.relay_lock = threading.Lock()
        self.process: WorkerProcess | None = None
        self.disk: DiskLimit | None = None
        self.to_worker: queue.Queue[bytes | None] = queue.Queue()
        self.backlog = 0
        self.backlog_lock = threading.Lock()
        base = os.path.realpath(args.tmpdir)
        self.tmpdir = os.path.join(base, "tmp")
        self.mpldir = os.path.join(base, "mpl")
        self.private = os.path.join(base, "private")
        for path, mode in ((base, 0o711), (self.private, 0o700), (self.tmpdir, 0o700), (self.mpldir, 0o700)):
            os.makedirs(path, mode, exist_ok=True)
        tempfile.tempdir = self.private  # minimal_env's shared font cache folder, never the worker's to write
        if args.mpl_cache and os.path.isdir(args.mpl_cache):
            for name in os.listdir(args.mpl_cache):
                src = os.path.join(args.mpl_cache, name)
                if os.path.isfile(src):
                    shutil.copyfile(src, os.path.join(self.mpldir, name))
        uid = int(args.worker_uid)
        for folder in (self.mpldir, *[os.path.join(self.mpldir, n) for n in os.listdir(self.mpldir)]):
            os.chown(folder, uid, uid)
        os.chown(args.workdir, uid, uid)
        os.chmod(args.workdir, 0o700)

    # --- output -----------------------------------------------------------------------------------------------
    def emit(self, data: bytes) -> None:
        with self.out_lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd_out, view):]

    def reply(self, rid: Any, **fields: Any) -> None:
        self.emit(wire.pack_json(b"R", {"id": rid, **fields}))

    # --- the worker -----------------------------------------------------------------------------------------
    def _spec(self, data: dict[str, Any]) -> SandboxSpec:
        limits = SandboxLimits(**{k: v for k, v in data["limits"].items() if k in SandboxLimits.__dataclass_fields__})
        env = {str(k): str(v) for k, v in dict(data.get("env") or {}).items()}
        return SandboxSpec(workspace=WorkspaceSpec(self.args.workdir),
                           authorized_imports=tuple(data["authorized_imports"]), limits=limits,
                           tools=tuple(data.get("tools") or ()), env=env,
                           use_landlock=bool(data["use_landlock"]), use_seccomp=bool(data["use_seccomp"]),
                           private_root=bool(data["private_root"]), python_layers=bool(data["python_layers"]))

    def _init(self, spec: SandboxSpec) -> dict[str, Any]:
        limits = spec.limits
        self.disk = DiskLimit(self.args.workdir, self.tmpdir, int(limits.max_disk_mb), int(limits.max_disk_files),
                              int(limits.min_free_mb))
        return init_command(spec, self.args.workdir, self.tmpdir, extra_read_paths=[], uid=None,
                            new_root=self.args.new_root if spec.private_root else None,
                            nice=max(0, min(19, int(limits.nice))), sys_path=self.sys_path)

    @property
    def sys_path(self) -> list[str]:
        return [p for p in str(self.args.sys_path).split(":") if p]

    def start(self, data: dict[str, Any], warm: bool) -> None:
        if self.process is not None:
            raise RuntimeError("the worker was already started")
        spec = self._spec(data)
        first = ({"op": "preload", "authorized_imports": list(spec.authorized_imports), "sys_path": self.sys_path,
                  "nice": max(0, min(19, int(spec.limits.nice)))} if warm else self._init(spec))
        env = minimal_env(self.tmpdir, dict(spec.env))
        env["MPLCONFIGDIR"] = self.mpldir
        uid = int(self.args.worker_uid)
        # The owner named is not a pid: the sweep of any AgentDeck app on the machine that sees this worker
        # (its /proc shows a container's processes) takes it for an orphan only once its parent is init.
        log = os.path.join(self.tmpdir, f".agentdeck-worker-{secrets.token_hex(8)}.log")  # the local worker's name
        self.process = WorkerProcess(first, env, self.private, log, start_dir=self.private, user=uid,
                                     owner="remote-supervisor")
        os.chown(self.tmpdir, uid, uid)  # after the log is made (as this process's), before any code runs
        threading.Thread(target=self._relay, name="relay", daemon=True).start()
        threading.Thread(target=self._feed, name="feed", daemon=True).start()

    def _relay(self) -> None:
        """The worker's result pipe to the stream, raw, in bounded chunks; `X` once it ends."""
        process = self._process()
        fd = process.reader.fd
        while True:
            try:
                select.select([fd], [], [])
                with self.relay_lock:
                    data = os.read(fd, wire.CHUNK_BYTES)
                    if data:
                        self.emit(wire.pack(b"W", data))
            except OSError:
                data = b""
            if not data:
                break
        try:
            process.proc.wait(timeout=5)
        except Exception:
            pass
        how = process.exit_description()
        self.to_worker.put(None)
        self.emit(wire.pack_json(b"X", {"how": how}))

    def _feed(self) -> None:
        """Command bytes to the worker's pipe (a worker that stops reading cannot stall the control requests)."""
        process = self._process()
        while True:
            data = self.to_worker.get()
            if data is None or process.dead:
                return
            view = memoryview(data)
            try:
                while view:
                    try:
                        view = view[os.write(process.cmd_fd, view):]
                    except BlockingIOError:
                        select.select([], [process.cmd_fd], [], 1.0)
            except OSError:
                return
            with self.backlog_lock:
                self.backlog -= len(data)

    def to_worker_bytes(self, data: bytes) -> None:
        process = self.process
        if process is None:
            return
        with self.backlog_lock:
            self.backlog += len(data)
            over = self.backlog > WRITE_BACKLOG_BYTES
        if over:
            self.kill()
            return
        process.thaw()
        self.to_worker.put(data)

    def kill(self) -> None:
        if self.process is not None:
            try:
                self.process.proc.send_signal(signal.SIGKILL)  # the relay sees the end and reports it
            except OSError:
                pass

    # --- control requests -------------------------------------------------------------------------------------
    def control(self, req: dict[str, Any]) -> None:
        rid, op = req.get("id"), req.get("op")
        try:
            if op == "start":
                self.start(req["spec"], bool(req.get("warm")))
                self.reply(rid)
            elif op == "assign":
                process = self._process()
                process.send(self._init(self._spec(req["spec"])))
                self.reply(rid)
            elif op == "disk_after":
                process = self._process()
                why, temp_used, too_deep = None, False, 0
                if self.disk is not None:
                    # One walk serves the count and the files too deep for the service's file API to name.
                    found = snapshot(self.args.workdir, max_entries=self.disk.max_files + 1)
                    too_deep = found.too_deep
                    why, temp_used = self.disk.after_run(process if process.proc.poll() is None else None, found)
                self.reply(rid, value=why, tmp_used=temp_used, too_deep=too_deep)
            else:
                self.reply(rid, value=self.answer(str(op), req))
        except Exception as exc:
            self.reply(rid, error=f"{type(exc).__name__}: {str(exc)[:300]}")

    def _process(self) -> WorkerProcess:
        if self.process is None:
            raise RuntimeError("no worker was started")
        return self.process

    def answer(self, op: str, req: dict[str, Any]) -> Any:
        process = self._process()
        alive = process.proc.poll() is None
        if op == "freeze":
            process.freeze()
            return True
        if op == "thaw":
            process.thaw()
            return True
        if op == "pending":
            with self.relay_lock:  # every byte the relay took was sent before this reply
                return worker_watch.has_pending(process.reader.fd) if alive else False
        if op == "woke_up":
            return alive and process.frozen and worker_watch.woke_up(process.pid, process.frozen_at)
        if op == "cpu":
            return worker_watch.cpu_seconds(process.pid) if alive else 0.0
        if op == "threads":
            sample = min(5.0, max(0.0, float(req.get("sample_s", 0.5))))
            return alive and worker_watch.thread_left_running(process, sample)
        if op == "disk":
            return self.disk.over(process if alive else None) if self.disk is not None else None
        if op == "min_free":
            if self.disk is not None:
                self.disk.min_free_mb = int(req["value"])
            return True
        if op == "log":
            return process.log_tail(400).removeprefix("Worker log: ")
        if op == "exit":
            try:
                process.proc.wait(timeout=min(5.0, max(0.0, float(req.get("wait_s", 1.0)))))
            except Exception:
                pass
            return process.exit_description()
        if op == "memory":
            return worker_watch.pss_bytes(process.pid) if alive else None
        raise ValueError(f"unknown control request {op[:40]!r}")

    # --- the stream ---------------------------------------------------------------------------------------------
    def serve(self) -> None:
        deframer = wire.Deframer(wire.TO_SUPERVISOR)
        try:
            while True:
                data = os.read(self.fd_in, 1 << 20)
                if not data:
                    return
                for kind, payload in deframer.feed(data):
                    if kind == b"W":
                        self.to_worker_bytes(payload)
                    elif kind == b"C":
                        req = wire.decode_control(payload, max_containers=10_000)
                        self.control(req)
                    elif kind == b"I":
                        if self.process is not None:
                            self.process.interrupt()
                    elif kind == b"K":
                        self.kill()
        except (OSError, wire.WireError):
            return
        finally:
            self.kill()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="agentdeck-supervisor")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--tmpdir", required=True)
    parser.add_argument("--worker-uid", type=int, required=True)
    parser.add_argument("--sys-path", default="")
    parser.add_argument("--new-root", default=None)
    parser.add_argument("--mpl-cache", default=None)
    args = parser.parse_args(argv)
    if args.worker_uid == os.getuid() or args.worker_uid == 0:
        parser.error("the worker's user id must differ from the supervisor's (and not be 0)")
    # The stream is fds 0/1: kept under new numbers, and 0-2 pointed at /dev/null so nothing printed corrupts it.
    fd_in, fd_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    Supervisor(args, fd_in, fd_out).serve()
    os._exit(0)  # daemon threads may be blocked on the worker's pipes


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
