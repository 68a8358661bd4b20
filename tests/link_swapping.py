"""An attacker's race for tests: a process that keeps swapping one workspace name between a regular file and a
link out of the workspace (what code in the sandbox can do with a thread while the app reads that name)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.waiting import wait_until

_SWAPPER = (
    "import os, sys\n"
    "os.chdir(sys.argv[1])\n"
    "while True:\n"
    "    for source in ('.regular', '.link'):\n"
    "        try:\n"
    "            os.link(source, '.next', follow_symlinks=False); os.replace('.next', sys.argv[2])\n"
    "        except OSError:\n"
    "            pass\n")


@contextmanager
def swapping(workspace: Path, name: str, inside: Path, outside: Path) -> Iterator[None]:
    """While the block runs, `workspace/name` is, in turn, a hard link to `inside` (a file of the workspace) and
    a symbolic link to `outside`; the swapping has started when the block begins and is stopped after it."""
    os.link(inside, workspace / ".regular")
    (workspace / ".link").symlink_to(outside)
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(workspace), name])
    try:
        wait_until(lambda: (workspace / name).is_symlink() or (workspace / name).exists(),
                   what="the swapping to start")
        yield
    finally:
        swapper.kill()
        swapper.wait(5)
