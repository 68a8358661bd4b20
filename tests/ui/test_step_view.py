"""The step view on hand-made events: a running step open with its output, a finished one folded with its key
output under it (tables, saved files as links, its error), data-frame answers as tables, file names as links."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_ui_render import base, by_title, code_step

from agents import events as ev
from agents.models.base import TokenUsage
from ui.chat.published_files import FilePublisher
from ui.chat.render import Transcript
from ui.chat.step_output import MARKER, PREVIEW_LINES
from ui.session.workspace_access import DiskFiles

pd = pytest.importorskip("pandas")

SUMMARY = pd.DataFrame({"species": ["Adelie", "Chinstrap", "Gentoo"], "body_mass_g": [3700.7, 3733.1, 5076.0]}
                       ).set_index("species")


def finish(t: Transcript, step: int = 1) -> None:
    t.apply(ev.StepFinished(**base(step), step_type="action", duration_s=0.5, token_usage=TokenUsage(10, 5)))


def preview_of(messages: list[dict], step_title: str) -> dict | None:
    """The plain message right after a step's own children: its preview, if it has one."""
    step = by_title(messages, step_title)
    for message in messages[messages.index(step) + 1:]:
        if (message.get("metadata") or {}).get("parent_id") == step["metadata"]["id"]:
            continue
        return message if MARKER in str(message.get("content")) else None
    return None


@pytest.fixture
def workspace_transcript(tmp_path: Path) -> tuple[Transcript, Path]:
    root = tmp_path / "session"
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    publisher = FilePublisher(tmp_path / "published")
    return Transcript(str(workspace), publish=lambda path: publisher.publish(path, inside=root)), workspace


def test_a_running_step_is_open_and_shows_its_output_as_it_streams() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.ExecutionLog(**base(1), text="progress 1\n"))
    step = by_title(t.messages(), "Step 1")
    assert step["metadata"]["status"] == "pending"  # Gradio opens a pending thought
    assert "progress 1" in step["content"]
    t.apply(ev.ExecutionLog(**base(1), text="progress 2\n"))
    assert "progress 1\nprogress 2" in by_title(t.messages(), "Step 1")["content"]
    assert preview_of(t.messages(), "Step 1") is None  # no copy under it while it is open


def test_a_finished_step_folds_with_its_printed_table_under_it() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.ExecutionLog(**base(1), text="shape (3, 1)\n" + str(SUMMARY) + "\n"))
    finish(t)
    messages = t.messages()
    assert by_title(messages, "Step 1")["metadata"]["status"] == "done"  # Gradio folds a done thought
    preview = preview_of(messages, "Step 1")
    assert preview is not None and "metadata" not in preview  # shown without a click
    assert "```\nshape (3, 1)\n```" in preview["content"]
    assert "| species | body\\_mass\\_g |" in preview["content"] and "| Gentoo | 5076.0 |" in preview["content"]


def test_long_output_shows_its_first_lines_and_says_what_is_left() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.ExecutionLog(**base(1), text="".join(f"line {i}\n" for i in range(40))))
    finish(t)
    content = preview_of(t.messages(), "Step 1")["content"]
    assert f"line {PREVIEW_LINES - 1}\n" in content and f"line {PREVIEW_LINES}\n" not in content
    assert f"… {40 - PREVIEW_LINES} more lines of output: open **Step 1** for all of it." in content
    assert "line 39" in by_title(t.messages(), "Step 1")["content"]  # the step itself keeps all of it


def test_a_failed_step_shows_its_error_line_and_a_quiet_one_shows_nothing() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.StepError(**base(1), error_type="ExecutionError",
                         message="Traceback (most recent call last):\n  line 1\nKeyError: 'region'"))
    finish(t)
    content = preview_of(t.messages(), "Step 1 ⚠️")["content"]
    assert '<span class="ad-error">ExecutionError</span> `KeyError: \'region\'`' in content
    t.apply(ev.StepStarted(**base(2), step_type="action"))
    finish(t, 2)
    assert preview_of(t.messages(), "Step 2") is None


def test_a_stopped_step_folds_with_what_it_printed() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.ExecutionLog(**base(1), text="sleeping\n"))
    t.apply(ev.RunFinished(**base(1), state="interrupted", output=None, duration_s=3.0, token_usage=TokenUsage(),
                           steps=1))
    assert by_title(t.messages(), "Step 1")["metadata"]["status"] == "done"
    assert "sleeping" in preview_of(t.messages(), "Step 1")["content"]


def test_saved_files_are_links_under_the_step(workspace_transcript) -> None:
    t, workspace = workspace_transcript
    (workspace / "summary.csv").write_text("species,mass\n")
    code_step(t)
    t.apply(ev.ArtifactCreated(**base(1), path=str(workspace / "summary.csv"), relative_path="summary.csv",
                               artifact_kind="file", size_bytes=13))
    finish(t)
    content = preview_of(t.messages(), "Step 1")["content"]
    assert "📄 Saved: [`summary.csv`](gradio_api/file=" in content and str(workspace) not in content


