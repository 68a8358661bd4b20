"""The Docker warm slots' sweep (agents/executor/docker/slot.py `sweep`) runs as root at the app's start and
takes names from the shared temp folder, where anyone (another local user, a process of a sandbox that can write
there) may make an entry named like a slot of a dead app. No Docker Engine is needed: the sweep is called as the
app's start calls it, on a temp folder of the test's own."""
from __future__ import annotations

import ctypes
import os
import tempfile
from pathlib import Path

import pytest

from agents.executor.docker import slot

_libc = ctypes.CDLL(None, use_errno=True)


def _dead_pid() -> int:
    return next(pid for pid in range(4_000_000, 3_000_000, -1) if not os.path.exists(f"/proc/{pid}"))


def _mounted(path: Path) -> bool:
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4] == str(path) for line in fh)


@pytest.fixture
def bound_folder(tmp_path: Path):
    """A folder that is a mount point of the app's (what /proc, a data volume or a live slot is)."""
    if not slot.supported():
        pytest.skip("the sweep only runs for an app that is root")
    victim = tmp_path / "a-mount-of-the-app"
    victim.mkdir()
    if _libc.mount(str(victim).encode(), str(victim).encode(), None, slot.MS_BIND, None) != 0:
        pytest.skip(f"cannot make a bind mount here: {os.strerror(ctypes.get_errno())}")
    try:
        yield victim
    finally:
        while _mounted(victim) and _libc.umount2(str(victim).encode(), slot.MNT_DETACH) == 0:
            pass


def test_a_link_named_like_a_dead_apps_slot_never_makes_the_sweep_detach_its_target(
        tmp_path: Path, bound_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "shared-tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(base))
    link = base / f"{slot.PREFIX}{_dead_pid()}-planted"
    link.symlink_to(bound_folder)
    assert _mounted(bound_folder)
    slot.sweep()
    assert _mounted(bound_folder), "the sweep detached the mount a planted link pointed to"
    assert link.is_symlink()  # not ours: left alone


def test_a_dead_apps_real_slot_is_still_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not slot.supported():
        pytest.skip("the sweep only runs for an app that is root")
    base = tmp_path / "shared-tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(base))
    left = base / f"{slot.PREFIX}{_dead_pid()}-abcd-x"
    left.mkdir()
    if _libc.mount(str(left).encode(), str(left).encode(), None, slot.MS_BIND, None) != 0:
        pytest.skip(f"cannot make a bind mount here: {os.strerror(ctypes.get_errno())}")
    try:
        assert slot.sweep() == 1
        assert not left.exists() and not _mounted(left)
    finally:
        if _mounted(left):
            _libc.umount2(str(left).encode(), slot.MNT_DETACH)
