"""Compaction keeps the prompt under the context budget (agents/memory/compaction.py)."""
from __future__ import annotations

from agents import AgentMemory, tool
from agents import events as ev
from agents.loop.restore import restore_agent_memory
from agents.memory import ActionStep, PlanningStep, SummaryStep, TaskStep
from agents.memory.codec import step_to_dict
from agents.memory.compaction import Compactor, choose_kept_steps, default_budget, fallback_summary
from agents.memory.serialize import save_memory
from agents.models.base import message_text
from agents.models.replay import ReplayModel
from tests.agents.conftest import call
from tests.memory.conftest import SummaryAwareReplay

BUDGET = 1800


@tool
def fetch(n: int) -> str:
    """Fetch a record.

    Args:
        n: The record number.
    """
    return f"RECORD-{n} " + "lorem ipsum dolor sit amet " * 50


def _script(successes: int, errors: int) -> list:
    replies = ["PLAN: 1. fetch records 2. answer<end_plan>"]
    replies += [call("fetch", n=i) for i in range(1, successes + 1)]
    replies += [call(f"broken_{i}") for i in range(1, errors + 1)]
    replies.append(call("final_answer", answer="done"))
    return replies


def _run(make_tool_agent, model, **kwargs):
    kwargs.setdefault("context_budget", BUDGET)
    agent, _ = make_tool_agent(model, tools=[fetch], planning_interval=100, max_steps=30, **kwargs)
    events = list(agent.run("Collect the records.", stream=True))
    return agent, events


def _tokens(model, messages) -> int:
    return model.count_tokens(messages)


def test_compaction_keeps_required_parts_and_budget(make_tool_agent):
    model = SummaryAwareReplay(_script(successes=6, errors=4))
    agent, events = _run(make_tool_agent, model, compaction={"keep_last_steps": 3})
    assert events[-1].state == "success" and events[-1].output == "done"
    compacted = [e for e in events if isinstance(e, ev.MemoryCompacted)]
    assert compacted, "the run should have needed compaction"
    for event in compacted:
        assert event.tokens_before > BUDGET >= event.tokens_after and event.budget == BUDGET
        assert event.steps_folded > 0 and event.summary_source == "model"
    # Every prompt the agent sent stayed under the budget.
    for messages in model.calls:
        assert _tokens(model, messages) <= BUDGET
    # The full steps stay in memory; the summary call is not an action step.
    assert [s.step_number for s in agent.memory.action_steps()] == list(range(1, 12))
    assert events[-1].steps == 11
    summaries = [s for s in agent.memory.steps if isinstance(s, SummaryStep)]
    assert len(summaries) == len(compacted) == len(model.summary_calls)
    assert summaries[-1].token_usage.input_tokens == 100
    # The last prompt: system prompt, task, latest plan, summary, the relevant errors and the last steps verbatim.
    last = model.calls[-1]
    texts = [message_text(m) for m in last]
    assert last[0]["role"] == "system" and last[0]["content"] == agent.memory.system_prompt.system_prompt
    assert any("Collect the records." in t for t in texts)
    assert any("PLAN: 1. fetch records" in t for t in texts)
    assert any("SUMMARY: earlier steps" in t for t in texts)
    for i in range(1, 5):  # errors after the last success: all kept verbatim
        assert any(f"broken_{i}" in t for t in texts)
    assert not any("RECORD-1 " in t for t in texts)  # early observations are folded
    steps = agent.memory.steps
    last_actions = [s for s in steps if isinstance(s, ActionStep)][-4:-1]  # the last call answered them
    for step in last_actions:
        assert all(message in last for message in step.messages)
    # The summary request saw the folded observations and the task.
    first_request = message_text(model.summary_calls[0][1])
    assert "RECORD-1 " in first_request and "Collect the records." in first_request


def test_kept_steps_rule():
    steps = [TaskStep(task="t"), PlanningStep(plan="p1"), PlanningStep(plan="p2")]
    outcomes = ["e_old", None, "e_a", "e_b", None, None, "e_c", "e_d", None, "e_e", "e_f"]
    steps += [ActionStep(step_number=i + 1, error=o) for i, o in enumerate(outcomes)]
    kept = choose_kept_steps(steps, keep_last=2, max_errors=5)
    # task, latest plan, last two (both errors after the last success)
    assert kept == {0, 2, len(steps) - 2, len(steps) - 1}
    outcomes = [None, "e1", "e2", "e3", None, "x1", "x2", "x3", "x4"]
    steps = [TaskStep(task="t")] + [ActionStep(step_number=i + 1, error=o) for i, o in enumerate(outcomes)]
    kept = choose_kept_steps(steps, keep_last=1, max_errors=3)
    assert kept == {0, 7, 8, 9}  # errors x2..x4 (the most recent three not followed by a success), last step


