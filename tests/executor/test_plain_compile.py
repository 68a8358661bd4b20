"""The guard's fast path must never accept what the full guard would refuse or rewrite.

Differential test: every snippet of a large corpus (the escape attempts and programs of this test suite,
windows of real Python files, hand-made edge cases) goes through both paths; wherever the fast path
compiles code, the full guard must accept the same source unchanged and give equal code objects.
"""

from __future__ import annotations

import ast
import random
import sysconfig
from pathlib import Path

import pytest

from agents.executor.ast_guard import FINAL_ANSWER, GuardError, guard_source
from agents.executor.plain_compile import Interactive, compile_plain, compile_plain_or_parse

PROTECTED = frozenset({FINAL_ANSWER, "lookup", "web_search"})
TESTS_DIR = Path(__file__).parent
PROJECT = TESTS_DIR.parent.parent

EDGE_CASES = [
    "x = 1; x",
    "x = 1\ny = 2; y",
    "f(\n1,\n2)",
    "foo(\n)\n",
    "[1,\n2]\n",
    "x = (1,\n2)\n",
    "if x:\n    y\n",
    "if x:\n    y\nelse:\n    z\n",
    "@dec\ndef f():\n    pass\n",
    "s = '''\nabc\n'''\n",
    "print('''\nhello''')\n",
    "x = 1 + \\\n  2\nx\n",
    "x = 1 \\\n  ; x\n",
    "# comment only\n",
    "\n\n",
    "",
    "x\n# trailing comment\n\n",
    "'just a string'",
    "lambda: 1",
    "async def f():\n    return 1\n",
    "y = [i for i in range(3)]\ny",
    "final_answer(3)",
    "final_answer = 3",
    "lookup = 1\n",
    "def f(final_answer):\n    return 1\n",
    "x.__class__",
    "x.gi_frame",
    "x.os",
    "os = 1",
    "'{0.__class__}'.format(1)",
    "d.__dict__",
    "__sbx_ga__(1, 'a')",
    "class A:\n    pass\n",
    "class A:\n    def f(self):\n        return super().f()\n",
    "match p:\n    case P(__class__=c):\n        pass\n",
    "match p:\n    case P(x=c):\n        c\n",
    "match p:\n    case {**rest}:\n        rest\n",
    "try:\n    pass\nexcept* ValueError as e:\n    e\n",
    "global final_answer\n",
    "x: int = 1\nx",
    "if False:\n    x.__class__\ny = 2\n",
    "while False:\n    (1).__class__\n",
    "f(**{'__class__': 1})",
    "f(_x=1)",
    "f(__x=1)",
    "x = 1\n\fx\n",
    "x = 1\r\nx\r\n",
    "x = 1\rx",
    "del final_answer",
    "for final_answer in []:\n    pass\n",
    "with open('f') as lookup:\n    pass\n",
    "(final_answer := 2)",
    "x = [final_answer for final_answer in range(2)]",
    "print(x)\n    ",
    "  x = 1\n",
    "x = 1\n  y = 2\n",
    "yield 1",
    "await x",
    "return 1",
    "x = \"a\\0b\"",
    "a\x00b",
    "def f():\n    final_answer: int\n",
    "def f():\n    x.__class__: int\n",
    "def f():\n    x.gi_frame : 'T'\n    return 1\n",
    "x.__class__: int\n",
    "final_answer: int\n",
    "class A:\n    final_answer: int\n",
    "def f():\n    global lookup\n",
    "def f():\n    def g():\n        nonlocal __sbx_x\n",
    "if False:\n    x.__class__\n",
    "if 0:\n    x.gi_frame\n",
    "assert x.__class__\n",
    "try:\n    x = 1\nexcept ValueError:\n    pass\nelse:\n    x\nfinally:\n    y = 2\n",
    "d = {\n  a: 1,\n  b: 2\n}\n",
    "total = 0\nfor i in range(5):\n    total += i\n",
]


