"""The known Python-level pivots get a clear error from the guard (the kernel layers stop them anyway).

These are the spellings an attacker used to get from ordinary code to the worker's internals; each is
closed as a class: type expressions evaluated by typing, unpickling entry points of authorized
libraries, ``sys`` as a filtered view, frames through tracebacks, the worker's own objects, templates.
"""

from __future__ import annotations

import pytest

from agents.executor import PythonSandbox


@pytest.fixture(scope="module")
def sb(tmp_path_factory):
    box = PythonSandbox(str(tmp_path_factory.mktemp("pivots")),
                        authorized_imports=["pandas", "numpy", "sys", "jinja2", "typing"])
    yield box
    box.close()


def refused(result) -> bool:
    return result.error is not None and result.output is None


def test_forward_ref_cannot_walk_frames(sb):
    code = (
        "import typing\n"
        "class CM:\n"
        "    def __enter__(self): return self\n"
        "    def __exit__(self, et, ev, tb):\n"
        "        global got\n"
        "        got = typing.ForwardRef('tb.tb_frame.f_back.f_locals')\n"
        "        return True\n"
        "with CM():\n"
        "    1 / 0\n"
        "got"
    )
    r = sb.run(code)
    assert refused(r) and "tb_frame" in r.error


def test_type_hints_from_strings_are_checked(sb):
    code = (
        "import typing\n"
        "def f(x: 'int.__class__.__subclasses__'): pass\n"
        "typing.get_type_hints(f)"
    )
    r = sb.run(code)
    assert refused(r) and "SecurityError" in r.error


def test_plain_forward_references_still_work(sb):
    r = sb.run("import typing\nclass Node:\n    nxt: 'Node | None' = None\n"
               "typing.get_type_hints(Node)['nxt'] == (Node | None)")
    assert r.error is None and r.output is True


def test_traceback_frames_are_unreachable(sb):
    r = sb.run("try:\n    1 / 0\nexcept Exception as e:\n    t = e.__traceback__\nt")
    assert refused(r)
    r = sb.run("import sys\ntry:\n    1 / 0\nexcept Exception:\n    tb = sys.exc_info()[2]\ntb.tb_frame")
    assert refused(r) and "tb_frame" in r.error


@pytest.mark.parametrize("code", [
    "import pandas.compat.pickle_compat",
    "import pandas as pd\npd.compat.pickle_compat.loads(b'x')",
    "from pandas.io import pickle",
    "import pickle",
    "import pandas as pd\npd.read_pickle('x.pkl')",
])
def test_unpickling_entry_points_are_refused(sb, code):
    assert refused(sb.run(code))


@pytest.mark.parametrize("attr", ["modules", "_getframe", "settrace", "path", "argv", "meta_path", "setprofile"])
def test_sys_is_a_filtered_view(sb, attr):
    r = sb.run(f"import sys\nsys.{attr}")
    assert refused(r)


def test_sys_facts_remain(sb):
    r = sb.run("import sys\n(sys.version_info[0], sys.maxsize > 0)")
    assert r.output == [3, True]


@pytest.mark.parametrize("code", [
    "final_answer.__closure__",
    "getattr(final_answer, '__globals__')",
    "final_answer.__code__",
    "vars(final_answer)",
])
def test_worker_internals_unreachable_from_final_answer(sb, code):
    r = sb.run(code)
    assert refused(r) or (r.output in ({}, [], None) and r.error is None)


def test_user_templates_run_in_jinja_sandbox(sb):
    r = sb.run("import jinja2\njinja2.Template(\"{{ ''.__class__.__mro__[1].__subclasses__() }}\").render()")
    assert refused(r)
    r = sb.run("import jinja2\njinja2.Template('{{ n * 2 }} items').render(n=21)")
    assert r.output == "42 items"


def test_styler_templates_still_render(sb):
    r = sb.run("import pandas as pd\nlen(pd.DataFrame({'a': [1, 2]}).style.to_html()) > 100")
    assert r.error is None and r.output is True


@pytest.mark.parametrize("code", [
    "import operator, numpy as np\nAG = type(operator.attrgetter('x'))\nAG('__globals__')(np.load)",
    "import string\nstring.Formatter.__mro__[1]().get_field('0.__class__.__mro__', [1], {})",
    "import numpy as np\nnp.load.__wrapped__",
    "import typing\ntyping.ForwardRef.__init__.__wrapped__",
    "import pandas as pd\npd.eval.__wrapped__('(1).__class__')",
    "import pandas as pd\n"
    "type(pd.DataFrame({'a': [1]}).style).env.from_string('{{ cycler.__init__.__globals__ }}').render()",
    "import signal",
])
def test_pivots_found_by_the_attack_are_closed(sb, code):
    r = sb.run(code)
    assert r.error is not None, r.output


def test_numpy_memory_primitives_are_refused_and_windows_still_work(tmp_path):
    with PythonSandbox(str(tmp_path), authorized_imports=["numpy"]) as sb:
        r = sb.run("import numpy as np\nfrom numpy.lib.stride_tricks import as_strided\n"
                   "as_strided(np.zeros(1), shape=(2,), strides=(1 << 40,))")
        assert r.error_type == "SecurityError" and "as_strided" in r.error
        r = sb.run("import numpy as np\nnp.lib.array_utils.byte_bounds(np.zeros(1))")
        assert r.error_type == "SecurityError", r.error
        r = sb.run("import numpy as np\nfrom numpy.lib.stride_tricks import sliding_window_view\n"
                   "sliding_window_view(np.arange(5), 3).sum(axis=1).tolist()")
        assert r.output == [3, 6, 9], r.error
