"""Layers 1-2: escape attempts through introspection, builtins, imports and libraries.

Each attack tries to reach something (a dunder, the real builtins, os) and
the test checks the goal was not reached, not only that an error appeared.
"""

from __future__ import annotations

import pytest

# Each snippet sets `got` only if the attack worked; the sandbox must refuse before that.
DUNDER_AND_INTROSPECTION = {
    "subclasses": "got = ().__class__.__base__.__subclasses__()",
    "subclasses getattr": "got = getattr(object, '__subcl' + 'asses__')()",
    "type dict subclasses": "got = type.__dict__['__subclasses__'](object)",
    "vars type subclasses": "got = vars(type)['__subclasses__'](object)",
    "getattr dict subclasses": "got = getattr(type, '__dict__')['__subclasses__'](object)",
    "func globals": "def f(): pass\ngot = f.__globals__",
    "func globals getattr": "def f(): pass\ngot = getattr(f, '__glo' + 'bals__')",
    "func code": "def f(): pass\ngot = f.__code__",
    "closure": "def f():\n    x = 1\n    return lambda: x\ngot = f().__closure__",
    "gen frame": "def g():\n    yield 1\nx = g()\ngot = x.gi_frame",
    "gen frame getattr": "def g():\n    yield 1\ngot = getattr(g(), 'gi_' + 'frame')",
    "gen code": "def g():\n    yield 1\ngot = g().gi_code",
    "coroutine frame": "async def c(): pass\nco = c()\ngot = co.cr_frame",
    "async gen frame": "async def a():\n    yield 1\ngot = a().ag_frame",
    "traceback frame": "try:\n    1 / 0\nexcept Exception as e:\n    got = e.__traceback__.tb_frame",
    "traceback getattr": "try:\n    1 / 0\nexcept Exception as e:\n    got = getattr(e, '__trace' + 'back__')",
    "frame back": "def g():\n    yield 1\nx = g()\ngot = getattr(getattr(x, 'gi_frame'), 'f_back')",
    "augassign dunder": "def f(): pass\nf.__globals__ += 1\ngot = 1",
    "format traversal": "def f(): pass\ngot = '{0.__globals__}'.format(f)",
    "format attr walk": "got = '{0.__class__.__base__}'.format(1)",
    "format_map traversal": "def f(): pass\ngot = '{f.__globals__}'.format_map({'f': f})",
    "unbound str format": "got = str.format('{0.__class__}', 1)",
    "stored format method": "fmt = '{0.__init__.__globals__}'.format\ngot = fmt(lambda: 0)",
    "string formatter": "import string\ngot = string.Formatter().format('{0.__globals__}', lambda: 0)",
    "attrgetter": "import operator\ngot = operator.attrgetter('__globals__')(lambda: 0)",
    "attrgetter dotted": "import operator\ngot = operator.attrgetter('__init__.__globals__')(1)",
    "methodcaller": "import operator\ngot = operator.methodcaller('__reduce_ex__', 2)(1)",
    "match class attr": "def f(): pass\nmatch f:\n    case object(__globals__=g):\n        got = g",
    "match args": "class C:\n    __match_args__ = ('__globals__',)\ngot = 1",
    "print self": "got = print.__self__",
    "reduce": "got = (1).__reduce_ex__(2)",
    "setattr dunder": "def f(): pass\nsetattr(f, '__code__', None)\ngot = 1",
    "hasattr dunder": "got = hasattr(lambda: 0, '__globals__')",
    "str subclass name": "class S(str):\n    def __eq__(self, o):\n        return False\n"
                         "got = getattr(lambda: 0, S('__globals__'))",
    "dunder name load": "got = __builtins__",
    "dunder import": "got = __import__('os')",
    "dunder loader": "got = __loader__",
    "super thisclass": "class A:\n    def f(self):\n        return super().__thisclass__\ngot = A().f()",
    "typing forward ref": "import typing\ndef f(x: \"__import__('os')\"): pass\ngot = typing.get_type_hints(f)",
    "typing forward ref call": "import typing\ndef f(x: \"open('/etc/passwd').read()\"): pass\n"
                               "got = typing.get_type_hints(f, globalns={})",
    "internal helper": "got = __sbx_ga__",
    "internal helper attr": "got = (1).__sbx_x",
}