def _strings_in_test_files() -> list[str]:
    """Every string literal of this test suite that is Python code (escape attempts, programs)."""
    found = []
    for path in sorted(TESTS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
                try:
                    compile(node.value, "<s>", "exec", dont_inherit=True)
                except (SyntaxError, ValueError):
                    continue
                found.append(node.value)
    return found


def _windows_of_real_files(limit_files: int = 60, seed: int = 7) -> list[str]:
    """Runs of 1-6 consecutive top-level statements cut from real modules, and their tails."""
    rng = random.Random(seed)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))[:limit_files] + sorted((PROJECT / "agents").rglob("*.py"))
    snippets = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = text.split("\n")
        starts = [node.lineno - 1 for node in tree.body]
        ends = [node.end_lineno for node in tree.body]
        for _ in range(min(12, len(starts))):
            i = rng.randrange(len(starts))
            j = min(len(starts) - 1, i + rng.randrange(6))
            snippets.append("\n".join(lines[starts[i]:ends[j]]) + "\n")
        # Function bodies dedented: the kind of code agents write (loops, calls, final expressions).
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and len(snippets) % 3 == 0:
                body = node.body
                first, last = body[0].lineno - 1, body[-1].end_lineno
                indent = len(lines[first]) - len(lines[first].lstrip())
                chunk = "\n".join(line[indent:] for line in lines[first:last])
                snippets.append(chunk.replace("return ", "", 1) + "\n")
    return snippets


def _guarded_code(source: str):
    guarded = guard_source(source, PROTECTED, "<t>")
    body = compile(guarded.body, "<t>", "exec", dont_inherit=True)
    expr = compile(guarded.last_expr, "<t>", "eval", dont_inherit=True) if guarded.last_expr else None
    return body, expr


def _check(source: str) -> bool:
    """True when the fast path took the code (and agreed with the full guard)."""
    fast = compile_plain(source, PROTECTED, "<t>")
    if fast is None:
        return False
    try:
        body, expr = _guarded_code(source)
    except GuardError as exc:
        pytest.fail(f"fast path accepted code the guard refuses ({exc}):\n{source}")
    except SyntaxError as exc:
        pytest.fail(f"fast path accepted code that does not compile ({exc}):\n{source}")
    if isinstance(fast, Interactive):
        _check_interactive(fast, source, expr is not None)
        return True
    assert fast[0] == body, f"statements differ from the guard's for:\n{source}"
    assert fast[1] == expr, f"final expression differs from the guard's for:\n{source}"
    return True


def _check_interactive(fast: Interactive, source: str, guard_has_final_expression: bool) -> None:
    """A one-liner compiled in "single" mode is exactly the "single" compile of the tree the guard accepted
    unchanged, and its last value is the step's value exactly when the guard finds a final expression (the
    value itself: `test_one_liners_give_the_guards_value`)."""
    tree = ast.parse(source, "<t>", "exec")
    assert fast.code == compile(ast.Interactive(body=tree.body), "<t>", "single", dont_inherit=True), source
    assert fast.last_shown == guard_has_final_expression, source


def test_edge_cases_agree_with_the_guard():
    taken = [source for source in EDGE_CASES if _check(source)]
    # The common shapes really take the fast path; the risky ones are left to the guard.
    for source in ("f(\n1,\n2)", "x.__class__", "final_answer = 3", "class A:\n    pass\n",
                   "x = 1\r\nx\r\n", "x = 1\n\fx\n", "f(__x=1)", "def f():\n    x.__class__: int\n",
                   "match p:\n    case P(__class__=c):\n        pass\n"):
        assert source not in taken, source
    for source in ("y = [i for i in range(3)]\ny", "x = 1; x", "final_answer(3)", "'just a string'",
                   "x\n# trailing comment\n\n",
                   "if x:\n    y\nelse:\n    z\n", "x = 1 + \\\n  2\nx\n",
                   "@dec\ndef f():\n    pass\n", "total = 0\nfor i in range(5):\n    total += i\n"):
        assert source in taken, source