def test_a_data_frame_answer_is_a_table_and_named_files_are_links(workspace_transcript) -> None:
    t, workspace = workspace_transcript
    (workspace / "summary.csv").write_text("species,mass\n")
    code_step(t)
    finish(t)
    t.apply(ev.FinalAnswer(**base(1), value=repr(SUMMARY)))  # what a CodeAgent's sandbox sends for a DataFrame
    assert t.messages()[-1]["content"].startswith("| species | body\\_mass\\_g |\n| :--- | ---: |\n| Adelie | 3700.7 |")
    t.apply(ev.FinalAnswer(**base(1, run="run2"), value=f"Written to summary.csv (also {workspace}/summary.csv)."))
    answer = t.messages()[-1]["content"]
    assert answer.startswith("Written to [summary.csv](gradio_api/file=")
    assert answer.count("](gradio_api/file=") == 2 and str(workspace) not in answer


def test_a_tool_steps_results_and_failures_show_under_it() -> None:
    t = Transcript()
    t.apply(ev.StepStarted(**base(1), step_type="action"))
    t.apply(ev.ToolCallProposed(**base(1), call_id="c1", tool_name="web_search", arguments={"query": "penguins"}))
    t.apply(ev.ToolCallResult(**base(1), call_id="c1", tool_name="web_search",
                              output="".join(f"result {i}\n" for i in range(10))))
    t.apply(ev.ToolCallProposed(**base(1), call_id="c2", tool_name="send_email", arguments={"to": "eve"}))
    t.apply(ev.ToolCallResult(**base(1), call_id="c2", tool_name="send_email", rejected=True,
                              output="never email Eve"))
    t.apply(ev.ToolCallProposed(**base(1), call_id="c4", tool_name="lookup", arguments={"key": "k"}))
    t.apply(ev.ToolCallResult(**base(1), call_id="c4", tool_name="lookup", is_error=True, output="no k here"))
    t.apply(ev.ToolCallProposed(**base(1), call_id="c3", tool_name="final_answer", arguments={"answer": "done"}))
    t.apply(ev.ToolCallResult(**base(1), call_id="c3", tool_name="final_answer", output="done"))
    finish(t)
    content = preview_of(t.messages(), "Step 1")["content"]
    assert "🛠️ **web_search**\n```\nresult 0\n" in content and "… (4 more lines)" in content
    # A person's rejection is theirs, with their reason, not a failure (issue 19); a tool's failure is one.
    assert "🚫 You rejected the call to **send_email**. Reason: never email Eve" in content
    assert "send_email failed" not in content
    assert '<span class="ad-error">lookup failed</span>\n```\nno k here' in content
    assert "⚠️" not in by_title(t.messages(), "Step 1")["metadata"]["title"]
    assert "final_answer" not in content  # the answer shows as the answer


def test_the_preview_follows_what_the_step_asked_and_comes_before_its_charts(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG\r\n\x1a\n")
    t = Transcript()
    code_step(t)
    t.apply(ev.DecisionRequested(**base(1), request_id="q1", request_kind="question",
                                 payload={"question": "Which colour?"}))
    t.add_user("teal")
    t.apply(ev.DecisionMade(**base(1), request_id="q1", request_kind="question", outcome="answer", detail="teal"))
    t.apply(ev.ExecutionLog(**base(1), text="colour is teal\n"))
    t.apply(ev.ArtifactCreated(**base(1), path=str(chart), relative_path="chart.png", artifact_kind="image"))
    finish(t)
    shown = [m["content"] if isinstance(m["content"], str) else "<image>" for m in t.messages()
             if "metadata" not in m]  # what shows without a click: the plain messages, in order
    order = [next(i for i, c in enumerate(shown) if needle in c)
             for needle in ("Which colour?", "teal", "colour is teal", "<image>")]
    assert len(set(order)) == 4, shown
    assert order == sorted(order), shown


def test_a_reopened_chat_shows_the_same_step_view(workspace_transcript) -> None:
    from agents.memory import ActionStep, AgentMemory, FinalAnswerStep, TaskStep
    from ui.saved.restore import replay_memory

    t, workspace = workspace_transcript
    (workspace / "summary.csv").write_text("species,mass\n")
    memory = AgentMemory()
    for step in (TaskStep(task="Summarise"),
                 ActionStep(step_number=1, model_output="Thought: go", code="print(summary)",
                            logs=str(SUMMARY) + "\n", artifacts=["summary.csv"]),
                 FinalAnswerStep(output=repr(SUMMARY))):
        memory.add_step(step)
    replay_memory(t, memory, [], DiskFiles(workspace))
    messages = t.messages()
    assert by_title(messages, "Step 1")["metadata"]["status"] == "done"
    content = preview_of(messages, "Step 1")["content"]
    assert "| Gentoo | 5076.0 |" in content and "📄 Saved: [`summary.csv`](gradio_api/file=" in content
    assert messages[-1]["content"].startswith("| species | body\\_mass\\_g |")


def test_a_folded_errors_line_names_the_exception_not_the_caret_under_the_code() -> None:
    from ui.chat.step_output import error_line

    guard = "SecurityError: cannot rebind 'final_answer' (assignment)\n    final_answer = 13\n    ^"
    assert "cannot rebind 'final_answer'" in error_line("ExecutionError", guard)
    syntax = '  File "<step 2>", line 1\n    x = (\n        ^\nSyntaxError: \'(\' was never closed'
    assert "SyntaxError: '(' was never closed" in error_line("ExecutionError", syntax)
    assert error_line("ExecutionError", "   ^^^^").endswith("`ExecutionError`")  # nothing better to show
