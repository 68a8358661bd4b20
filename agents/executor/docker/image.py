"""The sandbox image: assembled from this machine's own Python and libraries, imported without a registry.

Why not a base image from a registry: none is reachable (and a pulled image would run other versions than the
ones the test suite ran against). The image is a tree holding exactly what the worker needs, at the paths it has
on the host, so the worker's import path and its read roots stay the same inside the container:

- the interpreter (``sys.base_prefix``: binary, shared library, standard library) and its C libraries' closure
  (``ldd`` of every shared object taken, plus the dynamic loader);
- the distributions the sandbox may import (``SANDBOX_DISTRIBUTIONS`` and their requirements, no extras) from the
  app's site-packages, file by file as their metadata lists them;
- the worker package (``agents/executor``, its Python files only) at ``WORKER_DIR``;
- a matplotlib font cache built once at ``MPL_CACHE`` (the container's root is read-only later).

The tag is a hash of every file's path, mode and content, so an unchanged tree is never imported twice and a
changed library gives a new image. ``python -m agents.executor.docker.image`` builds it (``make sandbox-image``).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import secrets
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from ..local import process as _process

IMAGE_REPO = "agentdeck-sandbox"
WORKER_DIR = "/opt/agentdeck/executor"
MPL_CACHE = "/opt/agentdeck/mplcache"
NEW_ROOT = "/opt/agentdeck/root"  # the mount point of the worker's private view (its root is read-only later)
#: What the sandbox's code may import beyond the standard library (the app's default authorized imports and
#: the libraries the worker preloads); their own requirements come along.
SANDBOX_DISTRIBUTIONS = ("numpy", "pandas", "pyarrow", "matplotlib", "seaborn", "openpyxl", "xlrd", "scipy", "pypdf",
                         "scikit-learn", "pillow", "jinja2")
SKIP_PARTS = ("/site-packages/", "_tkinter", "/config-3.", "/test/", "/tests/", "/idlelib/", "/tkinter/",
              "/ensurepip/", "/lib2to3/")
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class ImageBuildError(RuntimeError):
    """The sandbox image could not be assembled or imported; the message says what is missing."""


@dataclass
class RootTree:
    """Host files (by their absolute path) and generated files that make up the image."""

    files: dict[str, str] = field(default_factory=dict)  # path in the image -> path on the host
    generated: dict[str, bytes] = field(default_factory=dict)

    def add(self, host_path: str, image_path: str | None = None) -> None:
        image_path = image_path or host_path
        if any(part in image_path for part in SKIP_PARTS):
            return
        self.files.setdefault(image_path, host_path)

    def add_tree(self, root: str, image_root: str | None = None) -> None:
        for folder, _dirs, names in os.walk(root):
            for name in names:
                host = os.path.join(folder, name)
                self.add(host, None if image_root is None else image_root + host[len(root):])


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_closure(roots: Iterable[str]) -> list[metadata.Distribution]:
    """The installed distributions named, with their requirements (markers evaluated, extras left out)."""
    from packaging.requirements import Requirement  # pip's and setuptools' dependency, in every venv

    seen: dict[str, metadata.Distribution] = {}
    todo = [_canonical(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed: the sandbox reports it as such when authorized
        seen[name] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(_canonical(req.name))
    return [seen[k] for k in sorted(seen)]


def _shared_objects(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if ".so" in os.path.basename(path) or os.access(path, os.X_OK) and path.endswith("python3.11"):
            yield path


def library_closure(objects: Iterable[str]) -> set[str]:
    """The C libraries the given shared objects load (``ldd``), by real path, plus the symlinks to them."""
    found: set[str] = set()
    batch = [p for p in objects if os.path.isfile(p)]
    for start in range(0, len(batch), 200):
        out = subprocess.run(["ldd", *batch[start:start + 200]], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                found.add(match.group(1))
    return found


def assemble(extra_distributions: Iterable[str] = ()) -> RootTree:
    """Collect the image's files from this machine (no network)."""
    tree = RootTree()
    base = os.path.realpath(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    exe = os.path.realpath(os.path.join(base, "bin", version))
    if not os.path.isfile(exe):
        exe = os.path.realpath(sys.executable)
    tree.add(exe)
    tree.add_tree(os.path.join(base, "lib", version))
    for name in os.listdir(os.path.join(base, "lib")):
        path = os.path.join(base, "lib", name)
        if name.startswith("libpython") and ".so" in name:
            if os.path.islink(path):
                tree.generated[path] = b"symlink:" + os.readlink(path).encode()
            else:
                tree.add(path)
    for dist in distribution_closure([*SANDBOX_DISTRIBUTIONS, *extra_distributions]):
        for rel in dist.files or []:
            host = os.path.realpath(str(dist.locate_file(rel)))
            if os.path.isfile(host) and not str(rel).startswith(".."):
                tree.files.setdefault(host, host)  # site-packages: SKIP_PARTS is for the standard library
    tree.add_tree(_process.PACKAGE_DIR, WORKER_DIR)
    # The worker's own modules, and the remote sandbox's supervisor (remote/, with the local backend's watch it
    # reuses, local/); the other backends (docker/, the services' clients) are the app's side only.
    tree.files = {k: v for k, v in tree.files.items() if not k.startswith(WORKER_DIR) or _image_module(k)}
    objects = [host for host in tree.files.values() if ".so" in os.path.basename(host)] + [exe]
    for lib in library_closure(objects) | {"/lib64/ld-linux-x86-64.so.2"}:
        lib = os.path.normpath(lib)
        if os.path.exists(lib):
            tree.files.setdefault(os.path.realpath(lib), os.path.realpath(lib))
            if os.path.islink(lib):  # the name the loader asks for (libc.so.6) next to the file
                tree.generated[lib] = b"symlink:" + os.path.realpath(lib).encode()
    tree.generated["/usr/local/bin/python3"] = b"symlink:" + exe.encode()
    tree.generated["/etc/passwd"] = b"root:x:0:0::/:/nonexistent\nsandbox:x:1000:1000::/:/nonexistent\n"
    tree.generated["/etc/group"] = b"root:x:0:\nsandbox:x:1000:\n"
    return tree


def _image_module(path: str) -> bool:
    """Whether a file of the executor folder belongs in the image: its top-level modules, local/ and remote/."""
    rel = path[len(WORKER_DIR) + 1:]
    return rel.endswith(".py") and (rel.count("/") == 0 or rel.split("/")[0] in ("local", "remote") and
                                    rel.count("/") == 1)


def _merged_usr_links() -> dict[str, str]:
    """On a merged-/usr host /lib is a link to usr/lib: the image keeps that shape so loader paths resolve."""
    return {top: os.readlink(top) for top in ("/lib", "/lib64", "/bin", "/sbin") if os.path.islink(top)}


def tree_hash(tree: RootTree) -> str:
    digest = hashlib.sha256()
    for path in sorted(tree.files):
        host = tree.files[path]
        st = os.stat(host)
        digest.update(f"{path}\0{st.st_mode & 0o777}\0{st.st_size}\0".encode())
        if path.startswith(WORKER_DIR) or st.st_size < 4096:
            with open(host, "rb") as fh:  # the worker's code by content: an edit is never missed
                digest.update(fh.read())
        else:  # installed libraries: a reinstall changes the time, reading 450 MB each start would cost seconds
            digest.update(str(st.st_mtime_ns).encode())
    for path in sorted(tree.generated):
        digest.update(f"{path}\0".encode() + tree.generated[path])
    for top, target in sorted(_merged_usr_links().items()):
        digest.update(f"{top}->{target}".encode())
    return digest.hexdigest()[:16]


def write_tar(tree: RootTree, out: io.BufferedIOBase | Any) -> None:
    """The tree as a tar stream, owned by root, parent folders first (a deterministic order)."""
    with tarfile.open(fileobj=out, mode="w|") as tar:
        dirs: set[str] = set()

        def add_dir(path: str) -> None:
            if path in ("", "/") or path in dirs:
                return
            add_dir(os.path.dirname(path))
            dirs.add(path)
            info = tarfile.TarInfo(path.lstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)

        links = _merged_usr_links()
        for top, target in sorted(links.items()):
            info = tarfile.TarInfo(top.lstrip("/"))
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for folder in ("/tmp", "/proc", "/dev", "/sys", "/etc", MPL_CACHE, NEW_ROOT):
            add_dir(folder)

        def image_name(path: str) -> str:
            for top, target in links.items():  # /lib/x -> usr/lib/x: written where the link points
                if path.startswith(top + "/"):
                    return os.path.join(os.path.dirname(top), target, path[len(top) + 1:])
            return path

        written: set[str] = set()
        for path in sorted(tree.files):
            name = image_name(path)
            if name in written:
                continue
            written.add(name)
            add_dir(os.path.dirname(name))
            st = os.stat(tree.files[path])
            info = tarfile.TarInfo(name.lstrip("/"))
            # The real modification time: a compiled module (.pyc, shipped along) is used only when it matches.
            info.size, info.mode, info.mtime = st.st_size, (st.st_mode & 0o755) | 0o444, int(st.st_mtime)
            with open(tree.files[path], "rb") as fh:
                tar.addfile(info, fh)
        for path in sorted(tree.generated):
            name = image_name(path)
            if name in written:
                continue
            written.add(name)
            add_dir(os.path.dirname(name))
            data = tree.generated[path]
            info = tarfile.TarInfo(name.lstrip("/"))
            if data.startswith(b"symlink:"):
                info.type, info.linkname = tarfile.SYMTYPE, data[len(b"symlink:"):].decode()
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))


