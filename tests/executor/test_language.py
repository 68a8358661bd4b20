"""The whole language runs as in CPython, and state persists between runs."""

from __future__ import annotations

import pytest

CASES = [
    ("walrus", "if (n := 10) > 5:\n    r = n\nr", 10),
    ("match", "match {'a': 1, 'b': [1, 2, 3]}:\n    case {'a': x, 'b': [_, *rest]}:\n"
     "        r = (x, rest)\nr", [1, [2, 3]]),
    ("match class", "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n    y: int\n"
     "match P(1, 2):\n    case P(x=1, y=yy):\n        r = yy\nr", 2),
    ("generator send", "def gen():\n    x = yield 1\n    yield x * 2\ng = gen(); next(g)\ng.send(21)", 42),
    ("yield from", "def a():\n    yield from range(3)\nlist(a())", [0, 1, 2]),
    ("global nonlocal", "c = 0\ndef inc():\n    global c\n    c += 1\ndef outer():\n    v = 0\n"
     "    def inner():\n        nonlocal v\n        v += 1\n        return v\n    inner()\n    return inner()\n"
     "inc(); inc()\n(c, outer())", [2, 2]),
    ("decorators", "import functools\ndef twice(f):\n    @functools.wraps(f)\n    def w(*a):\n"
     "        return 2 * f(*a)\n    return w\n@twice\ndef sq(x):\n    return x * x\n(sq(3), sq.__name__)", [18, "sq"]),
    ("star unpacking", "a, *b, c = range(5)\n[*b, *'xy']", [1, 2, 3, "x", "y"]),
    ("dict unpacking", "d = {**{'x': 1}, 'y': 2, **dict(z=3)}\nd", {"x": 1, "y": 2, "z": 3}),
    ("fstring conversions", "s = 'hi'\nf'{s!r} {s!a} {s:>4} {3.14159:.2f} {s=}'", "'hi' 'hi'   hi 3.14 s='hi'"),
    ("except star", "out = []\ntry:\n    raise ExceptionGroup('g', [ValueError(1), TypeError(2)])\n"
     "except* ValueError as eg:\n    out.append('v')\nexcept* TypeError as eg:\n    out.append('t')\nout", ["v", "t"]),
    ("user dunders", "class V:\n    def __init__(self, x):\n        self.x = x\n    def __add__(self, o):\n"
     "        return V(self.x + o.x)\n    def __eq__(self, o):\n        return self.x == o.x\n"
     "    def __hash__(self):\n        return hash(self.x)\n"
     "    def __len__(self):\n        return self.x\n    def __getitem__(self, i):\n        return i * 2\n"
     "    def __repr__(self):\n        return f'V({self.x})'\n"
     "(V(1) + V(2) == V(3), len(V(4)), V(0)[5], repr(V(7)), {V(1): 1}[V(1)])", [True, 4, 10, "V(7)", 1]),
    ("inheritance super", "class A:\n    def f(self):\n        return 'a'\nclass B(A):\n    def f(self):\n"
     "        return super().f() + 'b'\n    def __init__(self):\n        super().__init__()\nB().f()", "ab"),
    ("properties classmethods", "class C:\n    k = 3\n    @property\n    def p(self):\n        return 5\n"
     "    @classmethod\n    def m(cls):\n        return cls.k\n    @staticmethod\n    def s():\n        return 1\n"
     "(C().p, C.m(), C.s())", [5, 3, 1]),
    ("async", "import asyncio\nasync def f(x):\n    await asyncio.sleep(0.01)\n    return x * 2\n"
     "async def main():\n    return await asyncio.gather(f(1), f(2))\nasyncio.run(main())", [2, 4]),
    ("async generators", "import asyncio\nasync def agen():\n    for i in range(3):\n        yield i\n"
     "async def main():\n    return [x async for x in agen()]\nasyncio.run(main())", [0, 1, 2]),
    ("context managers", "import contextlib\n@contextlib.contextmanager\ndef cm():\n    yield 5\n"
     "with cm() as v:\n    r = v\nr", 5),
    ("lambda defaults", "fs = [lambda i=i: i for i in range(3)]\n[f() for f in fs]", [0, 1, 2]),
    ("matmul", "import numpy as np\nfloat((np.eye(2) @ np.ones(2)).sum())", 2.0),
    ("comprehensions", "{k: v for k, v in zip('ab', range(2))} | {'s': sorted({x % 3 for x in range(10)})}",
     {"a": 0, "b": 1, "s": [0, 1, 2]}),
    ("try finally", "out = []\ndef f():\n    try:\n        return 1\n    finally:\n        out.append('f')\n"
     "(f(), out)", [1, ["f"]]),
    ("recursion", "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(20)", 6765),
    ("slots dataclass", "from dataclasses import dataclass, field\n@dataclass(frozen=True)\nclass P:\n    x: int\n"
     "    tags: list = field(default_factory=list)\nP(1).x", 1),
    ("enum typing", "import enum, typing\nclass Color(enum.Enum):\n    RED = 1\nT = typing.TypeVar('T')\n"
     "def first(xs: typing.List[T]) -> T:\n    return xs[0]\n(Color.RED.name, first([9]))", ["RED", 9]),
    ("type hints", "import typing\nclass A:\n    x: 'int'\ntyping.get_type_hints(A)['x'].__name__", "int"),
    ("str format ok", "'{} {name}'.format(1, name='n') + '{0}{x[0]}'.format(1, x=[7]) "
     "+ '{x[0]}'.format_map({'x': [7]})", "1 n177"),
    ("bigint", "2 ** 200 % 1000", 376),
]


