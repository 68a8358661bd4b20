"""Layer 2: which modules code may import, and what it sees of them.

Code never receives a real module object. ``import x`` returns a *view*: a
module whose namespace is a filtered copy of the real one, so reading
attributes costs the same as on the real module. Submodules become views on
first access, unauthorized ones (``pandas.io.common.os``, ``numpy.ctypeslib``)
are refused, private names are hidden, and dangerous builtins re-exported by a
library are swapped for the sandbox's guarded versions.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NoReturn

# Modules any sandbox may import (plus what the app authorizes).
SAFE_MODULES = frozenset(
    """collections datetime itertools math queue random re stat statistics time
    unicodedata json decimal fractions functools operator string textwrap heapq bisect
    copy dataclasses enum typing abc numbers cmath calendar zoneinfo csv uuid hashlib
    base64 struct io asyncio os.path posixpath pathlib glob pprint contextlib difflib
    array hmac zlib secrets warnings shutil""".split()
)
# Submodules refused even when their package is authorized (unless "*").
DENIED_MODULES = frozenset(
    """numpy.ctypeslib numpy.f2py numpy.distutils numpy.testing._private pandas.io.clipboard
    matplotlib.testing asyncio.subprocess asyncio.unix_events""".split()
)
# Origins (``obj.__module__`` top level) whose objects never appear in a view.
DENIED_ORIGINS = frozenset(
    """os posix nt sys subprocess _posixsubprocess ctypes _ctypes socket _socket
    importlib _imp marshal pickle _pickle gc inspect signal _signal pty fcntl
    resource mmap multiprocessing _thread threading runpy code codeop""".split()
)
WORKER_PACKAGE = "_agentdeck_sandbox"
# Modules whose purpose is unpickling (arbitrary code by design), refused below any authorized package:
# ``pandas.compat.pickle_compat.loads``, ``pandas.io.pickle``, ``pickle`` itself, ``joblib``'s loaders.
UNPICKLING_MARKERS = ("pickle", "shelve", "dill", "joblib", "copyreg", "marshal")
# What ``import sys`` shows when the app authorizes it: facts about the interpreter, never its state
# (no ``modules``, ``path``, frames, hooks or the worker's own objects).
SYS_VIEW = frozenset(
    """version version_info hexversion platform byteorder maxsize maxunicode float_info int_info
    float_repr_style implementation api_version copyright getrecursionlimit getsizeof
    getdefaultencoding getfilesystemencoding stdout stderr exc_info exception""".split()
)
_KEEP_PRIVATE = frozenset({"__name__", "__doc__", "__all__", "__version__"})


class SandboxModule(types.ModuleType):
    """A module view handed to sandboxed code (its type marks it as already checked)."""


class ImportPolicy:
    """Decides which module names may be imported or reached as attributes."""

    def __init__(self, authorized: Iterable[str] = ()):
        authorized = [a.strip() for a in authorized if a and a.strip()]
        self.allow_all = "*" in authorized
        self.explicit = frozenset(a for a in authorized if a != "*")
        self.allowed = SAFE_MODULES | self.explicit
        self._cache: dict[str, bool] = {}

    def is_allowed(self, name: str) -> bool:
        hit = self._cache.get(name)
        if hit is None:
            hit = self._cache[name] = self._decide(name)
        return hit

    def _decide(self, name: str) -> bool:
        if name.partition(".")[0] == WORKER_PACKAGE:
            return False  # the worker's own modules, even with "*"
        if self.allow_all or name in self.explicit:
            return True
        if any(marker in part for part in name.split(".") for marker in UNPICKLING_MARKERS):
            return False
        if name in DENIED_MODULES or any(name.startswith(d + ".") for d in DENIED_MODULES):
            return False
        parts = name.split(".")
        if any(p.startswith("_") for p in parts):
            return False
        return any(".".join(parts[:i]) in self.allowed for i in range(1, len(parts) + 1))

    def has_allowed_descendant(self, name: str) -> bool:
        prefix = name + "."
        return any(a.startswith(prefix) for a in self.allowed)

    def describe(self) -> str:
        if self.allow_all:
            return "all modules"
        return ", ".join(sorted(self.allowed))


class ModuleViews:
    """Builds and caches the views of real modules for one sandbox."""

    def __init__(self, policy: ImportPolicy, replacements: dict[int, object],
                 overrides: dict[tuple[str, str], object] | None = None,
                 protected: Callable[[], frozenset[str]] = frozenset) -> None:
        self.policy = policy
        self.replacements = replacements  # id(real builtin) -> guarded version
        self.overrides = overrides or {}
        self.protected = protected
        self._views: dict[str, SandboxModule] = {}
        self._import_cache: dict[tuple[str, object], SandboxModule] = {}

    def refuse(self, name: str) -> ImportError:
        if self.policy.is_allowed(name.partition(".")[0]):
            return ImportError(f"Module '{name}' is blocked in the sandbox (it gives access to the system).")
        return ImportError(
            f"Import of '{name}' is not allowed in the sandbox. Allowed: {self.policy.describe()}. "
            f"(The app can allow it with authorized_imports=[..., '{name.partition('.')[0]}'].)"
        )

    def view(self, module: types.ModuleType, partial_ok: bool = False) -> SandboxModule:
        if type(module) is SandboxModule:
            return module
        name = getattr(module, "__name__", None)
        if not isinstance(name, str):
            raise AttributeError("this module is not available in the sandbox")
        full = self.policy.is_allowed(name)
        if not full and not (partial_ok and self.policy.has_allowed_descendant(name)):
            raise self.refuse(name)
        view = self._views.get(name)
        if view is None:
            view = self._views[name] = self._build(module, name, full)
        return view

    def _build(self, real: types.ModuleType, name: str, full: bool) -> SandboxModule:
        if name == "sys" and not self.policy.allow_all:
            return _sys_view(real)
        view = SandboxModule(name)
        ns = view.__dict__
        ns.pop("__loader__", None)
        ns.pop("__spec__", None)
        ns.pop("__package__", None)
        open_all = self.policy.allow_all
        if full:
            for key, value in list(vars(real).items()):
                if open_all and key not in ("__loader__", "__spec__", "__builtins__"):
                    if not isinstance(value, types.ModuleType):
                        ns[key] = self.replacements.get(id(value), value)
                    continue
                if key.startswith("_") and key not in _KEEP_PRIVATE:
                    continue
                if isinstance(value, types.ModuleType):
                    continue  # resolved lazily (and checked) by __getattr__
                over = self.overrides.get((name, key))
                if over is not None:
                    ns[key] = over
                    continue
                if _denied_origin(value):
                    continue
                ns[key] = self.replacements.get(id(value), value)
        views = self

        def __getattr__(attr: str) -> object:
            if attr.startswith("_") and attr not in _KEEP_PRIVATE and not open_all:
                raise AttributeError(f"module '{name}' has no public attribute '{attr}'")
            sub = sys.modules.get(f"{name}.{attr}")
            if not full:
                if sub is None or not views.policy.is_allowed(sub.__name__):
                    raise AttributeError(f"module '{name}' attribute '{attr}' is not available in the sandbox")
            value = getattr(real, attr) if sub is None or hasattr(real, attr) else sub
            if isinstance(value, types.ModuleType):
                try:
                    value = views.view(value)
                except ImportError as exc:
                    raise AttributeError(f"module '{name}' attribute '{attr}': {exc}") from None
            elif _denied_origin(value) and not open_all:
                raise AttributeError(f"module '{name}' attribute '{attr}' is not available in the sandbox")
            else:
                value = views.replacements.get(id(value), value)
            ns[attr] = value
            return value

        ns["__getattr__"] = __getattr__
        return view

    def import_module(self, name: str, globals: Mapping[str, object] | None = None,
                      locals: Mapping[str, object] | None = None, fromlist: Sequence[str] | None = (),
                      level: int = 0) -> types.ModuleType:
        """The ``__import__`` hook installed in the sandbox's builtins.

        C code importing its own helpers (``PyImport_Import`` while a sandbox frame
        is current) passes a *list* fromlist; import statements always pass a tuple
        or None. Those internal imports get the real module, as C code needs.
        """
        if type(fromlist) is list:
            return _real_import(name, globals, locals, fromlist, level)
        key = (name, fromlist)
        hit = self._import_cache.get(key)
        if hit is not None:
            return hit
        if level:
            raise ImportError("relative imports are not supported in the sandbox")
        if not isinstance(name, str) or not name:
            raise ImportError("invalid module name")
        policy = self.policy
        if not policy.is_allowed(name):
            names = fromlist or ()
            items = [i for i in names if i != "*"]
            if not items or len(items) != len(names) or not all(
                policy.is_allowed(f"{name}.{i}") for i in items
            ):
                raise self.refuse(name)
        module = importlib.import_module(name)
        if fromlist:
            result = self.view(module, partial_ok=True)
            for item in fromlist:
                if item == "*":
                    exported = getattr(module, "__all__", None) or [k for k in vars(result) if not k.startswith("_")]
                    clash = set(exported) & self.protected()
                    if clash:
                        raise ImportError(f"'from {name} import *' would rebind the tool(s) {sorted(clash)}")
                    continue
                sub = f"{name}.{item}"
                if not hasattr(module, item):
                    if not self.policy.is_allowed(sub):
                        raise self.refuse(sub)
                    try:
                        importlib.import_module(sub)
                    except ImportError:
                        pass
                else:
                    value = getattr(module, item)
                    if isinstance(value, types.ModuleType) and not self.policy.is_allowed(value.__name__):
                        raise self.refuse(value.__name__)
        else:
            top = name.partition(".")[0]
            result = self.view(sys.modules[top], partial_ok=True)
        if not (fromlist and "*" in fromlist):
            self._import_cache[key] = result
        return result


_real_import = __import__


def _sys_view(real: types.ModuleType) -> SandboxModule:
    """``sys`` for sandboxed code: a fixed list of harmless facts (see SYS_VIEW)."""
    view = SandboxModule("sys")
    ns = view.__dict__
    for key in ("__loader__", "__spec__", "__package__"):
        ns.pop(key, None)
    for key in SYS_VIEW:
        if hasattr(real, key):
            ns[key] = getattr(real, key)

    def __getattr__(attr: str) -> NoReturn:
        raise AttributeError(f"sys.{attr} is not available in the sandbox (only: {', '.join(sorted(SYS_VIEW))})")

    ns["__getattr__"] = __getattr__
    return view


def _denied_origin(value: object) -> bool:
    try:
        mod = getattr(value, "__module__", None) if callable(value) else None
    except Exception:
        return True
    return isinstance(mod, str) and (mod.partition(".")[0] in DENIED_ORIGINS or mod in DENIED_MODULES)