def test_the_suites_programs_and_escape_attempts_agree_with_the_guard():
    snippets = _strings_in_test_files()
    assert len(snippets) > 300  # the corpus really is the suite's code
    taken = sum(_check(source) for source in snippets)
    assert 0 < taken < len(snippets)


def test_windows_of_real_python_files_agree_with_the_guard():
    snippets = _windows_of_real_files()
    assert len(snippets) > 500
    taken = sum(_check(source) for source in snippets)
    assert taken > len(snippets) // 20  # the fast path is exercised, not skipped


def test_fast_path_code_runs_with_the_right_final_value(sandbox):
    result = sandbox.run("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(15)\n")
    assert result.output == 610
    result = sandbox.run("total = 0\nfor i in range(5):\n    total += i\n")
    assert result.output is None and sandbox.run("total").output == 10
    result = sandbox.run("values = [1,\n  2]\nsum(\n  values\n)")
    assert result.output == 3


def test_annotations_are_evaluated_as_in_plain_python(sandbox):
    """The worker's own ``from __future__ import annotations`` must not leak into the code it compiles."""
    for code in ("class A:\n    x: int\nA.__annotations__['x'] is int",  # full guard (dunder)
                 "def f(y: int) -> str:\n    return str(y)\nimport typing\ntyping.get_type_hints(f)['y'] is int"):
        result = sandbox.run(code)
        assert result.error is None, result.error
        assert result.output is True


@pytest.mark.parametrize("source", [
    "final_answer = 1", "del final_answer", "for final_answer in []:\n    pass\n", "(final_answer := 2)",
    "final_answer += 1", "lookup, x = 1, 2", "[*lookup] = [1]", "with f() as final_answer:\n    pass\n",
    "try:\n    pass\nexcept E as lookup:\n    pass\n", "def final_answer():\n    pass\n",
    "class lookup:\n    pass\n", "def f():\n    final_answer = 1\n", "lambda final_answer: 1",
    "match x:\n    case final_answer:\n        pass\n", "x = [final_answer for final_answer in y]",
    "x = 1\n" * 300 + "final_answer = 2",  # past 256 names: EXTENDED_ARG
])
def test_binding_a_protected_name_never_takes_the_fast_path(source):
    assert compile_plain(source, PROTECTED, "<t>") is None
    with pytest.raises(GuardError):
        guard_source(source, PROTECTED, "<t>")


def test_calling_and_reading_tools_takes_the_fast_path():
    for source in ("final_answer(3)", "x = lookup('a')\nfinal_answer(x)", "f = final_answer\n"):
        assert _check(source), source


def _guard_outcome(source: str, tree: ast.Module | None = None):
    """The guard's verdict on ``source`` (its error message, or the code it compiles to)."""
    try:
        guarded = guard_source(source, PROTECTED, "<t>", tree=tree)
        body = compile(guarded.body, "<t>", "exec", dont_inherit=True)
        expr = compile(guarded.last_expr, "<t>", "eval", dont_inherit=True) if guarded.last_expr else None
    except (GuardError, SyntaxError) as exc:
        return type(exc).__name__, str(exc)
    return body, expr


