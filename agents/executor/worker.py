"""Entry point of the sandbox worker process.

Started by the app as ``python -I -B -c BOOT <package dir> <fd in> <fd out> agentdeck-app:<app pid>``:
the bootstrap registers this folder as a private package so the worker never
imports the app's ``agents`` package. Sequence: read the init message, preload
and patch the authorized heavy libraries, confine the process, report which
layers are active, then serve run/tools/vars messages until told to exit.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from types import FrameType
from typing import Any

from . import confinement
from .audit import AuditPolicy
from .execution import Executor, signal_handlers
from .guarded_runtime import Runtime
from .imports import ImportPolicy, ModuleViews
from .library_patches import patch_loaded_libraries
from .protocol import ChannelClosed, FrameReader, write_frame

HEAVY_LIBRARIES = ("numpy", "pandas", "matplotlib", "scipy", "sklearn", "seaborn", "PIL", "jinja2")
WORKER_PACKAGE = __name__.rpartition(".")[0]


#: Printed frames keep this many columns before pandas elides the middle ones with "...": the chat shows a
#: printed frame as a table (cut at 12 columns, with a note), which can only show the columns that were printed.
FRAME_COLUMNS = 20


def _frames_printed_whole(pandas: Any) -> None:
    """Frames print every column up to FRAME_COLUMNS on one line each, whatever the (absent) terminal's width;
    pandas' default of 80 characters cut an 8-column table to 6."""
    pandas.set_option("display.max_columns", FRAME_COLUMNS)
    pandas.set_option("display.width", 10_000)
    pandas.set_option("display.expand_frame_repr", False)


def _preload(authorized: list[str], warnings: list[str]) -> None:
    """Import heavy authorized libraries while reading files is still unrestricted."""
    allow_all = "*" in authorized
    tops = {a.partition(".")[0] for a in authorized}
    for name in HEAVY_LIBRARIES:
        if not (allow_all or name in tops):
            continue
        try:
            if name == "matplotlib":
                import matplotlib

                matplotlib.use("Agg")
                importlib.import_module("matplotlib.pyplot")
            elif name == "pandas":
                _frames_printed_whole(importlib.import_module("pandas"))
            else:
                importlib.import_module(name)
        except ImportError:
            if not allow_all:
                warnings.append(f"authorized library '{name}' is not installed")
        except Exception as exc:
            warnings.append(f"preloading '{name}' failed: {type(exc).__name__}: {exc}")
    # Modules the worker and common code need later, loaded before the file system closes.
    for name in ("typing", "dataclasses", "asyncio", "decimal", "zoneinfo", "json", "re",
                 "traceback", "linecache", "collections", "statistics", "random", "datetime", "uuid"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    patch_loaded_libraries()


def _setup(init: dict[str, Any],
           fd_out: int) -> tuple[Runtime, AuditPolicy, dict[str, Any], list[confinement.LayerStatus], list[str]]:
    warnings: list[str] = []
    sys.dont_write_bytecode = True
    workdir = os.path.realpath(init["workdir"])
    _preload(init.get("authorized_imports", []), warnings)
    cfg = confinement.ConfinementConfig(
        workdir=workdir, tmpdir=init["tmpdir"], app_root=init["app_root"],
        memory_limit_mb=init["memory_limit_mb"], max_file_size_mb=init["max_file_size_mb"],
        max_open_files=init["max_open_files"], extra_read_paths=init.get("extra_read_paths", []),
        use_landlock=init.get("use_landlock", True), use_seccomp=init.get("use_seccomp", True),
        uid=init.get("uid"), new_root=init.get("new_root"),
    )
    roots = confinement.read_roots(cfg)
    layers = confinement.apply(cfg)
    landlock_on = any(layer.name == "landlock" and layer.active for layer in layers)
    audit = AuditPolicy(workdir, init["tmpdir"], roots, init["max_files_written"],
                        filesystem_fallback=not landlock_on)
    if init.get("python_layers", True):
        audit.install()
    else:  # the attack test suite: code runs as if every Python-level layer had been bypassed
        layers.append(confinement.LayerStatus("python_layers", False, "disabled for attack testing"))
    if init.get("python_layers", True):
        detail = "always on, cannot be paused" + ("" if landlock_on else "; also guards file paths (Landlock missing)")
        layers.append(confinement.LayerStatus("audit_hook", True, detail))
    else:
        layers.append(confinement.LayerStatus("audit_hook", False, "not installed (python_layers=False)"))
    policy = ImportPolicy(init.get("authorized_imports", []))
    runtime = Runtime(ModuleViews, policy)
    settings = dict(init, workdir=workdir, fd_out=fd_out)
    return runtime, audit, settings, layers, warnings


def main(argv: list[str]) -> None:
    fd_in, fd_out = int(argv[2]), int(argv[3])
    reader = FrameReader(fd_in)

    def write(msg: dict[str, Any]) -> None:
        write_frame(fd_out, msg)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    init = reader.read()
    if init.get("sys_path"):  # -S: the app's computed path replaces site's (no .pth file ever runs)
        sys.path[:] = [p for p in init["sys_path"] if isinstance(p, str)] + sys.path
    if init.get("nice"):  # before the preloading: starting 16 sandboxes at once is CPU-heavy
        os.nice(int(init["nice"]))
    if init.get("op") == "preload":
        # A warm start (agents/executor/pool.py): the libraries are loaded now, before any session is known; the
        # rest of the settings (workspace, limits, identity) and the confinement come with the `init` frame. No
        # code has run yet, so nothing can have touched what the worker loaded.
        _preload(init.get("authorized_imports", []), [])
        init = reader.read()
    try:
        runtime, audit, settings, layers, warnings = _setup(init, fd_out)
    except confinement.ConfinementError as exc:
        write({"op": "refused", "error": str(exc)})
        return
    executor = Executor(runtime, audit, settings, write, reader.read)
    executor.set_tools(init.get("tools", []))
    run_flag = executor.run_flag

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        # One interrupt per run: the app repeats SIGINT until the run ends (one sent before this worker read the
        # run request finds nothing running), and a repeat must not break the handling of the first.
        if run_flag[0]:
            run_flag[0] = False
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    executor.signal_defaults = signal_handlers()
    write({"op": "ready", "pid": os.getpid(), "warnings": warnings,
           "layers": [{"name": x.name, "active": x.active, "detail": x.detail} for x in layers]})
    while True:
        try:
            msg = reader.read()
        except ChannelClosed:
            return
        except KeyboardInterrupt:
            continue
        op = msg.get("op")
        try:
            if op == "run":
                write(executor.run(msg))
            elif op == "tools":
                executor.set_tools(msg.get("names", []))
            elif op == "vars":
                write(_set_vars(executor, msg))
            elif op == "exit":
                return
        except (BrokenPipeError, ChannelClosed):
            return
        except BaseException as exc:
            if op == "run":
                try:
                    write({"op": "result", "id": msg.get("id"), "output": None, "output_type": "NoneType",
                           "is_final": False, "error": f"{type(exc).__name__}: {exc}",
                           "error_type": type(exc).__name__, "logs": ""})
                except BaseException:
                    return


def _set_vars(executor: Executor, msg: dict[str, Any]) -> dict[str, Any]:
    values = msg.get("values") or {}
    protected = executor.runtime.protected
    for name in values:
        if not name.isidentifier() or name.startswith("_") or name in protected:
            return {"op": "vars_done", "ok": False, "error": f"cannot bind variable '{name}'"}
    executor.ns.update(values)
    return {"op": "vars_done", "ok": True}
