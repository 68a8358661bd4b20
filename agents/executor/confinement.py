"""Layer 4: operating-system confinement applied inside the worker before any code runs.

Order matters: libraries are preloaded first (so their files are read while
everything is still allowed), then capabilities are dropped (root stays uid 0
but loses the power to raise limits or bypass file permissions), resource
limits are set, Landlock restricts the file system, network and signals, and
last the seccomp filter refuses new processes and sockets. Each step reports
whether it worked; nothing fails silently.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from dataclasses import dataclass, field

from . import landlock, seccomp

_CAP_VERSION_3 = 0x20080522
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
MB = 1024 * 1024


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


def drop_capabilities() -> str:
    """Drop every capability (a no-op for an ordinary user)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() == 0:
        for cap in range(64):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                break
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    return "all capabilities dropped" + (" (uid 0 without privileges)" if os.geteuid() == 0 else "")


def set_limits(cfg: ConfinementConfig) -> str:
    """Memory (address space above what the preloaded libraries use), file size, files, cores."""
    baseline = _vm_size_bytes()
    mem = baseline + cfg.memory_limit_mb * MB
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    fsize = cfg.max_file_size_mb * MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg.max_open_files, cfg.max_open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    return (f"address space {mem // MB} MB ({cfg.memory_limit_mb} MB above the {baseline // MB} MB "
            f"baseline), file size {cfg.max_file_size_mb} MB, {cfg.max_open_files} open files")


def set_cpu_limit(seconds: float) -> None:
    """Per-run CPU-time backstop (the app's watchdog is the primary timeout)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    total = int(used.ru_utime + used.ru_stime + seconds) + 2
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (total, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass


def read_roots(cfg: ConfinementConfig) -> list[str]:
    """Folders Python and its libraries need to read, never the app itself or /etc."""
    app_root = os.path.realpath(cfg.app_root)
    candidates = [os.path.dirname(os.__file__), os.path.join(sys.base_prefix, "lib"),
                  os.path.join(sys.prefix, "lib")]
    candidates += [p for p in sys.path if p]
    candidates += ["/usr/lib", "/lib", "/lib64", "/usr/lib64", "/usr/local/lib",
                   "/usr/share/fonts", "/usr/share/zoneinfo", "/usr/share/matplotlib"]
    candidates += list(cfg.extra_read_paths)
    roots: list[str] = []
    for path in candidates:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            continue
        if real == app_root or app_root.startswith(real.rstrip("/") + "/"):
            continue  # a parent of the app (or the app itself) would expose its files
        if real not in roots:
            roots.append(real)
    return roots


def apply(cfg: ConfinementConfig) -> list[LayerStatus]:
    """Apply every OS layer that this machine offers; return what is active."""
    layers: list[LayerStatus] = []

    def attempt(name, fn):
        try:
            layers.append(LayerStatus(name, True, fn()))
        except Exception as exc:  # noqa: BLE001 - report, never hide
            layers.append(LayerStatus(name, False, f"{type(exc).__name__}: {exc}"))

    attempt("capabilities", drop_capabilities)
    attempt("rlimits", lambda: set_limits(cfg))
    roots = read_roots(cfg)

    def do_landlock():
        if not cfg.use_landlock:
            raise RuntimeError("disabled by configuration")
        res = landlock.restrict(roots, [cfg.workdir, cfg.tmpdir],
                                read_write_files=["/dev/null", "/dev/urandom", "/dev/zero"])
        parts = [f"ABI {res.abi}", "file system: read-only libraries, read-write workspace and temp"]
        parts.append("TCP bind/connect denied" if res.network else "no network rules (ABI < 4)")
        parts.append("signals and abstract sockets scoped" if res.scoped else "no scoping (ABI < 6)")
        return "; ".join(parts)

    attempt("landlock", do_landlock)

    def do_seccomp():
        if not cfg.use_seccomp:
            raise RuntimeError("disabled by configuration")
        arch = seccomp.install()
        return f"{arch}: no fork/exec/clone3, no new sockets, signals only to itself"

    attempt("seccomp", do_seccomp)
    return layers
