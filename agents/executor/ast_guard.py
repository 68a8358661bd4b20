"""Layer 1: check and rewrite the code's syntax tree before CPython compiles it.

The code then runs as ordinary compiled Python (full language, native speed);
this pass only refuses the spellings that lead out of the sandbox and rewrites
the few attribute reads that need a runtime look (module pivots, ``str.format``,
``__dict__``). It runs in the worker before compiling; code that needs neither
check nor rewrite takes the faster ``plain_compile`` path.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn, TypeVar

HELPER_GETATTR = "__sbx_ga__"
HELPER_DICT = "__sbx_dict__"
FINAL_ANSWER = "final_answer"
INTERNAL_PREFIX = "__sbx"

_OPERATOR_NAMES = (
    "add sub mul matmul truediv floordiv mod divmod pow lshift rshift and xor or "
    "neg pos abs invert complex int float index round trunc floor ceil"
).split()
SPECIAL_METHODS = frozenset(
    [f"__{n}__" for n in _OPERATOR_NAMES]
    + [f"__r{n}__" for n in _OPERATOR_NAMES]
    + [f"__i{n}__" for n in _OPERATOR_NAMES]
    + """__init__ __new__ __del__ __repr__ __str__ __bytes__ __format__ __hash__ __bool__
    __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __len__ __length_hint__ __iter__ __next__
    __reversed__ __contains__ __getitem__ __setitem__ __delitem__ __missing__ __call__
    __enter__ __exit__ __aenter__ __aexit__ __aiter__ __anext__ __await__ __getattr__
    __setattr__ __delattr__ __dir__ __get__ __set__ __delete__ __set_name__
    __init_subclass__ __class_getitem__ __instancecheck__ __subclasscheck__ __post_init__
    __copy__ __deepcopy__ __sizeof__ __fspath__ __array__ __slots__ __match_args__
    __all__ __version__ __name__ __qualname__ __doc__ __class__ __debug__""".split()
)
# Dunder attributes code may read as ``obj.__x__``; everything else dunder is refused.
SAFE_DUNDER_ATTRS = (
    SPECIAL_METHODS
    - {"__getattr__", "__del__", "__get__", "__set__", "__delete__", "__set_name__"}
) | frozenset(
    """__module__ __mro__ __bases__ __base__ __annotations__ __dataclass_fields__
    __cause__ __context__ __suppress_context__ __notes__""".split()
)
# Dunder attributes code may assign (``f.__doc__ = ...``).
SAFE_DUNDER_STORES = frozenset({"__doc__", "__name__", "__qualname__"})
# Not readable: ``__wrapped__`` leads from a wrapper back to what it wraps (the sandbox's own patches wrap
# unchecked originals), ``__closure__``/``__globals__``/``__code__`` to a function's internals.
# Non-dunder attributes that lead to frames, code objects or globals.
BLOCKED_ATTRS = frozenset(
    """gi_frame gi_code gi_yieldfrom cr_frame cr_code cr_await cr_origin ag_frame ag_code
    ag_await f_globals f_locals f_builtins f_back f_code f_trace tb_frame co_code
    func_globals func_code func_closure im_func get_stack print_stack _getframe
    _current_frames""".split()
)
# Attribute names that are read through a runtime check (module pivots, str.format).
PIVOT_ATTRS = frozenset(
    """os sys subprocess builtins importlib ctypes _ctypes socket _socket shutil pickle
    _pickle marshal posix nt signal _signal gc inspect types threading _thread
    multiprocessing pty fcntl resource mmap code codeop runpy pdb traceback linecache
    tempfile sysconfig site platform concurrent selectors select ssl http urllib
    requests webbrowser zipimport pkgutil imp _imp dis weakref _weakref _io io
    _posixsubprocess faulthandler tracemalloc atexit _os _sys _subprocess ctypeslib
    format format_map lib core common""".split()
)
# Builtins that are replaced by stubs refusing with a clear message.
FORBIDDEN_BUILTINS = frozenset(
    "eval exec compile globals locals breakpoint input help exit quit".split()
)


class GuardError(Exception):
    """The code uses a construct the sandbox refuses; the message says which and where."""

    def __init__(self, message: str, lineno: int | None = None):
        self.lineno = lineno
        where = f" (line {lineno})" if lineno else ""
        super().__init__(f"{message}{where}")


@dataclass
class GuardedCode:
    """The checked tree, split into the statements and an optional final expression."""

    body: ast.Module
    last_expr: ast.Expression | None


_Node = TypeVar("_Node", bound=ast.AST)


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_attr_name(name: str, store: bool = False) -> str | None:
    """Return why reading (or assigning) attribute ``name`` is refused, or None."""
    if name.startswith(INTERNAL_PREFIX):
        return f"attribute '{name}' is reserved by the sandbox"
    if _is_dunder(name):
        allowed = SAFE_DUNDER_STORES if store else SAFE_DUNDER_ATTRS
        if name not in allowed:
            return f"access to dunder attribute '{name}' is not allowed in the sandbox"
        return None
    if name in BLOCKED_ATTRS:
        return f"access to attribute '{name}' (frames, code or globals) is not allowed in the sandbox"
    return None


class _Guard:
    def __init__(self, protected: frozenset[str]):
        self.protected = protected

    def fail(self, msg: str, node: ast.AST) -> NoReturn:
        raise GuardError(msg, getattr(node, "lineno", None))

    def bind(self, name: str | None, node: ast.AST, what: str) -> None:
        if name is None:
            return
        if name in self.protected:
            self.fail(f"cannot rebind '{name}' ({what}): it is a tool provided by the sandbox", node)
        if name.startswith(INTERNAL_PREFIX):
            self.fail(f"the name '{name}' is reserved by the sandbox", node)
        if _is_dunder(name) and name not in SPECIAL_METHODS:
            self.fail(f"cannot bind the dunder name '{name}'", node)

    def check_name(self, node: ast.Name) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Load):
            if name.startswith(INTERNAL_PREFIX) or (_is_dunder(name) and name not in SPECIAL_METHODS):
                self.fail(f"the name '{name}' is not available in the sandbox", node)
        else:
            self.bind(name, node, "assignment" if isinstance(node.ctx, ast.Store) else "del")

    def check_args(self, args: ast.arguments, node: ast.AST) -> None:
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            self.bind(a.arg, node, "parameter")
        for star in (args.vararg, args.kwarg):
            if star is not None:
                self.bind(star.arg, node, "parameter")

    def check_import_name(self, modname: str | None, node: ast.AST) -> None:
        if modname and any(p.startswith("__") for p in modname.split(".")):
            self.fail(f"importing '{modname}' is not allowed", node)

    def check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            self.check_name(node)
        elif isinstance(node, ast.Attribute):
            if node.attr == "__dict__":
                if not isinstance(node.ctx, ast.Load):
                    self.fail("assigning or deleting '__dict__' is not allowed", node)
                return  # read through the runtime's filtered vars()
            why = check_attr_name(node.attr, store=not isinstance(node.ctx, ast.Load))
            if why:
                self.fail(why, node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind(node.name, node, "def")
            self.check_args(node.args, node)
        elif isinstance(node, ast.Lambda):
            self.check_args(node.args, node)
        elif isinstance(node, ast.ClassDef):
            self.bind(node.name, node, "class")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self.check_import_name(alias.name, node)
                self.bind(alias.asname or alias.name.partition(".")[0], node, "import")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                self.fail("relative imports are not supported in the sandbox", node)
            self.check_import_name(node.module, node)
            for alias in node.names:
                if alias.name != "*":
                    self.check_import_name(alias.name, node)
                    self.bind(alias.asname or alias.name, node, "import")
        elif isinstance(node, ast.ExceptHandler):
            self.bind(node.name, node, "except ... as")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                self.bind(name, node, "global/nonlocal")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            self.bind(node.name, node, "match capture")
        elif isinstance(node, ast.MatchMapping):
            self.bind(node.rest, node, "match capture")
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                why = check_attr_name(attr)
                if why:
                    self.fail(why, node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == "__match_args__":
                    self.check_match_args(node.value, node)

    def check_match_args(self, value: ast.AST, node: ast.AST) -> None:
        if not isinstance(value, (ast.Tuple, ast.List)):
            self.fail("__match_args__ must be a literal tuple of attribute names", node)
        for elt in value.elts:
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                self.fail("__match_args__ must be a literal tuple of attribute names", node)
            why = check_attr_name(elt.value)
            if why:
                self.fail(why, node)

    def rewrite(self, node: ast.AST) -> ast.AST:
        """Return the replacement for an attribute read that needs a runtime check."""
        if type(node) is not ast.Attribute or not isinstance(node.ctx, ast.Load):
            return node
        attr = node.attr
        # New nodes get the location of the node they replace, so the tree never needs a
        # fix_missing_locations() pass (which would walk the whole tree on every run).
        def here(new: _Node) -> _Node:
            return ast.copy_location(new, node)

        if attr == "__dict__":
            call = ast.Call(here(ast.Name(HELPER_DICT, ast.Load())), [node.value], [])
        elif attr in PIVOT_ATTRS:
            call = ast.Call(here(ast.Name(HELPER_GETATTR, ast.Load())), [node.value, here(ast.Constant(attr))], [])
        else:
            return node
        return here(call)

    def walk(self, root: ast.AST, rewrite: bool) -> None:
        stack = [root]
        pop, push = stack.pop, stack.append
        AST = ast.AST
        checked = _CHECKED_TYPES
        check, rw = self.check, self.rewrite
        while stack:
            node = pop()
            if type(node) in checked:
                check(node)
            for field in node._fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    for i, item in enumerate(value):
                        if isinstance(item, AST):
                            if rewrite and type(item) is ast.Attribute:
                                new = rw(item)
                                if new is not item:
                                    value[i] = new
                            push(item)
                elif isinstance(value, AST):
                    if rewrite and type(value) is ast.Attribute:
                        new = rw(value)
                        if new is not value:
                            setattr(node, field, new)
                    push(value)


_CHECKED_TYPES = frozenset({
    ast.Name, ast.Attribute, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
    ast.Import, ast.ImportFrom, ast.ExceptHandler, ast.Global, ast.Nonlocal, ast.MatchAs,
    ast.MatchStar, ast.MatchMapping, ast.MatchClass, ast.Assign,
})


def guard_source(source: str, protected: Iterable[str] = frozenset(), filename: str = "<code>",
                 rewrite: bool = True, tree: ast.Module | None = None) -> GuardedCode:
    """Parse, check and (optionally) rewrite ``source``.

    ``tree``, when given, must be a fresh ``ast.parse(source, filename, "exec")`` that nothing else
    keeps (``plain_compile`` hands over its parse so the text is parsed once); it is checked and
    rewritten in place. Raises SyntaxError for invalid Python and GuardError for refused constructs.
    """
    if tree is None:
        tree = ast.parse(source, filename, "exec")
    guard = _Guard(frozenset(protected) | {FINAL_ANSWER})
    guard.walk(tree, rewrite)
    last = None
    final = tree.body[-1] if rewrite and tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    return GuardedCode(tree, last)


def format_syntax_error(exc: SyntaxError) -> str:
    """A SyntaxError as a person wants it: message, line, column and the offending line."""
    msg = f"{type(exc).__name__}: {exc.msg}"
    if exc.lineno:
        msg += f" (line {exc.lineno}" + (f", column {exc.offset})" if exc.offset else ")")
    if exc.text:
        line = exc.text.rstrip("\n")
        stripped = line.lstrip()
        msg += f"\n    {stripped}"
        if exc.offset:
            caret = max(0, exc.offset - 1 - (len(line) - len(stripped)))
            msg += "\n    " + " " * caret + "^"
    return msg


_TYPE_EXPR_NODES = (
    ast.Expression, ast.Name, ast.Load, ast.Attribute, ast.Subscript, ast.Constant,
    ast.Tuple, ast.List, ast.BinOp, ast.BitOr,
)


def check_type_expression(text: str) -> None:
    """Refuse a string annotation that is more than a type expression.

    typing evaluates forward references with eval(), outside the guard's reach; only names, dotted
    names, subscripts, constants and ``|`` may appear, and every attribute passes the same rule as
    attributes in code (no dunders, no frame, code or globals attributes such as ``tb_frame``).
    Private *names* stay allowed: libraries annotate with their own module-level ``_Name`` types.
    """
    tree = ast.parse(text, "<annotation>", "eval")
    for node in ast.walk(tree):
        if not isinstance(node, _TYPE_EXPR_NODES):
            raise GuardError(f"string annotation {text!r} is not a plain type expression")
        if isinstance(node, ast.Attribute):
            why = check_attr_name(node.attr)
            if why or node.attr.startswith("_"):
                raise GuardError(f"string annotation {text!r} uses the attribute '{node.attr}'")
        if isinstance(node, ast.Name) and (_is_dunder(node.id) or node.id.startswith(INTERNAL_PREFIX)):
            raise GuardError(f"string annotation {text!r} uses the name '{node.id}'")


_PANDAS_BAD = re.compile(rf"__|\.\s*_|\b(?:{'|'.join(sorted(BLOCKED_ATTRS))})\b")


def check_pandas_expression(expr: object) -> None:
    """Refuse pandas eval()/query() strings that reach dunders or private attributes."""
    if isinstance(expr, str) and _PANDAS_BAD.search(expr):
        raise GuardError(
            "this pandas expression uses dunder, private or frame attributes, "
            "which the sandbox does not allow"
        )
