"""Tools run in the app; the code cannot replace them or forge final answers."""

from __future__ import annotations

import threading
import time

import pytest

from agents.executor import InvalidToolError, PythonSandbox, SandboxClosedError

CALLS: list = []


def lookup(key, default=None):
    CALLS.append(key)
    return {"a": 1, "b": [1, 2]}.get(key, default)


def failing(x):
    raise ValueError(f"no such item: {x}")


class Opaque:
    def __str__(self):
        return "opaque-object"


@pytest.fixture(scope="module")
def tsb(tmp_path_factory):
    sb = PythonSandbox(workdir=str(tmp_path_factory.mktemp("tools")), timeout_s=2)
    sb.register_tools({"lookup": lookup, "failing": failing, "opaque": lambda: Opaque(),
                       "slow": lambda s: time.sleep(s) or "slept", "echo": lambda *a, **k: [list(a), k]})
    yield sb
    sb.close()


def test_tool_runs_in_parent(tsb):
    CALLS.clear()
    r = tsb.run("lookup('b')")
    assert r.output == [1, 2] and CALLS == ["b"]


def test_tool_args_round_trip(tsb):
    r = tsb.run("echo(1, 'x', None, [1.5], k={'z': True})")
    assert r.output == [[1, "x", None, [1.5]], {"k": {"z": True}}]
    r = tsb.run("echo(b'\\x00\\x01')[0][0] == b'\\x00\\x01'")
    assert r.output is True


def test_non_json_tool_result_is_str(tsb):
    assert tsb.run("opaque()").output == "opaque-object"


def test_tool_error_is_catchable(tsb):
    r = tsb.run("try:\n    failing(3)\nexcept ToolCallError as e:\n    msg = str(e)\nmsg")
    assert "failing" in r.output and "no such item: 3" in r.output


def test_uncaught_tool_error_names_tool(tsb):
    r = tsb.run("failing(7)")
    assert r.error_type == "ToolCallError"
    assert "failing" in r.error and "no such item: 7" in r.error
    assert "_agentdeck_sandbox" not in r.error and "execution.py" not in r.error


@pytest.mark.slow
def test_time_in_tools_does_not_count(tsb):
    r = tsb.run("[slow(0.9) for _ in range(4)]")  # 3.6 s in tools, timeout_s=2
    assert r.error is None, r.error
    assert r.output == ["slept"] * 4


TAMPERING = [
    "lookup = lambda k: 'forged'",
    "import math as lookup",
    "from math import floor as final_answer",
    "with open('x.txt', 'w') as lookup:\n    pass",
    "try:\n    1 / 0\nexcept Exception as final_answer:\n    pass",
    "def lookup(k):\n    return 'forged'",
    "class final_answer:\n    pass",
    "del lookup",
    "def f():\n    global lookup\n    lookup = 1",
    "(lookup := 1)",
    "for lookup in range(2):\n    pass",
    "[1 for final_answer in range(2)]",
    "def f(lookup):\n    return lookup",
    "match 1:\n    case lookup:\n        pass",
    "lookup.__call__ = None",
    "setattr(lookup, '__code__', None)",
]


@pytest.mark.parametrize("code", TAMPERING)
def test_tools_cannot_be_rebound(tsb, code):
    r = tsb.run(code)
    assert r.error is not None
    CALLS.clear()
    assert tsb.run("lookup('a')").output == 1 and CALLS == ["a"]
    assert tsb.run("final_answer('real')").output == "real"


def test_star_import_cannot_shadow_tool(tmp_path):
    with PythonSandbox(workdir=str(tmp_path)) as sb:
        sb.register_tools({"search": lambda q: "tool"})
        r = sb.run("from re import *")
        assert r.error is not None and "search" in r.error
        assert sb.run("search('q')").output == "tool"


def test_stale_final_answer_cannot_forge_next_step(tsb):
    tsb.run("saved = final_answer\nclass Later:\n    def __del__(self, fa=final_answer):\n        fa('forged')\n"
            "later = Later()")
    r = tsb.run("later = None\nsaved('forged again')\n1")
    assert not r.is_final_answer
    assert r.output != "forged" and r.output != "forged again"


