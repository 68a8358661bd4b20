"""Artifacts in the workspace, saved figures, and errors people can act on."""

from __future__ import annotations

import os


def test_artifacts_reported(sandbox):
    r = sandbox.run("open('report.txt', 'w').write('hello')\nopen('pic.svg', 'w').write('<svg/>')")
    arts = {a.path: a for a in r.artifacts}
    assert arts["report.txt"].kind == "file" and arts["report.txt"].size == 5 and arts["report.txt"].created
    assert arts["pic.svg"].kind == "image"
    assert os.path.isabs(arts["report.txt"].abs_path)
    again = sandbox.run("1")
    assert again.artifacts == []
    changed = sandbox.run("open('report.txt', 'a').write('!')")
    assert [a.path for a in changed.artifacts] == ["report.txt"] and not changed.artifacts[0].created


def test_open_figures_saved(sandbox):
    r = sandbox.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('t')\nplt.show()\n"
                    "fig2 = plt.figure()\nplt.bar(['a'], [1])")
    images = [a for a in r.artifacts if a.kind == "image"]
    assert len(images) == 2 and all(a.path.endswith(".png") and a.size > 1000 for a in images)
    assert sandbox.run("import matplotlib.pyplot as plt\nplt.get_fignums()").output == []


def test_figure_as_final_answer(sandbox):
    r = sandbox.run("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\n"
                    "plt.close(fig)\nfinal_answer(fig)")
    assert r.is_final_answer and r.output_type == "image"
    assert os.path.exists(os.path.join(sandbox.workdir, r.output))


def test_syntax_error_message(sandbox):
    r = sandbox.run("x = 1\ny = (2 +\nprint(y)")
    assert r.error_type == "SyntaxError"
    assert "line 2" in r.error
    r = sandbox.run("x = 1\nif x\n    pass")
    assert "line 2" in r.error and "column" in r.error and "if x" in r.error and "^" in r.error


def test_traceback_trimmed_to_user_code(sandbox):
    r = sandbox.run("def inner(d):\n    return d['missing']\ndef outer():\n    return inner({})\nouter()")
    assert r.error_type == "KeyError"
    assert "line 5" in r.error and "line 2" in r.error and "return d['missing']" in r.error
    for internal in ("execution.py", "_agentdeck_sandbox", "worker.py", "exec(body"):
        assert internal not in r.error


def test_traceback_through_library(sandbox):
    r = sandbox.run("import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ndf['nope']")
    assert r.error_type == "KeyError" and "nope" in r.error
    assert "pandas/core" not in r.error


def test_earlier_step_frames_have_source(sandbox):
    sandbox.run("def boom():\n    raise ValueError('bad value')")
    r = sandbox.run("boom()")
    assert "raise ValueError('bad value')" in r.error and "<step" in r.error


def test_a_printed_or_returned_frame_keeps_every_column(sandbox):
    """The chat turns printed frames into tables, which can only show the columns pandas printed: its default
    80-character width elided the middle columns of an ordinary 8-column table ("...")."""
    code = ("import pandas as pd\n"
            "df = pd.DataFrame({f'measurement_{i}_mm': range(3) for i in range(8)})\n"
            "print(df)\n"
            "final_answer(df)")
    r = sandbox.run(code)
    assert r.ok, r.error
    header = r.logs.splitlines()[0]
    assert [f"measurement_{i}_mm" for i in range(8)] == header.split()
    assert "..." not in r.logs and "..." not in str(r.output)
    assert all(f"measurement_{i}_mm" in str(r.output) for i in range(8))


def test_a_failed_or_blank_figure_is_not_published(sandbox):
    """Issue 31: a step that failed after opening a figure left an empty figure_step3_1.png in the files panel."""
    failed = sandbox.run("import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([1, 2])\n"
                         "raise ValueError('the data was wrong')")
    assert failed.error_type == "ValueError"
    assert [a.path for a in failed.artifacts] == []
    blank = sandbox.run("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nx = 1")
    assert blank.ok and [a.path for a in blank.artifacts] == []
    assert sandbox.run("import matplotlib.pyplot as plt\nplt.get_fignums()").output == []  # closed all the same
    drawn = sandbox.run("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('t')")
    assert [a.path.startswith("figure_step") for a in drawn.artifacts] == [True]


def test_a_figure_as_the_last_expression_is_shown_once(sandbox):
    """A notebook shows a bare `fig` once: the step's chart, not a second copy as its value."""
    r = sandbox.run("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nfig")
    assert [a.path.startswith("figure_step") for a in r.artifacts] == [True]
    assert r.output is None


def test_figures_land_in_the_workspace_whatever_folder_the_code_left(open_sandbox):
    """The worker returns to the workspace after a step's code only where it saves a figure (execution.py): code
    that ends in another folder (one of its own, or the private temp folder) still gets its chart in the
    workspace, as a figure drawn and as a figure given as the answer, and the next step starts in the workspace."""
    for where in ("'moved'", "tempfile.gettempdir()"):
        drawn = open_sandbox.run(f"import os, tempfile\nimport matplotlib.pyplot as plt\n"
                                 f"os.makedirs({where}, exist_ok=True)\nos.chdir({where})\n"
                                 "fig, ax = plt.subplots()\nax.plot([1, 2])")
        assert drawn.ok, drawn.error
        assert [os.path.dirname(a.path) for a in drawn.artifacts] == [""], drawn.artifacts
        answered = open_sandbox.run(f"import os, tempfile\nimport matplotlib.pyplot as plt\nos.chdir({where})\n"
                                    "fig, ax = plt.subplots()\nax.plot([2, 1])\nfinal_answer(fig)")
        assert answered.ok and str(answered.output).startswith("final_answer_step"), (answered.error, answered.output)
        assert os.path.dirname(str(answered.output)) == "", answered.output
        nxt = open_sandbox.run("open('after.txt', 'w').write('x')")
        assert nxt.ok and any(a.path == "after.txt" for a in nxt.artifacts), (nxt.error, nxt.artifacts)
