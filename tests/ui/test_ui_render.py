"""The event -> chat message mapping, on hand-made events."""
from __future__ import annotations

import contextvars

from agents import events as ev
from agents.models.base import TokenUsage
from ui.chat.formatting import fence, thought_without_code
from ui.chat.render import Transcript
from ui.uploads.intake import UploadResult

RUN = "run1"


def base(step: int, parent: str | None = None, run: str = RUN, t: float = 100.0) -> dict:
    return {"run_id": run, "step": step, "parent_id": parent, "timestamp": t}


def by_title(messages: list[dict], start: str) -> dict:
    found = [m for m in messages if m.get("metadata", {}).get("title", "").startswith(start)]
    assert found, f"no message titled {start!r} in {[m.get('metadata', {}).get('title') for m in messages]}"
    return found[0]


def code_step(t: Transcript, step: int = 1, parent: str | None = None, run: str = RUN) -> None:
    t.apply(ev.StepStarted(**base(step, parent, run), step_type="action"))
    reply = "Thought: I will count.\nCode:\n```python\nprint(len(df))\n```"
    for i in range(0, len(reply), 10):
        t.apply(ev.ModelTextDelta(**base(step, parent, run), text=reply[i:i + 10]))
    t.apply(ev.ModelOutput(**base(step, parent, run), text=reply, token_usage=TokenUsage(120, 30), duration_s=0.4))
    t.apply(ev.CodeProposed(**base(step, parent, run), code="print(len(df))"))


def test_step_streams_then_finishes_with_duration_and_tokens() -> None:
    t = Transcript()
    t.add_user("How many rows?")
    t.apply(ev.RunStarted(**base(0), task="How many rows?", agent_name="CodeAgent", model_id="replay", max_steps=5))
    t.apply(ev.StepStarted(**base(1), step_type="action"))
    t.apply(ev.ModelTextDelta(**base(1), text="Thought: I will "))
    messages = t.messages()
    assert messages[0] == {"role": "user", "content": "How many rows?"}
    step = by_title(messages, "Step 1")
    assert step["metadata"]["status"] == "pending" and "duration" not in step["metadata"]
    assert step["content"] == "Thought: I will "
    # The run's time, marked with its start (from RunStarted) and the line's time, for the page to count on.
    assert t.status_text(now=101.0) == ('running · step 1/5 · '
                                        '<span class="ad-elapsed ad-since-100000 ad-now-101000">1.0</span> s')

    t.apply(ev.ModelTextDelta(**base(1), text="count.\n```python\nprint(len(df))\n```"))
    t.apply(ev.ModelOutput(**base(1), text="Thought: I will count.\n```python\nprint(len(df))\n```",
                           token_usage=TokenUsage(120, 30), duration_s=0.4))
    t.apply(ev.CodeProposed(**base(1), code="print(len(df))"))
    t.apply(ev.ExecutionLog(**base(1), text="344\n"))
    t.apply(ev.Observation(**base(1), text="Observation:\nExecution logs:\n344\nLast output from code snippet:\n7"))
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=1.234, token_usage=TokenUsage(120, 30)))
    messages = t.messages()
    step = by_title(messages, "Step 1")
    assert step["metadata"]["status"] == "done"
    assert step["metadata"]["duration"] == 1.23
    # Folded, it says what it did (the thought's first sentence), then its tokens (issue 31: only the tokens)
    assert step["metadata"]["log"] == "I will count. · 150 tokens"
    # Folded, it shows what it printed right under its title, as a plain message (a notebook's cell, then its
    # output); the step keeps its code, and what the preview shows whole is not repeated inside it (issue 31).
    assert step["content"] == "Thought: I will count.\n\n```python\nprint(len(df))\n```"
    after = messages[messages.index(step) + 1:]
    preview = next(m for m in after if (m.get("metadata") or {}).get("parent_id") != step["metadata"]["id"])
    assert "metadata" not in preview and "```\n344\n```" in preview["content"]
    # What the model is sent next is shown whole, nested under its step (it carries the last value, 7).
    seen = by_title(messages, "👁️ What the model sees next")
    assert seen["metadata"]["parent_id"] == step["metadata"]["id"]
    assert "Last output from code snippet:\n7" in seen["content"]