def test_failing_or_empty_summary_falls_back_deterministically(make_tool_agent):
    def boom(messages):
        raise RuntimeError("summary model down")

    results = []
    for summarize in (boom, boom, lambda messages: "   "):
        model = SummaryAwareReplay(_script(successes=6, errors=0), summarize=summarize)
        agent, events = _run(make_tool_agent, model)
        assert events[-1].state == "success"
        summaries = [s for s in agent.memory.steps if isinstance(s, SummaryStep)]
        assert summaries and all(s.source == "fallback" for s in summaries)
        assert all(e.summary_source == "fallback" for e in events if isinstance(e, ev.MemoryCompacted))
        text = summaries[0].summary
        assert "Step 1:" in text and "called fetch" in text and "RECORD-1" in text and "chars cut" in text
        for messages in model.calls:
            assert _tokens(model, messages) <= BUDGET
        results.append([s.summary for s in summaries])
    assert results[0] == results[1] == results[2]  # same steps, same fallback summary


def test_summary_reply_from_a_plain_replay_script(make_tool_agent):
    """A plain ReplayModel works too: the summary replies sit in the script where compaction happens."""
    from agents.memory.compaction import is_summary_request

    probe = SummaryAwareReplay(_script(successes=6, errors=0))
    _, events = _run(make_tool_agent, probe)
    positions = [e.step for e in events if isinstance(e, ev.MemoryCompacted)]
    assert positions
    replies = list(_script(successes=6, errors=0))
    for offset, step in enumerate(positions):  # call 0 is the plan, call k the action of step k
        replies.insert(step + offset, f"INLINE SUMMARY {offset + 1}")
    plain = ReplayModel(replies)
    agent, events = _run(make_tool_agent, plain)
    assert events[-1].state == "success" and plain.remaining == 0
    summaries = [s.summary for s in agent.memory.steps if isinstance(s, SummaryStep)]
    assert summaries == [f"INLINE SUMMARY {i + 1}" for i in range(len(positions))]
    assert all(is_summary_request(plain.calls[step + offset]) for offset, step in enumerate(positions))


def test_step_callback_vetoes_compaction(make_tool_agent):
    seen = []

    def veto(step, agent):
        seen.append(step)
        return False

    model = SummaryAwareReplay(_script(successes=6, errors=0))
    agent, events = _run(make_tool_agent, model, step_callbacks={"summary": veto})
    assert seen and all(isinstance(s, SummaryStep) and s.summary.startswith("SUMMARY") for s in seen)
    assert not any(isinstance(e, ev.MemoryCompacted) for e in events)
    assert not any(isinstance(s, SummaryStep) for s in agent.memory.steps)
    assert agent.compactor.vetoes == len(seen) and agent.compactor.compactions == 0
    assert len(seen) < len(model.calls)  # after a veto it waits for the prompt to grow before asking again
    assert _tokens(model, model.calls[-1]) > BUDGET  # the user chose a longer prompt
    assert events[-1].state == "success"


def test_callbacks_returning_none_do_not_veto(make_tool_agent):
    seen = []
    model = SummaryAwareReplay(_script(successes=6, errors=0))
    agent, events = _run(make_tool_agent, model, step_callbacks=lambda step, agent: seen.append(step.step_type))
    assert "summary" in seen and any(isinstance(e, ev.MemoryCompacted) for e in events)


def test_no_compaction_when_not_needed_and_counting_is_incremental(make_tool_agent):
    model = SummaryAwareReplay(_script(successes=6, errors=0))
    counted = []
    original = model.count_tokens
    model.count_tokens = lambda messages: counted.append(len(messages)) or original(messages)
    agent, events = _run(make_tool_agent, model, context_budget=100_000)
    assert not any(isinstance(e, ev.MemoryCompacted) for e in events) and not model.summary_calls
    assert sum(counted) == len(agent.memory.messages) - 2  # each message counted once (not the last step's)
    assert default_budget(model) == 32_000
    model.context_size = 8192
    assert default_budget(model) == 8192 - 1024
    disabled, _ = make_tool_agent(SummaryAwareReplay(_script(6, 0)), tools=[fetch], context_budget=200,
                                  compaction=False)
    assert disabled.compactor.enabled is False


