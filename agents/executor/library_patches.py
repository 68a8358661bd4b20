"""Layer 2, libraries: entry points that evaluate strings, unpickle or render templates, patched once per worker.

pandas eval/query/read_pickle and its Styler's template environment, numpy load, typing forward references
and matplotlib's show are wrapped before any code runs. The wrappers copy name and docstring but never set
``__wrapped__``: a patched entry point must not lead code back to the unchecked original.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn, TypeVar

from .ast_guard import GuardError, check_pandas_expression, check_type_expression
from .guarded_runtime import SecurityError

_real_setattr = setattr
vars_ = vars
_F = TypeVar("_F", bound=Callable[..., Any])


def _like(original: object) -> Callable[[_F], _F]:
    """functools.wraps without ``__wrapped__``: a patched entry point must not lead back to the original."""

    def apply(wrapper: _F) -> _F:
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(wrapper, attr, getattr(original, attr))
            except (AttributeError, TypeError):
                pass
        return wrapper

    return apply



_patched: set[str] = set()


def _replace_everywhere(attr: str, original: object, replacement: object, prefixes: tuple[str, ...]) -> None:
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith(prefixes):
            continue
        if vars_(mod).get(attr) is original:
            _real_setattr(mod, attr, replacement)


def _refuse_in_public_modules(package: ModuleType, names: tuple[str, ...], why: str) -> None:
    """Replace `names` in every public module of `package` (no part of its name starting with "_") by a
    refusal. The private implementation modules, which code cannot import, keep the originals, so library
    functions built on them (numpy's sliding_window_view uses as_strided) still work."""
    prefix = package.__name__
    for modname, mod in list(sys.modules.items()):
        if mod is None or not (modname == prefix or modname.startswith(prefix + ".")):
            continue
        if any(part.startswith("_") for part in modname.split(".")):
            continue
        for name in names:
            original = vars_(mod).get(name)
            if callable(original):
                _real_setattr(mod, name, _like(original)(_refuse(name, why)))


def _patch_typing() -> None:
    import typing

    original = typing.ForwardRef.__init__

    @_like(original)
    def __init__(self: typing.ForwardRef, arg: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(arg, str):
            try:
                check_type_expression(arg)
            except SyntaxError:
                pass  # the original raises its own SyntaxError
            except GuardError as exc:
                raise SecurityError(str(exc)) from None
        original(self, arg, *args, **kwargs)

    _real_setattr(typing.ForwardRef, "__init__", __init__)


def _checked_eval(original: Callable[..., Any]) -> Callable[..., Any]:
    @_like(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            for arg in (*args, kwargs.get("expr")):
                check_pandas_expression(arg)
        except GuardError as exc:
            raise SecurityError(str(exc)) from None
        kwargs["level"] = kwargs.get("level", 0) + 1
        return original(*args, **kwargs)

    return wrapper


def _refuse(name: str, why: str) -> Callable[..., NoReturn]:
    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        raise SecurityError(f"{name} is disabled in the sandbox ({why})")

    refused.__name__ = name
    return refused


def _patch_pandas() -> None:
    import pandas

    frame = pandas.DataFrame
    frame.eval = _checked_eval(frame.eval)
    frame.query = _checked_eval(frame.query)
    _replace_everywhere("eval", pandas.eval, _checked_eval(pandas.eval), ("pandas",))
    _replace_everywhere("read_pickle", pandas.read_pickle, _refuse("read_pickle", "unpickling can run code"),
                        ("pandas",))
    try:
        from pandas.io.formats.style_render import StylerRenderer
    except ImportError:  # jinja2 missing: no Styler at all
        return
    try:
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError:
        return
    # `type(df.style).env.from_string(...)` would otherwise render with the real environment.
    sandboxed = SandboxedEnvironment(loader=StylerRenderer.loader, trim_blocks=True)
    for name in ("template_html", "template_html_table", "template_html_style", "template_latex",
                 "template_string", "template_typst"):
        template = getattr(StylerRenderer, name, None)
        if template is not None and getattr(template, "name", None):
            setattr(StylerRenderer, name, sandboxed.get_template(template.name))
    StylerRenderer.env = sandboxed


def _patch_numpy() -> None:
    import numpy

    original_load = numpy.load

    @_like(original_load)
    def load(file: Any, mmap_mode: Any = None, allow_pickle: bool = False, *args: Any, **kwargs: Any) -> Any:
        if allow_pickle:
            raise SecurityError("numpy.load(allow_pickle=True) is disabled in the sandbox (unpickling can run code)")
        return original_load(file, mmap_mode, False, *args, **kwargs)

    _replace_everywhere("load", original_load, load, ("numpy",))
    _refuse_in_public_modules(numpy, ("as_strided", "byte_bounds"),
                              "it reads and writes memory at any address (use sliding_window_view or reshape)")
    fmt = sys.modules.get("numpy.lib.format")
    if fmt is not None:
        original_read = fmt.read_array

        @_like(original_read)
        def read_array(fp: Any, allow_pickle: bool = False, *args: Any, **kwargs: Any) -> Any:
            if allow_pickle:
                raise SecurityError("allow_pickle=True is disabled in the sandbox")
            return original_read(fp, False, *args, **kwargs)

        _replace_everywhere("read_array", original_read, read_array, ("numpy",))


def _patch_matplotlib() -> None:
    import matplotlib.pyplot as plt

    def show(*args: Any, **kwargs: Any) -> None:
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