def test_output_is_read_once_below_its_step_and_kept_in_it_only_when_the_preview_is_cut() -> None:
    """Found by a review (issue 31): a step's output read twice, in the opened step and under it. Shown whole
    below, it is not repeated in the step; cut short there, the step keeps all of it (the preview points to it)."""
    t = Transcript()
    code_step(t)
    t.apply(ev.ExecutionLog(**base(1), text="first line\nsecond line\n"))
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=0.5, token_usage=TokenUsage(10, 5)))
    shown = [str(m.get("content")) for m in t.messages()]
    assert sum("second line" in text for text in shown) == 1
    assert "second line" not in by_title(t.messages(), "Step 1")["content"]

    long_output = "".join(f"line {i}\n" for i in range(40))
    code_step(t, step=2)
    t.apply(ev.ExecutionLog(**base(2), text=long_output))
    t.apply(ev.StepFinished(**base(2), step_type="action", duration_s=0.5, token_usage=TokenUsage(10, 5)))
    step = by_title(t.messages(), "Step 2")
    assert "line 39" in step["content"]  # all of it, in the step
    preview = t.messages()[t.messages().index(step) + 1]
    assert "line 0" in preview["content"] and "line 39" not in preview["content"] and "open **Step 2**" in \
        preview["content"]


def test_an_observation_that_only_repeats_the_logs_is_not_shown_twice() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.ExecutionLog(**base(1), text="344\n"))
    t.apply(ev.Observation(**base(1), text="Observation:\nExecution logs:\n344"))
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=0.5, token_usage=TokenUsage(10, 5)))
    titles = [m.get("metadata", {}).get("title") for m in t.messages()]
    assert "👁️ What the model sees next" not in titles
    assert sum("344" in str(m.get("content")) for m in t.messages()) == 1  # once: in the step's preview
    # Anything beyond the logs (an error, a truncation note, a value) is what the model sees: shown.
    t.apply(ev.StepStarted(**base(2), step_type="action"))
    t.apply(ev.ExecutionLog(**base(2), text="345\n"))
    t.apply(ev.Observation(**base(2), text="Observation:\nExecution logs:\n345\nNameError: name 'x' is not defined"))
    assert sum(m.get("metadata", {}).get("title") == "👁️ What the model sees next" for m in t.messages()) == 1


def test_final_answer_is_a_plain_message_and_run_summary() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=0.5, token_usage=TokenUsage(10, 5)))
    t.apply(ev.FinalAnswer(**base(1), value=344))
    t.apply(ev.RunFinished(**base(1), state="success", output=344, duration_s=0.7, token_usage=TokenUsage(10, 5),
                           steps=1))
    messages = t.messages()
    assert messages[-1] == {"role": "assistant", "content": "344"}
    assert t.status_text().startswith("success · 1 step · 0.7 s · 15 tokens")


def test_managed_agent_steps_nest_under_the_call() -> None:
    t = Transcript()
    t.apply(ev.StepStarted(**base(1), step_type="action"))
    t.apply(ev.ToolCallProposed(**base(1), call_id="c1", tool_name="researcher", arguments={"task": "find it"}))
    t.apply(ev.RunStarted(**base(0, "c1", "sub"), task="find it", agent_name="researcher", model_id="m", max_steps=3))
    code_step(t, step=1, parent="c1", run="sub")
    t.apply(ev.ExecutionLog(**base(1, "c1", "sub"), text="found\n"))
    t.apply(ev.StepFinished(**base(1, "c1", "sub"), step_type="action", duration_s=0.2, token_usage=TokenUsage(1, 1)))
    t.apply(ev.FinalAnswer(**base(1, "c1", "sub"), value="the answer"))
    t.apply(ev.RunFinished(**base(1, "c1", "sub"), state="success", output="the answer", duration_s=0.3,
                           token_usage=TokenUsage(1, 1), steps=1))
    t.apply(ev.ToolCallResult(**{**base(1), "timestamp": 102.5}, call_id="c1", tool_name="researcher",
                              output="the answer"))
    messages = t.messages()
    top = by_title(messages, "Step 1")
    call = by_title(messages, "🛠️ researcher")
    sub = by_title(messages, "↳ Step 1")
    assert call["metadata"]["parent_id"] == top["metadata"]["id"]
    assert sub["metadata"]["parent_id"] == call["metadata"]["id"]
    preview = messages[messages.index(sub) + 1]  # what it printed: under it, inside the call
    assert "found" in preview["content"] and preview["metadata"]["parent_id"] == call["metadata"]["id"]
    assert call["metadata"]["status"] == "done" and call["metadata"]["duration"] == 2.5
    assert "Managed agent **researcher**" in call["content"] and "the answer" in call["content"]
    # Parents come before their children in the flat list (the Chatbot needs that to nest).
    ids = [m.get("metadata", {}).get("id") for m in messages]
    assert ids.index(top["metadata"]["id"]) < ids.index(call["metadata"]["id"]) < ids.index(sub["metadata"]["id"])
    # The sub-agent's final answer is not a top-level chat answer.
    assert not [m for m in messages if m["content"] == "the answer" and "metadata" not in m]