RECOVER_BUILTINS = {
    "eval": "got = eval('1 + 1')",
    "exec": "exec('got = 1')",
    "compile": "got = compile('1', 'x', 'eval')",
    "globals": "got = globals()",
    "locals": "got = locals()",
    "vars no arg": "got = vars()",
    "breakpoint": "breakpoint()\ngot = 1",
    "input": "got = input()",
    "builtins import": "import builtins\ngot = builtins.eval",
    "np builtins": "import numpy as np\ngot = np.core.multiarray.__builtins__",
    "module dict builtins": "import json\ngot = vars(json)['__builtins__']",
    "view getattr hook": "import json\ngot = vars(json)['__getattr__']",
    "pandas eval builtins": "import pandas as pd\ngot = pd.eval('__builtins__')",
    "pandas eval import": "import pandas as pd\ngot = pd.eval(\"__import__('os')\")",
    "query dunder": "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ngot = df.query('a.__class__.__base__ == 1')",
    "dataframe eval helper": "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ngot = df.eval('__sbx_ga__')",
}

IMPORT_BYPASS = {
    "os": "import os\ngot = os",
    "sys": "import sys\ngot = sys",
    "subprocess": "import subprocess\ngot = subprocess",
    "socket": "import socket\ngot = socket",
    "ctypes": "import ctypes\ngot = ctypes",
    "importlib": "import importlib\ngot = importlib",
    "pickle": "import pickle\ngot = pickle",
    "from os": "from os import system\ngot = system",
    "relative": "from . import x\ngot = x",
    "private module": "import _posixsubprocess\ngot = 1",
    "worker package": "import _agentdeck_sandbox.worker\ngot = 1",
    "dunder main": "import __main__\ngot = __main__",
    "pandas os": "import pandas as pd\ngot = pd.io.common.os",
    "pandas os system": "import pandas as pd\ngot = pd.io.common.os.system",
    "from pandas os": "from pandas.io.common import os\ngot = os",
    "getattr os": "import pandas as pd\ngot = getattr(pd.io.common, 'o' + 's')",
    "numpy ctypeslib": "import numpy as np\ngot = np.ctypeslib",
    "import ctypeslib": "import numpy.ctypeslib\ngot = 1",
    "from numpy ctypeslib": "from numpy import ctypeslib\ngot = ctypeslib",
    "numpy private": "import numpy as np\ngot = np._core",
    "numpy sys": "import numpy as np\ngot = np.lib.npyio.sys",
    "matplotlib os": "import matplotlib\ngot = matplotlib.os",
    "pathlib os": "import pathlib\ngot = pathlib.os",
    "asyncio subprocess": "import asyncio\ngot = asyncio.subprocess",
    "asyncio create_subprocess": "import asyncio\ngot = asyncio.create_subprocess_exec",
    "os path os": "import os.path\ngot = os.path.os",
    "json decoder private": "import json\ngot = json._default_decoder",
    "module type reload": "import json\nM = type(json)\ngot = M('os').system",
    "star import os": "from posixpath import *\ngot = os.system",
}

