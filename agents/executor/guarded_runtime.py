"""Layer 2 at run time: the builtins sandboxed code sees, and patches to libraries.

Code runs against a private builtins dict: getattr/setattr/vars/open are
guarded, eval/exec/compile/globals/... are stubs that say why they are absent,
``__import__`` returns module views, and ``str.format`` cannot walk into
attributes. Library entry points that evaluate strings or unpickle data are
patched in ``library_patches.py``.
"""

from __future__ import annotations

import _string
import builtins
import operator
import string
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from .ast_guard import (
    BLOCKED_ATTRS,
    FORBIDDEN_BUILTINS,
    HELPER_DICT,
    HELPER_GETATTR,
    check_attr_name,
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


def _exact_str(name: object) -> str:
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


def _filtered(namespace: Mapping[Any, Any]) -> dict[str, Any]:
    return {k: v for k, v in namespace.items() if isinstance(k, str) and not check_attr_name(k)}


def _unbound_format(method: Callable[..., Any]) -> Callable[..., Any]:
    def format_(template: object, *args: Any, **kwargs: Any) -> Any:
        check_format_string(_exact_str(template))
        return method(template, *args, **kwargs)

    return format_


class SafeFormatter:
    """string.Formatter's public interface, refusing private attribute traversal.

    A wrapper, not a subclass: through a subclass's ``__mro__`` code would reach the unchecked original.
    """

    def __init__(self) -> None:
        checked = self

        class _Inner(string.Formatter):
            def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
                check_format_string("{" + field_name + "}")
                return super().get_field(field_name, args, kwargs)

            def get_value(self, key: int | str, args: Any, kwargs: Any) -> Any:
                return checked.get_value(key, args, kwargs)

            def format_field(self, value: Any, format_spec: str) -> Any:
                return checked.format_field(value, format_spec)

        self._inner = _Inner()

    def format(self, format_string: str, /, *args: Any, **kwargs: Any) -> str:
        return self._inner.vformat(format_string, args, kwargs)

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        return self._inner.vformat(format_string, args, kwargs)

    def parse(self, format_string: str) -> Any:
        return self._inner.parse(format_string)

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        check_format_string("{" + field_name + "}")
        return self._inner.get_field(field_name, args, kwargs)

    def get_value(self, key: int | str, args: Any, kwargs: Any) -> Any:
        if isinstance(key, int):
            return args[key]
        return kwargs[key]

    def format_field(self, value: Any, format_spec: str) -> str:
        return format(value, format_spec)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return self._inner.convert_field(value, conversion)


def _safe_attrgetter(*names: str) -> Callable[[object], Any]:
    for name in names:
        for part in _exact_str(name).split("."):
            why = check_attr_name(part)
            if why:
                raise SecurityError(why)
    real = operator.attrgetter(*names)

    def attrgetter(obj: object) -> Any:  # a plain function: type() of it must not give code the unchecked C class
        return real(obj)

    return attrgetter


def _safe_methodcaller(name: str, /, *args: Any, **kwargs: Any) -> Callable[[object], Any]:
    why = check_attr_name(_exact_str(name))
    if why:
        raise SecurityError(why)
    real = operator.methodcaller(name, *args, **kwargs)

    def methodcaller(obj: object) -> Any:
        return real(obj)

    return methodcaller


def _SandboxedEnvironmentClass() -> Any:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return None
    return ImmutableSandboxedEnvironment


def _sandboxed_template(source: str, **options: Any) -> Any:
    """``jinja2.Template(source)`` rendered by jinja2's immutable sandboxed environment."""
    env_class = _SandboxedEnvironmentClass()
    if env_class is None:
        raise SecurityError("jinja2 is not available")
    return env_class(**options).from_string(source)


class Runtime:
    """The guarded builtins of one worker; rebuilt tool proxies are slotted in per run."""

    def __init__(self, views_factory: Callable[..., ModuleViews], policy: Any) -> None:
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
    def _post(self, value: Any, obj: object, name: str) -> Any:
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

    def _make_builtins(self) -> dict[str, Any]:
        post = self._post
        views = self.views

        def getattr(obj: object, name: object, *default: Any) -> Any:
            name = _exact_str(name)
            if name == "__dict__":
                return vars(obj)
            why = check_attr_name(name)
            if why:
                raise SecurityError(why)
            return post(_real_getattr(obj, name, *default), obj, name)

        def hasattr(obj: object, name: object) -> bool:
            try:
                getattr(obj, name)
            except AttributeError:
                return False
            return True

        def setattr(obj: object, name: object, value: Any) -> None:
            name = _exact_str(name)
            why = check_attr_name(name, store=True)
            if why:
                raise SecurityError(why)
            _real_setattr(obj, name, value)

        def delattr(obj: object, name: object) -> None:
            name = _exact_str(name)
            why = check_attr_name(name, store=True)
            if why:
                raise SecurityError(why)
            _real_delattr(obj, name)

        def vars(*args: Any) -> Any:
            if len(args) != 1:
                raise SecurityError("vars() needs exactly one argument in the sandbox")
            obj = args[0]
            if isinstance(obj, _ModuleType):
                return _filtered(views.view(obj).__dict__)
            if isinstance(obj, type):
                return _filtered(obj.__dict__)  # no route to type.__dict__['__subclasses__']
            return obj.__dict__

        def ga(obj: object, name: str) -> Any:
            return post(_real_getattr(obj, name), obj, name)

        def open(file: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(file, int):
                raise SecurityError("opening file descriptors by number is not allowed in the sandbox")
            return _real_open(file, *args, **kwargs)

        def _stub(name: str) -> Callable[..., Any]:
            def stub(*args: Any, **kwargs: Any) -> Any:
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

    def set_tools(self, tools: Mapping[str, object]) -> None:
        """Install tool proxies (and final_answer) as builtins, which user globals cannot replace."""
        for name in self.protected:
            self.builtins.pop(name, None)
        self.builtins.update(tools)
        self.protected = frozenset(tools)


vars_ = builtins.vars
