"""A stop the loop has not confirmed yet is saved from `AgentMemory.stopped_copy`: the step being acted is kept as
stopped (its code), the run ended "interrupted", and the live memory is left as it is."""
from __future__ import annotations

from agents.loop.restore import skip_reason
from agents.memory import ActionStep, AgentMemory, TaskStep
from agents.memory.serialize import dumps_memory, loads_memory


def _running_memory(code: str | None, reply: str) -> tuple[AgentMemory, ActionStep]:
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="slow", run_id="r1"))
    acting = ActionStep(step_number=1, run_id="r1", model_output=reply, code=code)
    acting.timing.start_time = 1.0
    memory.in_progress = acting
    return memory, acting


def test_the_step_being_acted_is_kept_stopped_and_the_run_ended() -> None:
    memory, acting = _running_memory("import time\ntime.sleep(30)", "Thought: wait.")
    copy = memory.stopped_copy()
    assert [s.step_type for s in copy.steps] == ["task", "action"]
    task, step = copy.steps
    assert step is not acting and step.code == acting.code and step.stopped and step.error
    assert step.timing.end_time > step.timing.start_time
    assert task.state == "interrupted" and task.end_step == 1
    # the live memory (its run still going in another thread) is untouched
    assert len(memory.steps) == 1 and memory.steps[0].state == "" and not acting.stopped and acting.error is None
    loaded = loads_memory(dumps_memory(copy, b"k" * 32), b"k" * 32)
    kept = list(loaded.action_steps())[0]
    assert kept.stopped and skip_reason(kept) == "stopped"


def test_a_step_whose_reply_never_came_is_left_out() -> None:
    memory, _ = _running_memory(None, "")
    copy = memory.stopped_copy()
    assert [s.step_type for s in copy.steps] == ["task"] and copy.steps[0].state == "interrupted"


def test_a_finished_run_is_copied_as_it_is() -> None:
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="done", run_id="r1", state="success", end_step=1))
    step = ActionStep(step_number=1, run_id="r1", model_output="x", code="x = 1")
    memory.add_step(step)
    memory.in_progress = step  # recorded already: not added twice
    copy = memory.stopped_copy()
    assert [s.step_type for s in copy.steps] == ["task", "action"] and copy.steps[0].state == "success"
    assert copy.steps[1] is step and not step.stopped
