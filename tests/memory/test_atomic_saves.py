"""Saves are atomic and serialised: concurrent writers (threads and processes) never tear a file or fail."""
from __future__ import annotations

import errno
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from agents.memory.atomic import atomic_write_bytes


def _writer(path: str, tag: str, rounds: int) -> None:
    for i in range(rounds):
        atomic_write_bytes(path, json.dumps({"tag": tag, "i": i, "pad": "x" * 20000}).encode())


def test_200_concurrent_save_pairs_leave_a_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "memory.json"
    atomic_write_bytes(target, b'{"tag": "start", "i": -1, "pad": ""}')
    torn: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                json.loads(target.read_bytes())
            except ValueError as exc:
                torn.append(str(exc))

    watcher = threading.Thread(target=reader)
    watcher.start()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(target), f"p{n}", 100)) for n in range(2)]
    threads = [threading.Thread(target=_writer, args=(str(target), f"t{n}", 100)) for n in range(2)]
    for worker in (*procs, *threads):
        worker.start()
    for thread in threads:
        thread.join()
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0  # no save failed
    stop.set()
    watcher.join()
    assert torn == []
    final = json.loads(target.read_bytes())
    assert final["i"] == 99
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_failed_save_keeps_the_old_version(tmp_path: Path, monkeypatch) -> None:
    import os

    target = tmp_path / "meta.json"
    atomic_write_bytes(target, b'{"v": 1}')

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    try:
        atomic_write_bytes(target, b'{"v": 2}')
    except OSError as exc:
        assert exc.errno == 28
    else:
        raise AssertionError("the failed save was not reported")
    assert json.loads(target.read_bytes()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="mounting a tiny tmpfs needs root")
def test_a_really_full_filesystem_keeps_the_older_save_and_no_temporary_file(tmp_path):
    """A 64 KB tmpfs, filled by a save that does not fit: the error is ENOSPC, the older file is whole."""
    disk = tmp_path / "tiny"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        target = disk / "memory.json"
        atomic_write_bytes(target, b"older save " * 1000)
        with pytest.raises(OSError) as caught:
            atomic_write_bytes(target, b"x" * 200_000)
        assert caught.value.errno == errno.ENOSPC
        assert target.read_bytes() == b"older save " * 1000
        assert sorted(p.name for p in disk.iterdir()) == [".memory.json.lock", "memory.json"]  # no temporary file
    finally:
        subprocess.run(["umount", str(disk)], check=False)
