"""Layer 5, during a run: the app waits for the worker's result and watches the run while it goes.

Why: the worker runs hostile code. While the app waits it accepts only messages of the current run (a log
line, a tool call, the one result), bounds the output again, counts the timeout on the worker's compute time
(time spent in tools does not count, but CPU burnt meanwhile does, read from the kernel), checks the disk, and
stops the code when asked: SIGINT first, then a restart once the grace is over (meanwhile a tool call is
answered with an error, never run). Any break of the protocol restarts the worker and marks the result untrusted.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import execution_result
from .execution_result import ExecutionResult
from .protocol import ChannelClosed, ProtocolError

if TYPE_CHECKING:
    from .backend import SandboxHost

log = logging.getLogger("agents.executor")
GRACE_S = 1.0  # how long SIGINT may take before the worker is killed...
# ...unless the worker has not had the CPU to act on it: on a loaded machine a worker waiting to be scheduled
# would otherwise be killed (its variables lost) for a stop it would have honoured. It gets more time until it has
# used GRACE_CPU_S of CPU since the interrupt, and never more than GRACE_MAX_S in all (below the UI's 10 s in
# which a stopped run may still confirm in the background, ui/session/stopping.py: past it the agent is
# replaced anyway). A worker that spins instead of stopping uses its CPU quickly and is killed as before.
GRACE_CPU_S = 0.25
GRACE_MAX_S = 8.0
# How long the app polls for the worker's reply before sleeping: short runs (most agent steps) come back
# within this window, and skipping the sleep saves a wake-up (a tiny step took 0.18 ms instead of 0.22-0.26).
# The cost is at most this much CPU per message, yielding to every other runnable thread; and only while no
# other sandbox of this process is running code (on a server with many sessions the CPU is better spent there)
# and the machine has a CPU to spare (`machine_has_idle_cpu`): on a busy machine the poll takes the CPU the
# worker (at a lower priority) waits for, and a tiny step took longer with it than without (median 0.99 vs
# 1.13 ms, 0.72 vs 1.05 ms with many variables, at load average 7-9 on 2 CPUs, same run).
REPLY_SPIN_S = 0.002
IDLE_CHECK_S = 0.25  # how often the machine's load is read for that decision (/proc/loadavg)
CPU_CHECK_S = 1.0  # how often a long run's CPU time is read from the kernel
# SIGINT is sent again this often until the worker answers: a signal that lands before the worker has read the
# run request (a Stop pressed as the code is sent) finds no code running and is ignored, and the code would then
# run until the grace is over and the worker is restarted, its variables lost. The worker acts on one SIGINT per
# run, so the repeats never interrupt its clean-up.
INTERRUPT_RESEND_S = 0.1


class _RunCounter:
    """How many sandboxes of this process are running code right now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0

    def __enter__(self) -> _RunCounter:
        with self._lock:
            self.active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.active -= 1


_running_sandboxes = _RunCounter()


class _IdleCpu:
    """Whether this machine has a CPU to spare for a worker while the app polls, read at most every IDLE_CHECK_S."""

    def __init__(self) -> None:
        self.cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.checked_at = float("-inf")
        self.idle = False

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self.checked_at >= IDLE_CHECK_S:
            self.checked_at = now
            self.idle = _spare_cpu(self.cpus)
        return self.idle


