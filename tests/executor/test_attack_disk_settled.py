"""The disk limits against code that waits for the app to stop listing its folders.

The app reuses a folder's listing from the last walk while the kernel says the folder is unchanged
(folder_listings.py): code that makes its folders, lets them settle over a few steps (their listings reused) and
then writes past a limit must be caught all the same, in the workspace and in the private temp folder: through a
file it opened steps ago, by growing a file in place (no folder changes), with hard links, with many small files.
The sandboxes run with ``python_layers=False``, as in test_attack_limits.py."""

from __future__ import annotations

import sys
import time

import pytest

from agents.executor import PythonSandbox
from agents.executor.folder_listings import SETTLE_FINE_NS
from tests.waiting import wait_until

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.usefixtures("sandbox_backend")]

#: Where the code makes its folders: the workspace (relative) or its private temp folder.
FOLDERS = {"workspace": "'d/e'", "temp": "os.path.join(tempfile.gettempdir(), 'd', 'e')"}
SETUP = "import os, tempfile\nsub = {folder}\nos.makedirs(sub)\n"
#: The file limit of the files tests, and the files the code makes past it: few, since a remote backend downloads
#: every file a run made before its supervisor counts them (400 took 40-150 s on a loaded machine, the window in
#: which a dropped stream left the count undone); how many says nothing of whether a settled folder is counted.
MAX_FILES, MADE = 30, 40


def _settle(sb: PythonSandbox) -> None:
    """Run empty steps until the app reuses the listings of the folders it walks after a run (the local and Docker
    hosts count them: the workspace's snapshot, the temp folder's disk count), or, where the count is out of
    reach (a supervisor elsewhere), until the folders have settled."""
    host = sb.host
    disk = getattr(host, "_disk", None)
    if disk is None or getattr(host, "_listings", None) is None:
        start = time.monotonic()
        wait_until(lambda: sb.run("pass") and time.monotonic() - start > 6 * SETTLE_FINE_NS / 1e9,
                   what="the folders to settle")
        return
    listings = [host._listings, disk._listings[host.tmpdir]]

    def reused_all() -> bool:
        before = [folder.reused for folder in listings]
        sb.run("pass")
        return all(folder.reused > count for folder, count in zip(listings, before, strict=True))

    wait_until(reused_all, what="the app to reuse the folders' listings")


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_a_file_opened_steps_ago_cannot_grow_past_the_limit(tmp_path, folder):
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_mb=5) as sb:
        r = sb.run(SETUP.format(folder=FOLDERS[folder])
                   + "f = open(os.path.join(sub, 'grow.bin'), 'wb')\nf.write(b'x')\nf.flush()")
        assert r.error is None, r.error
        _settle(sb)
        r = sb.run("f.write(b'A' * (8 << 20))\nf.flush()")
        assert r.error_type == "DiskLimitError" and "max_disk_mb" in r.error, (r.error, r.logs)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_a_file_grown_in_place_is_counted(tmp_path, folder):
    """Opening an existing file and appending to it changes no folder."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_mb=5) as sb:
        r = sb.run(SETUP.format(folder=FOLDERS[folder]) + "open(os.path.join(sub, 'g.bin'), 'wb').write(b'x')")
        assert r.error is None, r.error
        _settle(sb)
        r = sb.run("with open(os.path.join(sub, 'g.bin'), 'r+b') as g:\n"
                   "    g.seek(0, 2)\n    g.write(b'A' * (8 << 20))")
        assert r.error_type == "DiskLimitError" and "max_disk_mb" in r.error, (r.error, r.logs)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_hard_links_in_a_settled_folder_are_counted(tmp_path, folder):
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_files=MAX_FILES) as sb:
        r = sb.run(SETUP.format(folder=FOLDERS[folder]) + "open(os.path.join(sub, 'one.txt'), 'w').write('1')")
        assert r.error is None, r.error
        _settle(sb)
        r = sb.run(f"for i in range({MADE}):\n"
                   "    os.link(os.path.join(sub, 'one.txt'), os.path.join(sub, f'l{i}'))")
        assert r.error_type == "DiskLimitError" and "max_disk_files" in r.error, (r.error, r.logs)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_many_small_files_in_a_settled_folder_are_counted(tmp_path, folder):
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_files=MAX_FILES) as sb:
        r = sb.run(SETUP.format(folder=FOLDERS[folder]))
        assert r.error is None, r.error
        _settle(sb)
        r = sb.run(f"for i in range({MADE}):\n    open(os.path.join(sub, f's{{i}}'), 'w').close()")
        assert r.error_type == "DiskLimitError" and "max_disk_files" in r.error, (r.error, r.logs)


def test_a_file_made_in_a_settled_subfolder_is_the_steps(tmp_path):
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False) as sb:
        sb.run(SETUP.format(folder=FOLDERS["workspace"]))
        _settle(sb)
        r = sb.run("open('d/e/chart.png', 'wb').write(b'png')")
        assert [a.path for a in r.artifacts] == ["d/e/chart.png"], r.artifacts
