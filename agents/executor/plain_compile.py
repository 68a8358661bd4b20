"""Layer 1, fast path: compile code that needs no check or rewrite without building a Python AST.

Why: building the AST in Python objects, walking it and compiling it back costs ~120 us in a worker
that has just woken up, a tenth of a 1 ms step. Most agent code mentions no dunder, no protected name,
no module pivot and no import; for such code the guard (``ast_guard``) would accept the tree unchanged,
so CPython can compile the text directly.

Invariant (checked by a differential test over thousands of snippets): whenever ``compile_plain``
returns code, ``guard_source`` accepts the same source without rewriting it, and both produce equal
code objects. Anything else returns None and takes the full guard, which stays the authority for
refusals, rewrites and error messages.

How: the text is compiled as is (one C pass), then every name the bytecode uses (global, attribute,
local, cell, free names, and the attribute names of class patterns) is compared with what the guard
would look at. Names of code the compiler dropped (``if False:`` bodies) never run and are not seen.
The value of a final expression is found by splitting the text at its last line that starts at column
0: if the part before compiles on its own and the part after compiles as an expression, they are the
module's statements and its final expression statement (an open bracket, string or block would have
made the first part fail). When the part after is not an expression, only it is parsed into an AST; when
that part is the whole text (one line, ``a = f(x); a``), its tree is split and compiled as the guard would
(the guard's walk then adds nothing: the names check decides).

One line of simple statements (``x = x + 1; print(x)``, a common follow-up) is compiled once in "single"
mode instead, as the interactive prompt does: its code is the "exec" code of the same text with each expression
statement's POP_TOP replaced by PRINT_EXPR, which hands the value to ``sys.displayhook`` (the executor puts a
catcher there for the step). The last statement is the final expression when the code's last PRINT_EXPR is its
last instruction before the implicit return and nothing but blanks, ``;`` or a comment follows its position in
the line (``a; pass`` emits no code for ``pass``). A compiled one-liner is an `Interactive`; the differential
test checks those against the guard by instruction and by value. Lines that start a compound statement
(``if c: a; b``) never take this path: their nested expression statements would be shown too.
"""

from __future__ import annotations

import ast
import opcode
import re
from dataclasses import dataclass
from itertools import islice
from types import CodeType

from .ast_guard import BLOCKED_ATTRS, FINAL_ANSWER, INTERNAL_PREFIX, PIVOT_ATTRS

_ALWAYS_CHECKED = BLOCKED_ATTRS | PIVOT_ATTRS | {FINAL_ANSWER, ""}
_GUARD_ONLY_WORDS = ("import", "global", "nonlocal", "\r", "\f", "\v")
# A line holding only "target: annotation" (no value): the target's name is never used by the bytecode.
_BARE_ANNOTATION = re.compile(r"^[ \t]*([A-Za-z_][\w.]*)[ \t]*:(?!=)[^=\n]*$", re.MULTILINE)
_CLAUSE_KEYWORDS = frozenset({"else", "elif", "except", "finally"})  # continue a compound statement
_BLOCK_HEADERS = _CLAUSE_KEYWORDS | {"try"}  # "else:", "try:", ...: look like a bare annotation, are not
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*")
_NAME_BINDING_OPS = frozenset(
    opcode.opmap[name] for name in ("STORE_NAME", "DELETE_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"))
_EXTENDED_ARG = opcode.EXTENDED_ARG
_COMPILE_FAILURES = (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError)
_COMPOUND_WORDS = frozenset({"if", "elif", "else", "for", "while", "with", "try", "except", "finally", "def",
                             "class", "async", "match", "case"})
_PRINT_EXPR, _LOAD_CONST, _RETURN_VALUE = (opcode.opmap[name] for name in ("PRINT_EXPR", "LOAD_CONST",
                                                                           "RETURN_VALUE"))


@dataclass(frozen=True)
class Interactive:
    """One line of simple statements compiled in "single" mode: each expression statement hands its value to
    ``sys.displayhook``; `last_shown`: the last statement is an expression, so the last value shown is the
    step's value."""

    code: CodeType
    last_shown: bool


PlainCode = tuple[CodeType, CodeType | None] | Interactive


def compile_plain(source: str, protected: frozenset[str], filename: str) -> PlainCode | None:
    """(statements, final expression or None) compiled straight from the text, or an `Interactive` one-liner,
    or None if the code needs the full guard (or does not compile: the guard then reports why)."""
    compiled = compile_plain_or_parse(source, protected, filename)
    return None if isinstance(compiled, ast.Module) else compiled


def compile_plain_or_parse(source: str, protected: frozenset[str], filename: str) -> PlainCode | ast.Module | None:
    """As ``compile_plain``; but when the code needs the guard and this path already parsed the whole
    text (``x = 1; f(x)``: one line, a final expression), that tree instead of None, exactly
    ``ast.parse(source, filename, "exec")``, for ``guard_source(tree=)``: the text is parsed once."""
    if _needs_guard(source):
        return None
    lines = source.split("\n")
    last = _last_column_0_line(lines)
    try:
        if last is None:
            return _checked(compile(source, filename, "exec", dont_inherit=True), None, protected)
        head = "\n".join(lines[:last]) + "\n"
        tail = "\n" * last + "\n".join(lines[last:])  # the same line numbers as in the source
        expr = None
        if last == 0 and ";" in source and "\n" not in source.rstrip("\n"):
            # One line with a semicolon: most often statements then an expression, which never compiles as
            # one expression.
            one_line = _one_line(source, filename, protected)
            if one_line is not None:
                return one_line
        else:
            try:
                expr = compile(tail.rstrip(), filename, "eval", dont_inherit=True)
            except SyntaxError:
                expr = None
        if expr is not None:
            return _checked(compile(head, filename, "exec", dont_inherit=True), expr, protected)
        # Not one expression: parse only the tail to see whether its last statement is one
        # ("x = 1; x", "*a, b"); then the guard splits it. The head compiling alone proves the split
        # is a statement boundary, so the tail's last statement is the module's last statement.
        tree = ast.parse(tail, filename, "exec")
        statements = tree.body
        if statements and type(statements[-1]) is ast.Expr:
            if last != 0:
                return None
            # last == 0: the tail is the source itself (one line, ``x = f(x); print(x)``), and its tree splits
            # as the guard splits it: compiled from the parts (the tree itself is left whole), the names
            # check decides as for text; else the tree goes to the guard, parsed once.
            body = compile(ast.Module(body=statements[:-1], type_ignores=[]), filename, "exec", dont_inherit=True)
            expr = compile(ast.Expression(body=statements[-1].value), filename, "eval", dont_inherit=True)
            return _checked(body, expr, protected) or tree
        compile(head, filename, "exec", dont_inherit=True)
        return _checked(compile(source, filename, "exec", dont_inherit=True), None, protected)
    except _COMPILE_FAILURES:
        return None