def test_the_fast_paths_parse_handed_to_the_guard_gives_the_guards_own_verdict():
    """The one-line "statements; expression" shape is parsed once: the tree the fast path hands over is the
    guard's own parse, and the guard refuses, rewrites and compiles exactly as when it parses the text."""
    one_liners = ["x = x + 1; print(x)", "x.__class__; x", "final_answer = 1; final_answer",
                  "import os; os", "y = a.os; y", "x = 1; x.__dict__", "f(__x=1); 2", "del lookup; 1",
                  "x = 1; lookup(x)", "a = b.gi_frame; a"]
    handed = 0
    for source in one_liners + EDGE_CASES + _strings_in_test_files():
        if compile_plain(source, PROTECTED, "<t>") is not None:
            _check(source)  # taken by the fast path: the guard's code, as for any other text
            continue
        compiled = compile_plain_or_parse(source, PROTECTED, "<t>")
        if not isinstance(compiled, ast.Module):
            assert (compiled is None) == (compile_plain(source, PROTECTED, "<t>") is None)
            continue
        handed += 1
        assert compile_plain(source, PROTECTED, "<t>") is None
        assert ast.dump(compiled, include_attributes=True) == ast.dump(
            ast.parse(source, "<t>", "exec"), include_attributes=True), source
        assert _guard_outcome(source, compiled) == _guard_outcome(source), source
    # Those that need the guard's check or rewrite ("import os; os" takes the guard without any parse here).
    assert handed >= len(one_liners) - 3


def test_one_line_statements_then_an_expression_take_the_fast_path():
    """``x = x + 1; print(x)``: its tree is split and compiled as the guard would; the names check decides, so
    a dunder, a pivot, a frame attribute or a protected name still goes to the guard."""
    for source in ("x = x + 1; print(x)", "x = 1; x", "a = f(x); b = a * 2; b", "x = 1; lookup(x)",
                   "d = {'k': 1}; d['k']"):
        assert _check(source), source
    for source in ("x.__class__; x", "final_answer = 1; final_answer", "y = a.os; y", "x = 1; x.__dict__",
                   "f(__x=1); 2", "del lookup; 1", "a = b.gi_frame; a", "x = 1; __sbx_ga__(x, 'a')"):
        assert compile_plain(source, PROTECTED, "<t>") is None, source
        assert isinstance(compile_plain_or_parse(source, PROTECTED, "<t>"), ast.Module), source


ONE_LINERS = ["x = 1; x + 1", "x = 2; print(x)", "y = 3; pass", "f = len; f([1, 2]); z = 1", "x = 5; x  # note",
              "x = 1; None", "x = 4; x;", "q = 1; (q, q)", "s = 'a;b'; s", "s = 'é'; s + 'x'", "x = 1; ...",
              "a = 1; b = 2; a if b else None", "a = [1, 2]; [i * 2 for i in a]", "x = 1; lambda: x",
              "f = len; f('ab'); f('abc')", "x = 1 ; x ; x + 1 ;  # two", "t = (1,\n2); t"]


@pytest.mark.parametrize("source", ONE_LINERS)
def test_one_liners_give_the_guards_value(source):
    """Run as the worker runs them (a catcher in `sys.displayhook`), one-liners give the value and the names the
    guard's split gives; statements after the last expression (``pass``) leave no value."""
    import sys

    fast = compile_plain(source, PROTECTED, "<t>")
    body, expr = _guarded_code(source)
    expected_ns: dict = {}
    exec(body, expected_ns)
    expected = eval(expr, expected_ns) if expr is not None else None
    if not isinstance(fast, Interactive):
        assert "\n" in source  # the two-line one takes the text split
        return
    shown: list = [None]
    saved = sys.displayhook
    sys.displayhook = lambda value: shown.__setitem__(0, value)
    ns: dict = {}
    try:
        exec(fast.code, ns)
    finally:
        sys.displayhook = saved
    got = shown[0] if fast.last_shown else None
    assert repr(got) == repr(expected) or (callable(got) and callable(expected)), source
    assert set(ns) == set(expected_ns), source


def test_lines_that_start_a_compound_statement_never_take_the_one_line_path():
    for source in ("if True: a = 1; a", "for i in range(2): i; i", "while False: x; y", "with f(): a; b",
                   "class A: x = 1; x", "def f(): a; b", "try: a; b"):
        assert not isinstance(compile_plain_or_parse(source, PROTECTED, "<t>"), Interactive), source
