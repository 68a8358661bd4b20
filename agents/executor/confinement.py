"""Layer 4: operating-system confinement applied inside the worker before any code runs.

The kernel is the boundary: everything here holds even for code that gets past the Python-level
guard and holds the real ``os`` and ``ctypes``. Order matters:

1. libraries are preloaded first (their files are read while everything is still visible), with
   every thread pool limited to the calling thread, and the worker proves it is single-threaded:
   Landlock applies per thread, so a thread that predates it would be unconfined;
2. a private file system view (mount namespace, tmpfs root, read-only library binds);
3. resource limits;
4. identity: every capability dropped and, when the app runs as root, a user id of its own;
5. Landlock (file access, TCP, signals and abstract sockets);
6. seccomp (no processes, sockets, tracing, signals to others, kernel admin; metadata changes
   refused where neither the view nor a separate user id covers them).

The upload preview child (ui/uploads/preview_confinement.py) applies the same layers to the folder it reads
(``read_only``: nothing writable).

Layers 1, 4, 5 and 6 are required: if one cannot be applied the worker refuses to start, unless
the app explicitly disabled it (``use_landlock=False`` / ``use_seccomp=False``).
"""

from __future__ import annotations

import os
import platform
import resource
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from . import filesystem_view, identity, landlock, seccomp

MB = 1024 * 1024
DEVICE_FILES = ["/dev/null", "/dev/urandom", "/dev/zero"]
MAX_THREADS = 64  # tasks of the sandbox's own user id (RLIMIT_NPROC counts threads)


class ConfinementError(RuntimeError):
    """A required confinement layer could not be applied; the worker must not run code."""


@dataclass
class ConfinementConfig:
    workdir: str
    tmpdir: str
    app_root: str
    memory_limit_mb: int
    max_file_size_mb: int
    max_open_files: int
    extra_read_paths: list[str] = field(default_factory=list)
    use_landlock: bool = True
    use_seccomp: bool = True
    uid: int | None = None
    new_root: str | None = None
    # The workspace is only read and nothing is written anywhere (the upload preview child, ui/uploads/): it is
    # a read-only folder in the view and for Landlock, and there is no writable folder at all.
    read_only: bool = False


@dataclass
class LayerStatus:
    name: str
    active: bool
    detail: str


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def thread_count() -> int:
    """Kernel tasks of this process (Python threads and native ones, e.g. BLAS pools)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def check_single_threaded() -> str:
    count = thread_count()
    if count != 1:
        raise ConfinementError(
            f"the worker has {count} threads before confinement (a library started a thread pool while "
            "preloading); Landlock would not cover them, so the sandbox refuses to start")
    return "1 thread when confined (every thread pool limited before preloading)"


def tasks_of_this_user() -> int:
    """Kernel tasks (threads) running as this process's real user id now, read while /proc is visible."""
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh if line.startswith(("Uid:", "Threads:")))
                if int(fields["Uid"].split()[0]) == uid:
                    count += int(fields["Threads"].strip())
            except (OSError, KeyError, ValueError):
                continue
    return count


def set_limits(cfg: ConfinementConfig, baseline: int, user_tasks: int = 0) -> str:
    """Memory (address space above what the preloaded libraries use), file size, files, threads, cores."""
    mem = baseline + cfg.memory_limit_mb * MB
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    fsize = cfg.max_file_size_mb * MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg.max_open_files, cfg.max_open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # RLIMIT_NPROC counts every task of the user id: the id of this worker's own, or (not root) the app's
    # user, whose tasks now are counted in, so the worker can start MAX_THREADS more and no further.
    threads = MAX_THREADS if cfg.uid is not None else user_tasks + MAX_THREADS
    resource.setrlimit(resource.RLIMIT_NPROC, (threads, threads))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    return (f"address space {mem // MB} MB ({cfg.memory_limit_mb} MB above the {baseline // MB} MB "
            f"baseline), file size {cfg.max_file_size_mb} MB, {cfg.max_open_files} open files")