def test_errors_are_styled_and_mark_the_step() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.StepError(**base(1), error_type="KeyError", message="KeyError: 'region'"))
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=0.1, token_usage=TokenUsage()))
    messages = t.messages()
    error = by_title(messages, "💥 Error: KeyError")
    assert 'class="ad-error"' in error["content"] and "'region'" in error["content"]
    assert by_title(messages, "Step 1")["metadata"]["title"] == "Step 1 ⚠️"


def test_a_traceback_names_the_step_as_the_chat_numbers_it() -> None:
    """The sandbox names its code `<step N>` by every run it has seen; in a second run, step 1 must not show a
    traceback in "<step 3>" (nor name the earlier steps it came through by their sandbox numbers)."""
    t = Transcript()
    t.apply(ev.RunStarted(**base(0), task="first", agent_name="CodeAgent", model_id="replay", max_steps=5))
    code_step(t, step=1)
    code_step(t, step=2)
    second = "run2"
    t.apply(ev.RunStarted(**base(2, run=second), task="again", agent_name="CodeAgent", model_id="replay",
                          max_steps=5))
    code_step(t, step=3, run=second)
    trace = ('Traceback (most recent call last):\n  File "<step 3>", line 1, in <module>\n    f()\n'
             '  File "<step 2>", line 2, in f\nNameError: name \'y\' is not defined')
    t.apply(ev.StepError(**base(3, run=second), error_type="ExecutionError", message=trace))
    shown = [m for m in t.messages() if m.get("metadata", {}).get("title", "").startswith("💥")][-1]["content"]
    assert '"<step 1>", line 1' in shown and '"<an earlier step>", line 2' in shown
    assert "<step 3>" not in shown and "<step 2>" not in shown


def test_plans_and_tool_calls() -> None:
    t = Transcript()
    t.apply(ev.StepStarted(**base(1), step_type="planning"))
    t.apply(ev.ModelTextDelta(**base(1), text="1. load\n2. plot"))
    t.apply(ev.PlanProposed(**base(1), plan="1. load the data\n2. plot it", is_update=False))
    t.apply(ev.StepFinished(**base(1), step_type="planning", duration_s=0.3, token_usage=TokenUsage(5, 5)))
    t.apply(ev.StepStarted(**base(2), step_type="action"))
    t.apply(ev.ToolCallProposed(**base(2), call_id="t1", tool_name="web_search", arguments={"query": "penguins"}))
    t.apply(ev.ToolCallResult(**base(2), call_id="t1", tool_name="web_search", output="boom", is_error=True))
    messages = t.messages()
    plan = by_title(messages, "🧭 Plan")
    assert plan["content"] == "1. load the data\n2. plot it" and plan["metadata"]["status"] == "done"
    failed = by_title(messages, "💥 web_search failed")
    assert '"query": "penguins"' in failed["content"] and "boom" in failed["content"]


def test_artifacts_images_inline_files_listed() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.ArtifactCreated(**base(1), path="/ws/chart.png", relative_path="chart.png", artifact_kind="image"))
    t.apply(ev.ArtifactCreated(**base(1), path="/ws/out.csv", relative_path="out.csv", artifact_kind="file",
                               size_bytes=10))
    t.apply(ev.ArtifactCreated(**base(1), path="/ws/chart.png", relative_path="chart.png", artifact_kind="image"))
    messages = t.messages()
    images = [m for m in messages if isinstance(m["content"], dict)]
    assert images == [{"role": "assistant", "content": {"path": "/ws/chart.png", "alt_text": "chart.png"}}]
    assert t.files == [{"path": "/ws/out.csv", "relative_path": "out.csv", "size_bytes": 10}]
    assert "📄 Saved: `out.csv`" in by_title(messages, "Step 1")["content"]


