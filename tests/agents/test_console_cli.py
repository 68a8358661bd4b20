"""The console renderer's verbosity levels and `python -m agents`."""
from __future__ import annotations

import io
import subprocess
import sys

from rich.console import Console

from agents import ReplayModel, ToolCallingAgent, events
from agents.console import HANDLERS, NOT_SHOWN, ConsoleRenderer
from tests.agents.conftest import call
from tests.conftest import PROJECT_ROOT


def _render(verbosity: int) -> str:
    buffer = io.StringIO()
    renderer = ConsoleRenderer(verbosity, console=Console(file=buffer, width=100, color_system=None))
    agent = ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer="forty-two")]), verbosity=0)
    for event in agent.run("What is the answer?", stream=True):
        renderer.handle(event)
    return buffer.getvalue()


def test_quiet_is_silent_normal_shows_steps_debug_shows_stream():
    assert _render(0) == ""
    normal = _render(1)
    assert "What is the answer?" in normal and "Step 1" in normal and "Final answer: forty-two" in normal
    assert '"final_answer"' not in normal  # the raw streamed text is for debug only
    debug = _render(2)
    assert '"final_answer"' in debug


def test_decisions_are_printed_with_the_edit_or_the_reason():
    from agents.decisions import Decision, ScriptedDecider

    buffer = io.StringIO()
    renderer = ConsoleRenderer(1, console=Console(file=buffer, width=100, color_system=None))
    agent = ToolCallingAgent(tools=[], model=ReplayModel(["plan<end_plan>", call("final_answer", answer=1)]),
                             planning_interval=3, approval_policy="review_plans", verbosity=0,
                             decider=ScriptedDecider([Decision.edit("my plan")]))
    for event in agent.run("t", stream=True):
        renderer.handle(event)
    assert "You edited the plan: your version runs, and the agent is told." in buffer.getvalue()


def test_non_streamed_run_prints_only_when_verbose(capsys):
    ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer=1)]), verbosity=0).run("t")
    assert capsys.readouterr().out == ""
    ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer=1)]), verbosity=1).run("t")
    assert "Final answer" in capsys.readouterr().out


def test_cli_runs_a_replay_transcript(tmp_path):
    transcript = tmp_path / "script.yaml"
    transcript.write_text(
        "- |-\n  Thought: compute.\n  ```python\n  final_answer(17 * 23)\n  ```\n", encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "agents", "What is 17 * 23?", "--model", f"replay:{transcript}", "-v", "0"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "391"


def test_cli_runs_on_the_sandbox_backend_it_is_given(tmp_path):
    transcript = tmp_path / "script.yaml"
    transcript.write_text("- |-\n  ```python\n  final_answer(6 * 7)\n  ```\n", encoding="utf-8")
    command = [sys.executable, "-m", "agents", "hi", "--model", f"replay:{transcript}", "-v", "0", "--sandbox"]
    completed = subprocess.run(command + ["local"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0 and completed.stdout.strip() == "42", completed.stderr
    refused = subprocess.run(command + ["no-such-backend"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "unknown sandbox backend 'no-such-backend'" in refused.stderr, refused.stderr


def test_cli_gives_an_image_and_asks_for_structured_steps(tmp_path):
    from PIL import Image

    transcript = tmp_path / "script.yaml"
    transcript.write_text("""- '{"thought": "look", "code": "final_answer(\\"red\\")"}'\n""", encoding="utf-8")
    Image.new("RGB", (2, 2), "red").save(tmp_path / "red.png")
    completed = subprocess.run(
        [sys.executable, "-m", "agents", "What colour?", "--model", f"replay:{transcript}", "-v", "0",
         "--image", str(tmp_path / "red.png"), "--structured"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "red"
    from test_images import png_header_claiming

    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_header_claiming(60_000, 60_000))
    refused = subprocess.run(
        [sys.executable, "-m", "agents", "What colour?", "--model", f"replay:{transcript}", "--image", str(bomb)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "refused before decoding" in refused.stderr


def test_cli_reports_bad_model_string_clearly(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "agents", "hi", "--model", f"replay:{tmp_path / 'missing.yaml'}"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert "error:" in completed.stderr and "not found" in completed.stderr


def test_cli_asks_for_approval_at_the_terminal(tmp_path):
    transcript = tmp_path / "script.yaml"
    transcript.write_text(
        "- |-\n  Thought: risky.\n  ```python\n  final_answer('original')\n  ```\n"
        "- |-\n  Thought: again.\n  ```python\n  final_answer(17 * 23)\n  ```\n", encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "agents", "What is 17 * 23?", "--model", f"replay:{transcript}", "-v", "0",
         "--approval", "approve_code"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        input="r\nplease compute it\na\n")  # reject the first step with a reason, approve the second
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip().endswith("? 391")  # piped stdin: no echoed Enter after the prompt
    assert "final_answer('original')" in completed.stdout  # the code was shown before deciding


def test_model_retry_is_printed_with_its_reason_and_wait():
    from agents import events as ev

    buffer = io.StringIO()
    renderer = ConsoleRenderer(1, console=Console(file=buffer, width=120, color_system=None))
    renderer.handle(ev.ModelRetrying(run_id="r", step=1, reason="rate limited (HTTP 429)", attempt=2, max_retries=4,
                                     wait_s=12.0, retry_after_s=12.0, discarded_text=True))
    out = buffer.getvalue()
    assert "rate limited (HTTP 429): retry 2/4 in 12.0 s" in out and "partial reply is discarded" in out


def test_a_follow_up_runs_steps_are_numbered_within_the_run():
    """The agent numbers steps across the conversation; the console counts them within each run."""
    buffer = io.StringIO()
    renderer = ConsoleRenderer(1, console=Console(file=buffer, width=100, color_system=None))
    model = ReplayModel([call("final_answer", answer="a"), call("say", text="x"), call("final_answer", answer="b")])
    agent = ToolCallingAgent(tools=[], model=model, verbosity=0)
    for task, reset in (("first?", True), ("second?", False)):
        for event in agent.run(task, stream=True, reset=reset):
            renderer.handle(event)
    out = buffer.getvalue()
    assert out.count("Step 1") == 2 and "Step 2" in out and "Step 3" not in out, out


def test_every_event_class_is_printed_or_listed_as_not_printed():
    missing = [cls.__name__ for cls in events.event_types() if cls not in HANDLERS and cls not in NOT_SHOWN]
    assert not missing, f"agents/console.py has no handler for {missing}: add one to HANDLERS or NOT_SHOWN"
    assert not set(HANDLERS) & set(NOT_SHOWN)
    assert all(reason.strip() for reason in NOT_SHOWN.values())
    registered = {handler.__name__ for handler in HANDLERS.values()}
    assert {name for name in vars(ConsoleRenderer) if name.startswith("_on_")} == registered