def _one_line(source: str, filename: str, protected: frozenset[str]) -> Interactive | None:
    """The line compiled in "single" mode when it is simple statements only and passes the names check."""
    word = _FIRST_WORD.match(source)
    if source.startswith("@") or (word is not None and word.group() in _COMPOUND_WORDS):
        return None
    try:
        code = compile(source, filename, "single", dont_inherit=True)
    except _COMPILE_FAILURES:
        return None
    if _checked(code, None, protected) is None:
        return None
    raw = code.co_code
    last_shown = (len(raw) >= 6 and raw[-2] == _RETURN_VALUE and raw[-4] == _LOAD_CONST and raw[-6] == _PRINT_EXPR
                  and code.co_consts[raw[-3]] is None)
    if last_shown:
        # The PRINT_EXPR's position (its statement's): the third code unit from the end, as co_positions()
        # yields one entry per code unit; islice skips the others without building a list of them all.
        line, end_line, _, end_col = next(islice(code.co_positions(), len(raw) // 2 - 3, None))
        rest = source.encode("utf-8")[end_col or 0:].lstrip(b" \t;\n")
        last_shown = line == end_line == 1 and end_col is not None and (not rest or rest.startswith(b"#"))
    return Interactive(code, last_shown)


def _needs_guard(source: str) -> bool:
    """Text the names check cannot judge: imports (their checks stay with the guard), declarations and
    bare annotations (``global x``, ``x.attr: T`` compile to no use of the name), and \\r, \\f, \\v
    (they change what a line is)."""
    for word in _GUARD_ONLY_WORDS:
        if word in source:
            return True
    match = _BARE_ANNOTATION.search(source)
    while match is not None:
        if match.group(1) not in _BLOCK_HEADERS:
            return True
        match = _BARE_ANNOTATION.search(source, match.end())
    return False


def _checked(body: CodeType, expr: CodeType | None,
             protected: frozenset[str]) -> tuple[CodeType, CodeType | None] | None:
    protected, denied = _name_sets(protected)
    if _names_allowed(body, denied, protected) and (expr is None or _names_allowed(expr, denied, protected)):
        return body, expr
    return None


_name_sets_for: tuple[frozenset[str], frozenset[str], frozenset[str]] | None = None


def _name_sets(protected: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The protected names with final_answer, and every name the check refuses, for the worker's `protected`:
    built once while it stays the same set (the union of ~130 names cost a few microseconds every step)."""
    global _name_sets_for
    cached = _name_sets_for
    if cached is None or (cached[0] is not protected and cached[0] != protected):
        with_final = frozenset(protected) | {FINAL_ANSWER}
        cached = _name_sets_for = (frozenset(protected), with_final, _ALWAYS_CHECKED | with_final)
    return cached[1], cached[2]


def _last_column_0_line(lines: list[str]) -> int | None:
    """Where the last top-level statement probably starts: its last line at column 0 that is code and not
    an ``else``/``elif``/``except``/``finally`` clause, moved up over the decorators above it."""
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if not line or line[0] in " \t#":
            continue
        word = _FIRST_WORD.match(line)
        if word is not None and word.group() in _CLAUSE_KEYWORDS:
            continue
        while index > 0 and lines[index - 1].startswith("@"):
            index -= 1
        return index
    return None


def _names_allowed(code: CodeType, denied: frozenset[str], protected: frozenset[str]) -> bool:
    """Every name the code objects use passes the guard's checks; protected names only as calls/reads."""
    stack = [code]
    while stack:
        current = stack.pop()
        uses_protected = False
        for name in current.co_names:
            if name in denied or "__" in name or name.startswith(INTERNAL_PREFIX):
                if name not in protected:
                    return False
                uses_protected = True
        if uses_protected and _binds_one_of(current, protected):
            return False
        for names in (current.co_varnames, current.co_cellvars, current.co_freevars):
            for name in names:
                if name in denied or "__" in name or name.startswith(INTERNAL_PREFIX):
                    return False
        for const in current.co_consts:
            kind = type(const)
            if kind is CodeType:
                stack.append(const)
            elif kind is tuple:  # class-pattern attribute names and keyword names
                for item in const:
                    if type(item) is str and (item in denied or "__" in item):
                        return False
    return True


def _binds_one_of(code: CodeType, names: frozenset[str]) -> bool:
    """Whether the bytecode assigns or deletes one of ``names`` (module or global scope)."""
    raw, co_names, extended = code.co_code, code.co_names, 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | extended
        if op == _EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op in _NAME_BINDING_OPS and co_names[arg] in names:
            return True
    return False