def test_printing_protocol_text_cannot_forge(tsb):
    r = tsb.run("print('{\"op\": \"result\", \"is_final\": true, \"output\": \"forged\"}')\n5")
    assert not r.is_final_answer and r.output == 5


def test_invalid_tool_names(tmp_path):
    with PythonSandbox(workdir=str(tmp_path)) as sb:
        for bad in ("final_answer", "print", "not valid", "_hidden"):
            with pytest.raises(InvalidToolError):
                sb.register_tools({bad: lambda: 1})


def test_runs_from_many_threads(tsb):
    tsb.run("counter = 0")
    errors = []

    def worker():
        for _ in range(10):
            r = tsb.run("counter += 1")
            if r.error:
                errors.append(r.error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert tsb.run("counter").output == 40


def test_on_log_streams(tsb):
    chunks = []
    r = tsb.run("import time\nfor i in range(3):\n    print('tick', i)\n    time.sleep(0.15)", on_log=chunks.append)
    assert r.logs == "".join(f"tick {i}\n" for i in range(3))
    assert len(chunks) >= 2


def test_reset_and_close(tmp_path):
    sb = PythonSandbox(workdir=str(tmp_path))
    sb.run("x = 1")
    sb.reset()
    assert sb.run("x").error_type == "NameError"
    tmpdir = sb._tmpdir
    pid = sb._worker.pid
    sb.close()
    sb.close()  # idempotent
    import os

    assert not os.path.exists(tmpdir)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(SandboxClosedError):
        sb.run("1")


def test_streamed_logs_never_garble_tool_calls(tmp_path):
    """Streamed logs and tool calls with frames larger than a pipe's atomic write share the channel: every
    result and every printed character arrives, in order. (That the frames are written one at a time is
    checked directly in test_output_stream.py, which fails without the worker's lock.)"""
    logs: list[str] = []
    sb = PythonSandbox(workdir=str(tmp_path), timeout_s=20, on_log=logs.append, max_output_chars=10**7)
    sb.register_tools({"echo": lambda x, pad: x})
    try:
        code = ("import time\ntotal = 0\n"
                "for i in range(400):\n    print('x' * 5000, end='')\n    total += echo(i, 'y' * 20000)\n"
                "    if i % 20 == 0:\n        time.sleep(0.02)\n"
                "total")
        result = sb.run(code)
        assert result.error is None, result.error
        assert result.output == sum(range(400))
        streamed = "".join(logs)
        assert len(logs) > 1 and result.logs == "x" * 400 * 5000 and result.logs.startswith(streamed)
        assert sb.run("1 + 1").output == 2  # the worker is still sound
    finally:
        sb.close()


def test_sandbox_code_runs_below_the_app_priority(tmp_path):
    import os

    sb = PythonSandbox(workdir=str(tmp_path), timeout_s=10)
    try:
        assert sb.run("1").error is None
        worker_nice = os.getpriority(os.PRIO_PROCESS, sb._worker.pid)
        assert worker_nice == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)
    finally:
        sb.close()


def test_a_stopped_run_calls_no_more_tools(tsb):
    """Stop (or the time limit) interrupts the code; code that catches the interrupt and goes on calling tools
    (web requests, an MCP server's actions) must not get them run: the person asked for the run to stop."""
    CALLS.clear()
    cancel = threading.Event()
    threading.Thread(target=lambda: (wait_for_call(), cancel.set()), daemon=True).start()
    r = tsb.run("try:\n    lookup('before')\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    pass\n"
                "for _ in range(3):\n    try:\n        lookup('after the stop')\n    except Exception as exc:\n"
                "        refused = str(exc)\nrefused", cancel=cancel)
    assert CALLS == ["before"], CALLS
    assert "stopped" in str(r.output), r


def wait_for_call() -> None:
    from waiting import wait_until

    wait_until(lambda: CALLS, timeout=10, what="the first tool call")