def test_interrupted_run_closes_pending_steps() -> None:
    t = Transcript()
    code_step(t)
    t.apply(ev.RunFinished(**{**base(1), "timestamp": 103.0}, state="interrupted", output=None, duration_s=3.0,
                           token_usage=TokenUsage(), steps=1))
    messages = t.messages()
    step = by_title(messages, "Step 1")
    assert step["metadata"]["status"] == "done" and step["metadata"]["duration"] == 3.0
    assert "Stopped" in messages[-1]["content"]
    failed = Transcript()
    failed.apply(ev.RunFinished(**base(0), state="error", output=None, duration_s=0.1, token_usage=TokenUsage(),
                                steps=0, error="ModelConnectionError: unreachable"))
    assert "unreachable" in failed.messages()[-1]["content"]


def test_decisions_and_uploads_and_user_files() -> None:
    t = Transcript()
    t.add_user("Look", files=["/ws/data.csv"])
    t.add_uploads([UploadResult("data.csv", 10, safe_name="data.csv", preview="Shape: 1 rows"),
                   UploadResult("bad.csv", 0, error="`bad.csv` is empty (0 bytes).")])
    t.apply(ev.DecisionRequested(**base(1), request_id="r1", request_kind="code", payload={"code": "rm()"}))
    messages = t.messages()
    assert messages[0] == {"role": "user", "content": {"path": "/ws/data.csv", "alt_text": "data.csv"}}
    assert messages[1] == {"role": "user", "content": "Look"}
    assert "Shape: 1 rows" in by_title(messages, "📎 Added to the workspace: data.csv")["content"]
    assert any("bad.csv` is empty" in m["content"] for m in messages if isinstance(m["content"], str))
    assert "status" not in by_title(messages, "✋ Waiting")["metadata"]  # waits for the person: open, no spinner
    t.apply(ev.DecisionMade(**base(1), request_id="r1", request_kind="code", outcome="approve"))
    assert by_title(t.messages(), "✋ Decision: approve")["metadata"]["status"] == "done"


def test_helpers() -> None:
    assert fence("a ``` b", "python").startswith("````python\n")
    assert thought_without_code("Thought: x\nCode:\n```py\n1\n```") == "Thought: x"
    assert thought_without_code("no code") == "no code"


def test_model_retry_shows_the_wait_and_drops_the_discarded_text() -> None:
    t = Transcript()
    t.apply(ev.RunStarted(**base(0), task="q", agent_name="CodeAgent", model_id="openai/x", max_steps=5))
    t.apply(ev.StepStarted(**base(1), step_type="action"))
    t.apply(ev.ModelTextDelta(**base(1), text="Thought: half a reply"))
    t.apply(ev.ModelRetrying(**base(1, t=100.0), reason="the connection dropped", attempt=1, max_retries=4,
                             wait_s=30.0, discarded_text=True))
    assert t.status_text(now=110.0).startswith("⏳ the connection dropped · retry 1/4 in 20 s · step 1/5")
    step = by_title(t.messages(), "Step 1")
    assert "half a reply" not in step["content"] and "retried (the connection dropped)" in step["content"]
    t.apply(ev.ModelTextDelta(**base(1), text="Thought: whole reply"))
    assert t.status_text(now=131.0).startswith("running")
    assert "whole reply" in by_title(t.messages(), "Step 1")["content"]