def _spare_cpu(cpus: int) -> bool:
    """Runnable tasks now (the reader included) leave a CPU for the worker, and the last minute's load did too."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            fields = fh.read().split()
        running = int(fields[3].split(b"/")[0])
        return running < cpus and float(fields[0]) < cpus - 0.5
    except (OSError, ValueError, IndexError):
        return False


machine_has_idle_cpu = _IdleCpu()


@dataclass
class RunWatch:
    """The watch over one run of `worker` (the sandbox's host: its channel and the backend's watch operations);
    what it needs of its sandbox is given as values and callables.

    `wake_fd`: written by the sandbox's `interrupt()` to end a wait at once; `stop_requested`: the sandbox's
    interrupt flag; `restart`: replace the worker; `disk_over`: why the sandbox's files are over its limits
    (asked of the sandbox's current host).
    """

    worker: SandboxHost
    wake_fd: int
    stop_requested: Callable[[], bool]
    restart: Callable[[], None]
    disk_over: Callable[[], str | None]
    max_output_chars: int
    max_result_chars: int
    memory_limit_mb: int

    def run(self, request: dict[str, Any], timeout_s: float,
            on_log: Callable[[str], None] | None, cancel: threading.Event | None,
            serve_tool: Callable[[dict[str, Any]], dict[str, Any]],
            cpu_at_start: float | None = None) -> ExecutionResult:
        """Send the run `request` and wait for its result; never raises for what the worker does.
        `cpu_at_start`: the worker's CPU time, read while it was frozen before this run (else read here)."""
        try:
            with _running_sandboxes:
                cpu_start = self.worker.cpu_seconds() if cpu_at_start is None else cpu_at_start
                self.worker.send(request)
                return self._wait(str(request["id"]), timeout_s, on_log, cancel, serve_tool, cpu_start)
        except (OSError, ChannelClosed):
            return self._crashed([])

    def _wait(self, run_id: str, timeout_s: float, on_log: Callable[[str], None] | None,
              cancel: threading.Event | None,
              serve_tool: Callable[[dict[str, Any]], dict[str, Any]], cpu_start: float) -> ExecutionResult:
        worker = self.worker
        logs: list[str] = []
        logged = overflow = 0
        log_limit = self.max_output_chars + execution_result.NOTE_ROOM
        start = time.monotonic()
        tool_time = 0.0
        stopping: str | None = None
        grace_end = stop_cpu = stop_time = next_interrupt = 0.0
        next_disk_check = start + CPU_CHECK_S
        while True:
            now = time.monotonic()
            if stopping is None:
                cancelled = self.stop_requested() or (cancel is not None and cancel.is_set())
                reason = "interrupt" if cancelled else None
                if reason is None and now - start - tool_time >= timeout_s:
                    reason = "timeout"
                if reason is None and now >= next_disk_check:
                    next_disk_check = now + CPU_CHECK_S
                    if self.disk_over() is not None:
                        reason = "disk"
                if reason is None and tool_time and now - start > CPU_CHECK_S:
                    # Time in tools does not count, but a thread burning CPU meanwhile does: the kernel's figure.
                    if worker.cpu_seconds() - cpu_start > timeout_s:
                        reason = "timeout"
                if reason:
                    stopping, grace_end = reason, now + GRACE_S
                    stop_cpu, stop_time = worker.cpu_seconds(), now
                    next_interrupt = now
            if stopping:
                if now >= next_interrupt:
                    worker.interrupt()
                    next_interrupt = now + INTERRUPT_RESEND_S
                wait = grace_end - now
                if wait <= 0 and _starved(worker, stop_cpu, now - stop_time):
                    grace_end = now + GRACE_CPU_S
                    wait = GRACE_CPU_S
                if wait <= 0:
                    why = self.disk_over() if stopping == "disk" else None  # before the restart empties the temp
                    self.restart()
                    return execution_result.stopped(stopping, logs, True, timeout_s, why)
                wait = min(wait, max(next_interrupt - now, 0.0))
            else:
                wait = min(timeout_s - (now - start - tool_time), CPU_CHECK_S)
            try:
                spin = REPLY_SPIN_S if _running_sandboxes.active == 1 and machine_has_idle_cpu() else 0.0
                msg = worker.read(timeout=max(wait, 0.0), wake_fd=self.wake_fd, spin_s=spin)
            except ChannelClosed:
                return self._crashed(logs)
            except ProtocolError as exc:  # a frame no honest worker writes: too long, not UTF-8 or JSON, too deep
                return self._misbehaved(logs, f"sent a malformed frame ({exc})")
            if msg is None:
                self._drain_wake()
                continue
            op = msg.get("op")
            if msg.get("id") != run_id or op not in ("log", "tool", "result"):
                return self._misbehaved(logs, "sent a message that belongs to no current run")
            if op == "log":
                text = msg.get("text")
                if not isinstance(text, str):
                    return self._misbehaved(logs, "sent a malformed log message")
                if logged >= log_limit:  # the worker stops sending at the limit; one that does not costs the
                    overflow += len(text)  # app a parse per frame, so it is cut off soon
                    if overflow > 4 * log_limit + 65536:
                        return self._misbehaved(logs, "kept sending output past its limit")
                    continue
                text = text[: log_limit - logged]
                logged += len(text)
                logs.append(text)
                if on_log is not None:
                    try:
                        on_log(text)
                    except Exception:
                        log.exception("on_log callback failed")
            elif op == "tool":
                if stopping:  # the run was told to stop: code that caught the interrupt gets no more tools run
                    worker.send({"op": "tool_result", "call_id": msg.get("call_id"), "ok": False,
                                 "error": f"the run was stopped ({stopping}): no more tools are called"})
                    continue
                t0 = time.monotonic()
                reply = serve_tool(msg)
                tool_time += time.monotonic() - t0
                worker.send(reply)
            else:
                if stopping and msg.get("error_type") == "KeyboardInterrupt":
                    return execution_result.stopped(stopping, logs + [str(msg.get("logs", ""))[:log_limit]], False,
                                                    timeout_s, self.disk_over())
                return execution_result.from_worker(msg, logs, self.max_output_chars, self.max_result_chars)

    def _misbehaved(self, logs: list[str], what: str) -> ExecutionResult:
        """The worker broke the protocol: restart it; the run's output is not to be trusted."""
        self.worker.kill()
        self.restart()
        return execution_result.protocol_error(logs, what)

    def _drain_wake(self) -> None:
        try:
            os.read(self.wake_fd, 1024)
        except OSError:
            pass

    def _crashed(self, logs: list[str]) -> ExecutionResult:
        """The worker died or closed its channel: a fresh one is started and the run says its state is gone."""
        worker = self.worker
        how = worker.exit_description(wait_s=1.0)
        worker.kill()
        self.restart()
        return execution_result.crashed(logs, how, self.memory_limit_mb)


def _starved(worker: SandboxHost, cpu_at_stop: float, since_stop_s: float) -> bool:
    """Whether an interrupted worker has not yet had the CPU to honour the interrupt (see GRACE_CPU_S)."""
    if since_stop_s >= GRACE_MAX_S or worker.dead or not worker.capabilities.cpu_time:
        return False
    return worker.cpu_seconds() - cpu_at_stop < GRACE_CPU_S