def test_fallback_summary_is_bounded():
    steps = [ActionStep(step_number=i, code=f"x{i} = {i}\nprint(x{i})", observations="Observation:\n" + "y" * 1000)
             for i in range(1, 200)]
    text = fallback_summary(steps, "an even older summary", max_chars=2000)
    assert len(text) <= 2100 and "older steps omitted" in text and "Step 199:" in text


def test_history_survives_compaction_save_load_and_follow_up(make_tool_agent, tmp_path, secret):
    history = [{"role": "user", "content": "HISTORY-Q: my name is Ada."},
               {"role": "assistant", "content": "HISTORY-A: hi Ada."}]
    model = SummaryAwareReplay(_script(successes=6, errors=0))
    agent, _ = make_tool_agent(model, tools=[fetch], planning_interval=100, context_budget=BUDGET)
    agent.run("Collect the records.", history=history)
    assert any(isinstance(s, SummaryStep) for s in agent.memory.steps)
    assert model.calls[-1][1] == history[0] and model.calls[-1][2] == history[1]  # between system prompt and task
    assert "Collect the records." in model.calls[-1][3]["content"]
    save_memory(agent.memory, tmp_path / "m.json", secret=secret)
    follow = SummaryAwareReplay([call("fetch", n=7), call("fetch", n=8), call("fetch", n=9), call("fetch", n=10),
                                 call("final_answer", answer="Ada")])
    fresh, _ = make_tool_agent(follow, tools=[fetch], context_budget=BUDGET)
    restore_agent_memory(fresh, tmp_path / "m.json", secret=secret)
    assert [step_to_dict(s) for s in fresh.memory.steps] == [step_to_dict(s) for s in agent.memory.steps]
    assert fresh.memory.messages == agent.memory.messages  # the compacted prompt is rebuilt from the steps
    assert fresh.run("What is my name?", reset=False) == "Ada"
    first = follow.calls[0]
    assert first[1] == history[0] and first[2] == history[1]
    assert any("SUMMARY" in message_text(m) for m in first)
    assert first[-1]["content"].endswith("What is my name?")
    for messages in follow.calls:
        assert follow.count_tokens(messages) <= BUDGET
    assert follow.summary_calls  # the follow-up compacted again, through the same path
    assert [s.step_number for s in fresh.memory.action_steps()] == list(range(1, 13))


def test_compactor_can_be_used_directly():
    memory = AgentMemory("sys")
    memory.add_step(TaskStep(task="t", messages=[{"role": "user", "content": "t"}]))
    assert Compactor(context_budget=500).enabled and memory.messages[-1]["content"] == "t"


def test_compactor_takes_a_memory_model_templates_and_a_review_not_an_agent():
    """Memory is data: compaction needs no agent, only the memory, a model, the templates and a review callback."""
    from agents.prompts import load_prompt_templates

    templates = load_prompt_templates("tool_calling_agent")
    model = SummaryAwareReplay([])

    def filled_memory() -> AgentMemory:
        memory = AgentMemory("sys")
        task = "Collect the records."
        memory.add_step(TaskStep(task=task, messages=[{"role": "user", "content": task}]))
        for n in range(1, 9):
            memory.add_step(ActionStep(step_number=n, observations=f"RECORD-{n}", messages=[
                {"role": "assistant", "content": f"fetch({n})"},
                {"role": "user", "content": f"RECORD-{n} " + "lorem ipsum dolor sit amet " * 40}]))
        return memory

    vetoing, reviewed = Compactor(context_budget=BUDGET), []
    memory = filled_memory()
    before = list(memory.messages)
    assert vetoing.maybe_compact(memory, model, templates, lambda step: reviewed.append(step) or False) is None
    assert len(reviewed) == 1 and vetoing.vetoes == 1 and memory.messages == before  # a veto installs nothing

    compactor = Compactor(context_budget=BUDGET)
    memory = filled_memory()
    done = compactor.maybe_compact(memory, model, templates, lambda step: True)
    assert done is not None and memory.steps[-1] is done.step and done.budget == BUDGET
    assert done.step.tokens_before > BUDGET >= done.step.tokens_after == model.count_tokens(memory.messages)
    assert done.steps_folded == done.step.folded_steps >= 5 and 0 in done.step.kept_steps  # the task stays verbatim
    assert done.step.source == "model" and len(model.summary_calls) == 2  # the vetoed summary was written too
    assert any("SUMMARY" in message_text(m) for m in memory.messages)
