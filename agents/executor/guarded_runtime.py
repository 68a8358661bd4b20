"""Layer 2 at run time: the builtins sandboxed code sees, and patches to libraries.

Code runs against a private builtins dict: getattr/setattr/vars/open are
guarded, eval/exec/compile/globals/... are stubs that say why they are absent,
``__import__`` returns module views, and ``str.format`` cannot walk into
attributes. Library entry points that evaluate strings or unpickle data
(pandas eval/query/read_pickle, numpy load, typing forward references) are
wrapped once per worker, before any code runs.
"""

from __future__ import annotations

import _string
import builtins
import functools
import operator
import string
import sys
import types

from .ast_guard import (
    BLOCKED_ATTRS, FORBIDDEN_BUILTINS, GuardError, HELPER_DICT, HELPER_GETATTR,
    check_attr_name, check_pandas_expression, check_type_expression,
)
from .imports import ModuleViews, SandboxModule

_real_getattr = builtins.getattr
_real_setattr = builtins.setattr
_real_delattr = builtins.delattr
_real_open = builtins.open
_ModuleType = types.ModuleType
_join = "".join


class SecurityError(Exception):
    """Raised inside the sandbox when code tries something the sandbox refuses."""

    __module__ = "builtins"  # tracebacks show plain "SecurityError"


class ToolCallError(Exception):
    """Raised inside the sandbox when a tool failed in the app; the message says why."""

    __module__ = "builtins"


def _exact_str(name) -> str:
    if type(name) is str:
        return name
    if isinstance(name, str):
        return _join((name,))  # drops any str-subclass behaviour
    raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")


def check_format_string(template: str) -> None:
    """Refuse ``{0.__class__}``-style fields that walk into private attributes."""
    for _literal, field, spec, _conv in _string.formatter_parser(template):
        if field is None:
            continue
        _first, rest = _string.formatter_field_name_split(field)
        for is_attr, key in rest:
            if is_attr and (key.startswith("_") or key in BLOCKED_ATTRS):
                raise SecurityError(f"format field '{field}' reaches a private attribute")
        if spec:
            check_format_string(spec)


def _filtered(namespace) -> dict:
    return {k: v for k, v in namespace.items() if isinstance(k, str) and not check_attr_name(k)}


def _unbound_format(method):
    def format_(template, *args, **kwargs):
        check_format_string(_exact_str(template))
        return method(template, *args, **kwargs)

    return format_


class SafeFormatter(string.Formatter):
    """string.Formatter that refuses private attribute traversal."""

    def get_field(self, field_name, args, kwargs):
        check_format_string("{" + field_name + "}")
        return super().get_field(field_name, args, kwargs)


def _safe_attrgetter(*names):
    for name in names:
        for part in _exact_str(name).split("."):
            why = check_attr_name(part)
            if why:
                raise SecurityError(why)
    return operator.attrgetter(*names)


def _safe_methodcaller(name, /, *args, **kwargs):
    why = check_attr_name(_exact_str(name))
    if why:
        raise SecurityError(why)
    return operator.methodcaller(name, *args, **kwargs)


def _SandboxedEnvironmentClass():
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return None
    return ImmutableSandboxedEnvironment


def _sandboxed_template(source, **options):
    """``jinja2.Template(source)`` rendered by jinja2's immutable sandboxed environment."""
    env_class = _SandboxedEnvironmentClass()
    if env_class is None:
        raise SecurityError("jinja2 is not available")
    return env_class(**options).from_string(source)