def site_packages_paths() -> list[str]:
    """The worker's import path inside the image: the same folders as on the host, minus the app's own."""
    return _process.worker_sys_path()


def image_tag(tree: RootTree | None = None) -> str:
    return f"{IMAGE_REPO}:{tree_hash(tree or assemble())}"


def ensure_image(client: Any, tree: RootTree | None = None, log: Any = None) -> str:
    """The tag of the sandbox image for this machine's libraries, imported first if the daemon lacks it."""
    import tempfile

    import docker.errors  # type: ignore[import-untyped]

    tree = tree or assemble()
    tag = f"{IMAGE_REPO}:{tree_hash(tree)}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    # A base tag of this build's own: two processes finding the image missing at once (the test workers, two
    # replicas) each import and remove their own base; a shared one was removed by the first under the second.
    base = f"{tag}-base-{os.getpid()}-{secrets.token_hex(3)}"
    with tempfile.TemporaryDirectory(prefix="agentdeck-image-") as tmp:
        tar_path = os.path.join(tmp, "rootfs.tar")
        with open(tar_path, "wb") as fh:
            write_tar(tree, fh)
        if log:
            log(f"importing {os.path.getsize(tar_path) // (1024 * 1024)} MB as {base}")
        repo, _, name = base.partition(":")
        client.api.import_image_from_file(tar_path, repository=repo, tag=name)
    # The font cache, built once by the image's own matplotlib (the sandbox's root is read-only later).
    script = (f"import sys,os;sys.path[:0]={site_packages_paths()!r};os.environ['MPLCONFIGDIR']={MPL_CACHE!r};"
              "import matplotlib;matplotlib.use('Agg');import matplotlib.font_manager")
    container = client.containers.create(base, ["/usr/local/bin/python3", "-I", "-S", "-B", "-c", script],
                                         network_mode="none", user="0:0")
    try:
        container.start()
        status = container.wait(timeout=300)
        if status.get("StatusCode") != 0:
            logs = container.logs().decode("utf-8", "replace")[-1500:]
            raise ImageBuildError(f"the sandbox image's Python does not start: {logs}")
        repo, _, name = tag.partition(":")
        container.commit(repository=repo, tag=name)
    finally:
        container.remove(force=True)
        client.images.remove(base, noprune=False)
    remove_stale(client, keep=tag)
    return tag


def remove_stale(client: Any, keep: str) -> None:
    """Earlier builds (other libraries, other worker code) are dropped; one in use by a container stays. Only this
    repository's tags: a tag another name gave the same image (a test stand-in's own) keeps it for that user."""
    for old in client.images.list(name=IMAGE_REPO):
        if keep in old.tags:
            continue
        for old_tag in old.tags:
            if not old_tag.startswith(IMAGE_REPO + ":"):
                continue
            try:
                client.images.remove(old_tag)
            except Exception:
                continue


def main() -> None:
    from .daemon import connect

    client = connect()
    tree = assemble()
    print(f"{len(tree.files)} files; image {ensure_image(client, tree, log=print)}")


if __name__ == "__main__":
    main()