@pytest.mark.parametrize("code,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_language_feature(sandbox, code, expected):
    r = sandbox.run(code)
    assert r.error is None, r.error
    assert r.output == expected


def test_undefined_name_raises_name_error(sandbox):
    r = sandbox.run("undefined_name_xyz + 1")
    assert r.error_type == "NameError"
    assert "undefined_name_xyz" in r.error


def test_logs_and_last_expression(sandbox):
    r = sandbox.run("x = 2\nprint(x)\nx * 21")
    assert r.logs == "2\n"
    assert r.output == 42
    assert not r.is_final_answer


def test_state_persists(sandbox):
    sandbox.run("import math as m\nclass K:\n    v = 5\ndef f(a):\n    return a + K.v\ntotal = 1")
    r = sandbox.run("total += f(1)\n(total, m.floor(2.5))")
    assert r.output == [7, 2]


def test_stderr_is_captured(sandbox):
    r = sandbox.run("import warnings\nwarnings.warn('careful')\nprint('out')")
    assert "careful" in r.logs and "out" in r.logs


def test_non_json_output_is_repr(sandbox):
    r = sandbox.run("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    assert r.output_type == "DataFrame"
    assert "a" in r.output and "1" in r.output


def test_numpy_scalar_output(sandbox):
    r = sandbox.run("import numpy as np\nnp.int64(3) + 4")
    assert r.output == 7


def test_pandas_and_numpy_work(sandbox):
    r = sandbox.run(
        "import numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'g': np.arange(100) % 3, 'v': np.arange(100)})\n"
        "lim = 50\n"
        "res = df.groupby('g').v.mean().round(1).to_dict()\n"
        "q = len(df.query('v > @lim'))\n"
        "(res, q, float(np.random.default_rng(0).random() < 1), int(df.eval('v * 2').sum()))"
    )
    assert r.error is None, r.error
    assert r.output == [{"0": 49.5, "1": 49.0, "2": 50.0}, 49, 1.0, 9900] or r.output_type == "tuple"


def test_big_but_bounded_loop(sandbox):
    r = sandbox.run("s = 0\nfor i in range(2_000_000):\n    s += i\ns")
    assert r.output == sum(range(2_000_000))


def test_final_answer_stops_code(sandbox):
    r = sandbox.run("print('a')\nfinal_answer({'v': 1})\nprint('never')")
    assert r.is_final_answer and r.output == {"v": 1}
    assert r.logs == "a\n"


def test_final_answer_through_except_exception(sandbox):
    r = sandbox.run("try:\n    final_answer(42)\nexcept Exception:\n    print('caught')\nprint('after')")
    assert r.is_final_answer and r.output == 42
    assert "caught" not in r.logs and "after" not in r.logs


def test_send_variables(sandbox):
    sandbox.send_variables({"task_args": {"n": 3, "items": [1, 2]}})
    r = sandbox.run("task_args['n'] + sum(task_args['items'])")
    assert r.output == 6