def test_a_run_without_an_answer_says_so_with_its_own_step_count_and_offers_to_continue() -> None:
    """A follow-up run (the agent's steps are numbered on from the first run) that runs out of steps: the
    status counts this run's steps, no step is titled as a final answer, the guess is marked as not one."""
    t = Transcript()
    t.apply(ev.RunStarted(**base(18, run="run3"), task="What is 17 * 23?", agent_name="CodeAgent", model_id="m",
                          max_steps=2))
    for step in (19, 20):
        code_step(t, step, run="run3")
        assert f"running · step {step - 18}/2" in t.status_text(now=101.0)
        t.apply(ev.StepFinished(**base(step, run="run3"), step_type="action", duration_s=0.5,
                                token_usage=TokenUsage(10, 5)))
    t.apply(ev.StepStarted(**base(20, run="run3"), step_type="final"))
    assert "step 2/2" in t.status_text(now=101.0)
    t.apply(ev.StepFinished(**base(20, run="run3"), step_type="final", duration_s=0.2, token_usage=TokenUsage(9, 3)))
    t.apply(ev.FinalAnswer(**base(20, run="run3"), value="Thought: I would multiply"))
    t.apply(ev.RunFinished(**base(20, run="run3"), state="max_steps", output="Thought: I would multiply",
                           duration_s=3.0, token_usage=TokenUsage(29, 13), steps=2))
    messages = t.messages()
    titles = [m.get("metadata", {}).get("title", "") for m in messages]
    assert not any("Final answer" in title or "🏁" in title for title in titles), titles
    text = "\n".join(str(m.get("content", "")) for m in messages)
    assert "**Not a final answer**" in text and "> Thought: I would multiply" in text
    assert "**No answer**: the run ended after 2 of 2 steps without a final answer" in text
    assert "Send **continue**" in text
    assert t.status_text().startswith("no answer (out of steps) · 2 steps")


def test_a_follow_up_runs_steps_are_numbered_within_the_run_as_the_status_counts_them() -> None:
    """The agent numbers steps across the conversation (a follow-up's first step is its 4th); the chat titles
    them within the run, so "Step 2" is what the status calls step 2/10. Managed agents and a chat rebuilt from
    saved memory (runs start at 0 there, steps keep the agent's numbers) count the same way."""
    t = Transcript()
    t.apply(ev.RunStarted(**base(0), task="q1", agent_name="CodeAgent", model_id="m", max_steps=10))
    for step in (1, 2, 3):
        code_step(t, step)
    t.apply(ev.RunFinished(**base(3), state="success", output=1, duration_s=1.0, token_usage=TokenUsage(1, 1), steps=3))
    t.apply(ev.RunStarted(**base(3, run="run2"), task="q2", agent_name="CodeAgent", model_id="m", max_steps=10))
    code_step(t, 4, run="run2")
    assert "running · step 1/10" in t.status_text(now=101.0)
    code_step(t, 5, run="run2")
    assert "running · step 2/10" in t.status_text(now=101.0)
    t.apply(ev.ToolCallProposed(**base(5, run="run2"), call_id="c1", tool_name="helper", arguments={"task": "x"}))
    t.apply(ev.RunStarted(**base(7, parent="c1", run="sub"), task="x", agent_name="helper", model_id="m",
                          max_steps=3))
    code_step(t, 8, parent="c1", run="sub")
    titles = [m.get("metadata", {}).get("title", "") for m in t.messages()]
    assert titles == ["Step 1", "Step 2", "Step 3", "Step 1", "Step 2", "🛠️ helper", "↳ Step 1"], titles
    assert "step 2/10" in t.status_text(now=101.0)

    restored = Transcript()  # as ui/saved/restore.py replays a saved second run
    restored.apply(ev.RunStarted(**base(0, run="r2"), task="q2", agent_name="restored", model_id="", max_steps=0))
    for step in (4, 5):
        code_step(restored, step, run="r2")
    titles = [m.get("metadata", {}).get("title", "") for m in restored.messages()]
    assert titles == ["Step 1", "Step 2"], titles


def test_a_failed_run_offers_to_continue_and_a_good_one_shows_its_answer_plainly() -> None:
    t = Transcript()
    t.apply(ev.RunStarted(**base(0), task="q", agent_name="CodeAgent", model_id="m", max_steps=3))
    code_step(t, 1)
    t.apply(ev.RunFinished(**base(1), state="error", output=None, duration_s=1.0, token_usage=TokenUsage(1, 1),
                           steps=1, error="ModelError: the provider is down"))
    text = "\n".join(str(m.get("content", "")) for m in t.messages())
    assert "Run failed" in text and "**No answer** came from this run. Send **continue**" in text
    assert t.status_text().startswith("no answer (error) · 1 step ·")

    t.apply(ev.RunStarted(**base(1, run="run2"), task="q", agent_name="CodeAgent", model_id="m", max_steps=3))
    code_step(t, 2, run="run2")
    t.apply(ev.FinalAnswer(**base(2, run="run2"), value=391))
    t.apply(ev.RunFinished(**base(2, run="run2"), state="success", output=391, duration_s=1.0,
                           token_usage=TokenUsage(1, 1), steps=1))
    last = t.messages()[-1]
    assert last["content"] == "391" and not (last.get("metadata") or {}).get("title")


