"""The app's held view of a worker in /proc (worker_watch.ProcStat) and the channel's bounded reads.

What must hold: one descriptor per worker answers the CPU time, the stopped state and the thread count exactly as
reading the file by path does; once the process is reaped it answers nothing (never another process's figures,
whatever reuses the pid); deleted-but-open files are found through the held fd folder; frames of any size still
arrive whole when reads are 64 KiB.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from agents.executor.local import worker_watch
from agents.executor.protocol import READ_CHUNK, FrameReader, frame
from tests.waiting import wait_until

CHILD = (
    "import os, sys, threading\n"
    "name = sys.argv[1]\n"
    "fh = open(name, 'wb'); fh.write(b'x' * (1 << 20)); fh.flush(); os.unlink(name)\n"
    "sum(range(3 * 10 ** 6))\n"
    "print('ready', flush=True)\n"
    "threading.Event().wait()\n"
)


def _child(tmp_path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "held")], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_the_held_stat_answers_as_the_file_does_and_nothing_once_reaped(tmp_path):
    proc = _child(tmp_path)
    held = worker_watch.ProcStat(proc.pid)
    try:
        assert worker_watch.cpu_seconds(proc.pid, held) > 0
        assert abs(worker_watch.cpu_seconds(proc.pid, held) - worker_watch.cpu_seconds(proc.pid)) < 0.05
        assert worker_watch.thread_count(proc.pid, held) == worker_watch.task_count(proc.pid) == 1
        assert not worker_watch.is_stopped(proc.pid, held)
        os.kill(proc.pid, signal.SIGSTOP)
        wait_until(lambda: worker_watch.is_stopped(proc.pid, held), what="the child shown as stopped")
        assert worker_watch.is_stopped(proc.pid)
        # A deleted file the process still holds open: found through the held fd folder as by path.
        assert worker_watch.deleted_open_bytes(proc.pid, False, held) >= 1 << 20
        assert worker_watch.deleted_open_bytes(proc.pid, False, held) == worker_watch.deleted_open_bytes(
            proc.pid, False)
        proc.kill()
        proc.wait()
        # Reaped: the held descriptors read nothing (a new process with this pid would not be read either).
        assert held.fields() == []
        assert worker_watch.cpu_seconds(proc.pid, held) == 0.0
        assert worker_watch.thread_count(proc.pid, held) == -1
        assert not worker_watch.is_stopped(proc.pid, held)
        assert worker_watch.deleted_open_bytes(proc.pid, False, held) == 0
    finally:
        held.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert held.fields() == [] and held.fd == held.fd_dir == -1


SPINNER = (
    "import threading\n"
    "def spin():\n    while True: pass\n"
    "threading.Thread(target=spin, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "threading.Event().wait()\n"
)


class _Worker:
    """What the watch reads of a worker: its pid, whether it is dead, its held stat (reads counted)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.pid, self.dead, self.reads = proc.pid, False, 0
        held = worker_watch.ProcStat(proc.pid)
        real = held.fields

        def counted() -> list[bytes]:
            self.reads += 1
            return real()

        held.fields = counted  # type: ignore[method-assign]
        self.proc_stat = held


def test_the_end_of_a_run_reads_threads_and_cpu_once_and_still_finds_a_running_thread(tmp_path):
    one = _child(tmp_path)
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER], stdout=subprocess.PIPE)
    try:
        worker = _Worker(one)
        left, cpu = worker_watch.end_of_run(worker, 0.5)  # type: ignore[arg-type]
        assert not left and worker.reads == 1
        assert abs(cpu - worker_watch.cpu_seconds(one.pid)) < 0.05 and cpu > 0
        assert spinner.stdout is not None and spinner.stdout.readline() == b"ready\n"
        busy = _Worker(spinner)
        left, cpu = worker_watch.end_of_run(busy, 0.5)  # type: ignore[arg-type]
        assert left and cpu > 0
        busy.dead = True
        assert worker_watch.end_of_run(busy, 0.5) == (False, 0.0)  # type: ignore[arg-type]
        worker.proc_stat.close()
        busy.proc_stat.close()
    finally:
        for proc in (one, spinner):
            proc.kill()
            proc.wait()


def test_a_process_gone_before_its_stat_was_opened_reads_nothing():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    held = worker_watch.ProcStat(proc.pid)
    assert held.fd == -1 and held.fields() == [] and worker_watch.cpu_seconds(proc.pid, held) == 0.0
    held.close()


def test_frames_longer_than_one_read_and_several_in_one_read_arrive_whole():
    r, w = os.pipe()
    big = {"op": "log", "text": "y" * (5 * READ_CHUNK)}
    small = {"op": "result", "id": "a"}
    data = frame(big) + frame(small) + frame(small)
    reader = FrameReader(r)
    try:
        written = 0
        os.set_blocking(w, False)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3:
            assert time.monotonic() < deadline, f"only {len(got)} frames arrived"
            if written < len(data):
                try:
                    written += os.write(w, data[written:written + 3 * READ_CHUNK])
                except BlockingIOError:
                    pass
            msg = reader.read(timeout=0.01)
            if msg is not None:
                got.append(msg)
        assert got == [big, small, small]
    finally:
        os.close(r)
        os.close(w)
