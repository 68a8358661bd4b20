"""Trees deeper than a path can name, built as the sandbox's code can: one folder at a time, from its parent's
descriptor (never a path string). `DEEP_TREE_CODE` is the same, as code a worker runs."""
from __future__ import annotations

import os

PATH_MAX = 4096

#: Worker code: `deep(levels, data)` makes `levels` nested folders of 100-character names below the current folder,
#: with `data` in a file at the bottom, and returns the bottom's depth in characters.
DEEP_TREE_CODE = """
import os
def deep(levels, data=b'', name='d' * 100):
    fd = os.open('.', os.O_RDONLY)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    if data:
        out = os.open('bottom.bin', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, data)
        os.close(out)
    os.close(fd)
    return levels * (len(name) + 1)
"""


def make_deep(root: str, levels: int, data: bytes = b"", name: str = "d" * 100) -> list[str]:
    """Make `levels` nested folders named `name` below `root`, `data` in `bottom.bin` at the bottom; returns the
    names from `root` down to the file."""
    namespace: dict[str, object] = {}
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(root)
        exec(DEEP_TREE_CODE, namespace)  # the same code the attack tests send to a worker
        namespace["deep"](levels, data, name)  # type: ignore[operator]
    finally:
        os.fchdir(here)
        os.close(here)
    return [name] * levels + ["bottom.bin"]


def read_deep(root: str, names: list[str]) -> bytes | None:
    """The file at the end of `names` below `root`, opened one name at a time (None if any part is missing)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for name in names[:-1]:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        out = os.open(names[-1], os.O_RDONLY, dir_fd=fd)
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)
    with os.fdopen(out, "rb") as fh:
        return fh.read()


def remove_all(root: str) -> None:
    """Remove `root` and everything below, at any depth (shutil.rmtree recurses, and fails past about 1,000)."""
    from agents.executor.tree_walk import remove_tree

    why = remove_tree(root)
    if why is not None:
        raise OSError(why)