def test_a_rejected_step_shows_the_persons_reason_not_an_error() -> None:
    t = Transcript()
    t.apply(ev.RunStarted(**base(0), task="q", agent_name="CodeAgent", model_id="m", max_steps=5))
    t.apply(ev.StepStarted(**base(1), step_type="action"))
    t.apply(ev.StepError(**base(1), error_type="RejectedByUser", message="do not delete files"))
    text = "\n".join(str(m.get("content")) + str((m.get("metadata") or {}).get("title")) for m in t.messages())
    assert "You rejected this step" in text and "Reason: do not delete files" in text
    assert "💥" not in text and "ad-error" not in text


def test_tool_labels_end_at_a_sentence_or_a_whole_word() -> None:
    from ui.chat.formatting import first_words
    from ui.tool_offer import available_tools

    assert first_words("Transcribes speech. Give the path of a WAV file.") == "Transcribes speech."
    long = "Fetches a web page by URL and returns its content as Markdown (HTML is converted; plain text kept)."
    label = first_words(long, limit=80)
    assert label.endswith("…") and len(label) <= 81 and long.startswith(label[:-1])
    assert label[:-1].split()[-1] in long.split()  # a whole word: no "plain te"
    for name, description in available_tools():
        shown = first_words(description)
        assert shown == description or shown.endswith((".", "!", "?", "…")), (name, shown)


def test_a_folded_step_without_a_thought_says_what_its_code_did() -> None:
    t = Transcript()
    t.apply(ev.StepStarted(**base(1), step_type="action"))
    reply = "```python\nimport pandas as pd\n# load\nsummary = pd.read_csv('a.csv')\n```"
    t.apply(ev.ModelOutput(**base(1), text=reply, token_usage=TokenUsage(0, 0), duration_s=0.1))
    t.apply(ev.CodeProposed(**base(1), code="import pandas as pd\n# load\nsummary = pd.read_csv('a.csv')"))
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=0.5, token_usage=TokenUsage(0, 0)))
    assert by_title(t.messages(), "Step 1")["metadata"]["log"] == "Ran summary = pd.read_csv('a.csv')"


def test_a_last_expression_shows_as_a_table_beside_its_step() -> None:
    """Issue 31: a step's bare last expression showed nothing in the chat; a frame is Gradio's own table."""
    t = Transcript()
    code_step(t)
    table = {"columns": ["", "city"], "rows": [["0", "<img src=x onerror=alert(1)>"]], "shape": [1, 1]}
    observation = ev.Observation(**base(1), text="Observation: ...", value={"type": "DataFrame", "text": "t",
                                                                           "table": table})

    def in_a_handler() -> None:  # as the app applies it: inside a Gradio event (its constructors only record)
        from gradio.context import LocalContext

        LocalContext.in_event_listener.set(True)
        t.apply(observation)

    contextvars.copy_context().run(in_a_handler)
    t.apply(ev.StepFinished(**base(1), step_type="action", duration_s=0.5, token_usage=TokenUsage(1, 1)))
    messages = t.messages()
    [shown] = [m for m in messages if isinstance(m["content"], dict) and m["content"].get("type") == "component"]
    assert shown["content"]["component"] == "dataframe" and "metadata" not in shown  # where the eye goes
    assert shown["content"]["value"]["data"] == [["0", "<img src=x onerror=alert(1)>"]]
    assert shown["content"]["props"]["interactive"] is False and shown["content"]["props"]["datatype"] == ["str"] * 2
    assert shown["content"]["props"]["label"] == "Out [step 1]: DataFrame, 1 rows × 1 columns"
    t.apply(ev.Observation(**base(2), text="Observation: ...", value={"type": "int", "text": "42"}))
    assert any("Out [step 2]: int" in str(m["content"]) and "42" in str(m["content"]) for m in t.messages())