class Runtime:
    """The guarded builtins of one worker; rebuilt tool proxies are slotted in per run."""

    def __init__(self, views_factory, policy):
        self.replacements: dict[int, object] = {}
        overrides = {
            ("operator", "attrgetter"): _safe_attrgetter,
            ("operator", "methodcaller"): _safe_methodcaller,
            ("string", "Formatter"): SafeFormatter,
        }
        self.protected: frozenset[str] = frozenset()
        self.views: ModuleViews = views_factory(policy, self.replacements, overrides, lambda: self.protected)
        self.builtins = self._make_builtins()
        jinja2 = sys.modules.get("jinja2")
        if jinja2 is not None:
            # Templates the code writes are code: they run in jinja2's own sandbox (no dunders, no frames),
            # wherever the code finds the class; templates libraries ship (pandas' Styler) keep their own.
            self.replacements[id(jinja2.Template)] = _sandboxed_template
            self.replacements[id(jinja2.Environment)] = _SandboxedEnvironmentClass()

    # --- guarded builtins -------------------------------------------------
    def _post(self, value, obj, name):
        if isinstance(value, _ModuleType):
            if type(value) is SandboxModule:
                return value
            try:
                return self.views.view(value)
            except ImportError as exc:
                raise AttributeError(f"attribute '{name}' is not available in the sandbox: {exc}") from None
        if name == "format" or name == "format_map":
            if isinstance(obj, str):
                check_format_string(_exact_str(obj))
            elif isinstance(obj, type) and issubclass(obj, str):
                return _unbound_format(value)
        rep = self.replacements.get(id(value))
        return value if rep is None else rep

    def _make_builtins(self) -> dict:
        post = self._post
        views = self.views

        def getattr(obj, name, *default):
            name = _exact_str(name)
            if name == "__dict__":
                return vars(obj)
            why = check_attr_name(name)
            if why:
                raise SecurityError(why)
            return post(_real_getattr(obj, name, *default), obj, name)

        def hasattr(obj, name):
            try:
                getattr(obj, name)
            except AttributeError:
                return False
            return True

        def setattr(obj, name, value):
            name = _exact_str(name)
            why = check_attr_name(name, store=True)
            if why:
                raise SecurityError(why)
            _real_setattr(obj, name, value)

        def delattr(obj, name):
            name = _exact_str(name)
            why = check_attr_name(name, store=True)
            if why:
                raise SecurityError(why)
            _real_delattr(obj, name)

        def vars(*args):
            if len(args) != 1:
                raise SecurityError("vars() needs exactly one argument in the sandbox")
            obj = args[0]
            if isinstance(obj, _ModuleType):
                return _filtered(views.view(obj).__dict__)
            if isinstance(obj, type):
                return _filtered(obj.__dict__)  # no route to type.__dict__['__subclasses__']
            return obj.__dict__

        def ga(obj, name):
            return post(_real_getattr(obj, name), obj, name)

        def open(file, *args, **kwargs):
            if isinstance(file, int):
                raise SecurityError("opening file descriptors by number is not allowed in the sandbox")
            return _real_open(file, *args, **kwargs)

        def _stub(name):
            def stub(*args, **kwargs):
                if name in ("exit", "quit"):
                    raise SystemExit(*args)
                raise SecurityError(f"{name}() is not available in the sandbox")

            stub.__name__ = stub.__qualname__ = name
            return stub

        ns = {k: v for k, v in vars_(builtins).items() if not k.startswith("_")}
        for key in ("copyright", "credits", "license"):
            ns.pop(key, None)
        for name in FORBIDDEN_BUILTINS:
            ns[name] = _stub(name)
        guarded = {"getattr": getattr, "hasattr": hasattr, "setattr": setattr,
                   "delattr": delattr, "vars": vars, "open": open}
        ns.update(guarded)
        real = vars_(builtins)
        for name, fn in list(guarded.items()) + [(n, ns[n]) for n in FORBIDDEN_BUILTINS]:
            if name in real:
                self.replacements[id(real[name])] = fn
        self.replacements[id(builtins.__import__)] = views.import_module
        ns["__build_class__"] = builtins.__build_class__
        ns["__import__"] = views.import_module
        ns["__debug__"] = __debug__
        ns["__name__"] = "builtins"
        ns[HELPER_GETATTR] = ga
        ns[HELPER_DICT] = vars
        ns["SecurityError"] = SecurityError
        ns["ToolCallError"] = ToolCallError
        return ns

    def set_tools(self, tools: dict[str, object]) -> None:
        """Install tool proxies (and final_answer) as builtins, which user globals cannot replace."""
        for name in self.protected:
            self.builtins.pop(name, None)
        self.builtins.update(tools)
        self.protected = frozenset(tools)


vars_ = builtins.vars


# --- library patches ------------------------------------------------------
_patched: set[str] = set()


def _replace_everywhere(attr: str, original, replacement, prefixes: tuple[str, ...]) -> None:
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith(prefixes):
            continue
        if vars_(mod).get(attr) is original:
            _real_setattr(mod, attr, replacement)


def _patch_typing() -> None:
    import typing

    original = typing.ForwardRef.__init__

    @functools.wraps(original)
    def __init__(self, arg, *args, **kwargs):
        if isinstance(arg, str):
            try:
                check_type_expression(arg)
            except SyntaxError:
                pass  # the original raises its own SyntaxError
            except GuardError as exc:
                raise SecurityError(str(exc)) from None
        original(self, arg, *args, **kwargs)

    typing.ForwardRef.__init__ = __init__


def _checked_eval(original):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        try:
            for arg in (*args, kwargs.get("expr")):
                check_pandas_expression(arg)
        except GuardError as exc:
            raise SecurityError(str(exc)) from None
        kwargs["level"] = kwargs.get("level", 0) + 1
        return original(*args, **kwargs)

    return wrapper


def _refuse(name: str, why: str):
    def refused(*args, **kwargs):
        raise SecurityError(f"{name} is disabled in the sandbox ({why})")

    refused.__name__ = name
    return refused


def _patch_pandas() -> None:
    import pandas

    frame = pandas.DataFrame
    frame.eval = _checked_eval(frame.eval)
    frame.query = _checked_eval(frame.query)
    _replace_everywhere("eval", pandas.eval, _checked_eval(pandas.eval), ("pandas",))
    _replace_everywhere("read_pickle", pandas.read_pickle, _refuse("read_pickle", "unpickling can run code"), ("pandas",))


def _patch_numpy() -> None:
    import numpy

    original_load = numpy.load

    @functools.wraps(original_load)
    def load(*args, allow_pickle=False, **kwargs):
        if allow_pickle:
            raise SecurityError("numpy.load(allow_pickle=True) is disabled in the sandbox (unpickling can run code)")
        return original_load(*args, allow_pickle=False, **kwargs)

    _replace_everywhere("load", original_load, load, ("numpy",))
    fmt = sys.modules.get("numpy.lib.format")
    if fmt is not None:
        original_read = fmt.read_array

        @functools.wraps(original_read)
        def read_array(fp, allow_pickle=False, *args, **kwargs):
            if allow_pickle:
                raise SecurityError("allow_pickle=True is disabled in the sandbox")
            return original_read(fp, False, *args, **kwargs)

        _replace_everywhere("read_array", original_read, read_array, ("numpy",))


def _patch_matplotlib() -> None:
    import matplotlib.pyplot as plt

    def show(*args, **kwargs):
        """Figures are saved to the workspace at the end of the run."""

    _replace_everywhere("show", plt.show, show, ("matplotlib",))


_PATCHES = {
    "typing": _patch_typing,
    "pandas": _patch_pandas,
    "numpy": _patch_numpy,
    "matplotlib.pyplot": _patch_matplotlib,
}


def patch_loaded_libraries() -> None:
    """Apply the patches for libraries that are loaded and not yet patched (idempotent)."""
    for name, patch in _PATCHES.items():
        if name not in _patched and name in sys.modules:
            _patched.add(name)
            patch()