PIVOT_LIBRARIES = {
    "read_pickle": "import pandas as pd\npd.DataFrame({'a': [1]}).to_pickle('p.pkl')\ngot = pd.read_pickle('p.pkl')",
    "np load pickle": "import numpy as np\nnp.save('o.npy', np.array([{'a': 1}], dtype=object), allow_pickle=True)\n"
                      "got = np.load('o.npy', allow_pickle=True)",
    "np load pickle positional": "import numpy as np\n"
                                 "np.save('o3.npy', np.array([{'a': 1}], dtype=object), allow_pickle=True)\n"
                                 "got = np.load('o3.npy', None, True)",
    "np read_array pickle": "import numpy as np\nnp.save('o2.npy', np.array([{}], dtype=object), allow_pickle=True)\n"
                            "f = open('o2.npy', 'rb')\ngot = np.lib.format.read_array(f, allow_pickle=True)",
    "vectorize getattr": "import numpy as np\ngot = np.vectorize(getattr)(np.array([print], dtype=object), '__self__')",
    "map getattr": "got = list(map(getattr, [print], ['__self__']))",
    "functools reduce": "import functools\ngot = functools.reduce(getattr, ['__init__', '__globals__'], 1)",
    "dataclass field default": "import dataclasses\ngot = dataclasses.fields.__globals__",
    "patch dunder of library class": "import json\njson.JSONEncoder.__init__ = lambda *a: None\ngot = 1",
    "setattr dunder of library class": "import typing\n"
                                       "setattr(typing.ForwardRef, '__init__', lambda *a: None)\ngot = 1",
    "fd open": "got = open(4, 'wb')",
    "io fileio fd": "import io\ngot = io.FileIO(4, 'w')",
    "io open fd": "import io\ngot = io.open(3, 'rb')",
}


def _attack(sandbox, code):
    r = sandbox.run(code + "\nprint('REACHED')\nfinal_answer(repr(got)[:200])")
    assert r.error is not None, f"attack was not stopped: {r.output!r}"
    assert "REACHED" not in r.logs
    assert not r.is_final_answer
    check = sandbox.run("'got' in dir()")
    if check.output:  # an earlier statement may have set got: it must not be the prize
        sandbox.run("del got")
    return r


@pytest.mark.parametrize("code", list(DUNDER_AND_INTROSPECTION.values()), ids=list(DUNDER_AND_INTROSPECTION))
def test_dunder_and_introspection_refused(sandbox, code):
    _attack(sandbox, code)


@pytest.mark.parametrize("code", list(RECOVER_BUILTINS.values()), ids=list(RECOVER_BUILTINS))
def test_builtins_cannot_be_recovered(sandbox, code):
    _attack(sandbox, code)


@pytest.mark.parametrize("code", list(IMPORT_BYPASS.values()), ids=list(IMPORT_BYPASS))
def test_imports_cannot_be_bypassed(sandbox, code):
    _attack(sandbox, code)


@pytest.mark.parametrize("code", list(PIVOT_LIBRARIES.values()), ids=list(PIVOT_LIBRARIES))
def test_authorized_libraries_are_no_pivot(sandbox, code):
    _attack(sandbox, code)


def test_monkey_patching_stays_in_the_worker(tmp_path):
    """Library classes live in the worker process: patching them never reaches the app,
    and the worker's channel (private C-level JSON codec) keeps working."""
    import json

    from agents.executor import PythonSandbox

    with PythonSandbox(workdir=str(tmp_path), timeout_s=10) as sb:
        r = sb.run("import json\njson.JSONEncoder.default = lambda self, o: 'pwned'\n"
                   "json.JSONEncoder.encode = lambda self, o: '\"forged\"'\n"
                   "json.JSONDecoder.decode = lambda self, s: {'op': 'result'}\njson.dumps([1])")
        assert r.output == '"forged"'  # the sandbox's own json is patched...
        r2 = sb.run("final_answer([1, 2])")
        assert r2.is_final_answer and r2.output == [1, 2]  # ...the channel is not
    assert json.dumps([1]) == "[1]"
    try:
        json.dumps(object())
        raise AssertionError("app's json was changed")
    except TypeError:
        pass


def test_guard_errors_name_line(sandbox):
    r = sandbox.run("x = 1\ny = x.__globals__")
    assert r.error_type == "SecurityError"
    assert "__globals__" in r.error and "line 2" in r.error


def test_allowed_submodules_work(sandbox):
    r = sandbox.run("import numpy.random\nimport os.path\nfrom os import path\n"
                    "(int(numpy.random.default_rng(1).integers(0, 1)), path.join('a', 'b'), os.path.basename('x/y'))")
    assert r.output == [0, "a/b", "y"]


def test_import_error_names_parameter(sandbox):
    r = sandbox.run("import sqlite3")
    assert r.error_type == "ImportError"
    assert "authorized_imports" in r.error