def read_roots(cfg: ConfinementConfig) -> list[str]:
    """Folders Python and its libraries need to read, never the app itself or /etc."""
    app_root = os.path.realpath(cfg.app_root)
    candidates = [os.path.dirname(os.__file__), os.path.join(sys.base_prefix, "lib"),
                  os.path.join(sys.prefix, "lib")]
    candidates += [p for p in sys.path if p]
    candidates += ["/usr/lib", "/lib", "/lib64", "/usr/lib64", "/usr/local/lib",
                   "/usr/share/fonts", "/usr/share/zoneinfo", "/usr/share/matplotlib"]
    candidates += list(cfg.extra_read_paths)
    private = [app_root, os.path.realpath(cfg.workdir), os.path.realpath(cfg.tmpdir)]
    roots: list[str] = []
    for path in candidates:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            continue
        if any(p == real or p.startswith(real.rstrip("/") + "/") for p in private):
            continue  # a folder holding the app, the workspace or the temp folder would expose their neighbours
        if real not in roots:
            roots.append(real)
    return roots


def apply(cfg: ConfinementConfig) -> list[LayerStatus]:
    """Apply every layer in order; raise ConfinementError when a required one cannot be applied."""
    layers: list[LayerStatus] = []

    def attempt(name: str, fn: Callable[[], str], required: bool) -> bool:
        try:
            layers.append(LayerStatus(name, True, fn()))
            return True
        except Exception as exc:
            layers.append(LayerStatus(name, False, f"{type(exc).__name__}: {exc}"))
            if required:
                raise ConfinementError(f"required sandbox layer '{name}' failed: {exc}") from exc
            return False

    attempt("single_thread", check_single_threaded, required=True)
    app_is_root = os.geteuid() == 0
    writable = [] if cfg.read_only else [cfg.workdir, cfg.tmpdir]
    readable_own = [cfg.workdir] if cfg.read_only else []
    baseline = _vm_size_bytes()  # read while /proc is still visible
    user_tasks = tasks_of_this_user() if cfg.uid is None else 0
    roots = read_roots(cfg)
    arch = platform.machine().lower()

    def do_view() -> str:
        if not cfg.new_root:
            raise RuntimeError("disabled by configuration")
        how = filesystem_view.enter_namespace()
        return how + "; " + filesystem_view.build(cfg.new_root, roots + readable_own, writable, DEVICE_FILES, arch)

    view = attempt("filesystem_view", do_view, required=False)
    os.chdir(cfg.workdir)
    attempt("rlimits", lambda: set_limits(cfg, baseline, user_tasks), required=True)
    attempt("identity", lambda: identity.become(cfg.uid), required=True)

    def do_landlock() -> str:
        if not cfg.use_landlock:
            raise RuntimeError("disabled by configuration")
        res = landlock.restrict(roots + readable_own, writable, read_write_files=DEVICE_FILES)
        what = "read-only libraries and workspace, nothing writable" if cfg.read_only else \
            "read-only libraries, read-write workspace and temp"
        parts = [f"ABI {res.abi}", f"file system: {what}"]
        parts.append("TCP bind/connect denied" if res.network else "no network rules (ABI < 4)")
        parts.append("signals and abstract sockets scoped" if res.scoped else "no scoping (ABI < 6)")
        return "; ".join(parts)

    attempt("landlock", do_landlock, required=cfg.use_landlock)
    # Without the private view and without an id of its own, the worker owns what the app owns:
    # Landlock does not cover mode, owner, time and attribute changes, so seccomp refuses them. A root
    # worker without an id of its own owns the device files bound into its view too.
    guard_metadata = cfg.uid is None and (not view or app_is_root)

    def do_seccomp() -> str:
        if not cfg.use_seccomp:
            raise RuntimeError("disabled by configuration")
        arch_name = seccomp.install(deny_metadata=guard_metadata)
        extra = "; mode/owner/time/xattr changes refused" if guard_metadata else ""
        return f"{arch_name}: no fork/exec/clone3, no new sockets, signals only to itself{extra}"

    attempt("seccomp", do_seccomp, required=cfg.use_seccomp)
    return layers
