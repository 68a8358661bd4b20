"""AgentMemory: the steps of an agent's conversation and the prompt they add up to.

Memory is data: it knows nothing of the agent loop. Saving and loading live in `serialize.py`, compaction
(which reads a memory and appends a summary step) in `compaction.py`.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from agents.memory.steps import (
    ActionStep,
    MemoryStep,
    PlanningStep,
    SummaryStep,
    SystemPromptStep,
    TaskStep,
    Timing,
)
from agents.models.base import Message
from agents.models.images import OBSERVATION_IMAGES_KEY, images_size

if TYPE_CHECKING:
    from agents.decisions.pending import PendingDecision


def latest_summary(steps: Sequence[MemoryStep]) -> tuple[int, SummaryStep] | None:
    """The latest SummaryStep and its index, if any."""
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if isinstance(step, SummaryStep):
            return index, step
    return None


STOPPED_STEP = "The run was stopped by the user."
#: A step the run was paused on, for a person's decision, when the run was stopped: its code never ran.
STOPPED_BEFORE_RUN = "The run was stopped while this step waited for a decision: its code never ran."


def _stopped_step(step: ActionStep) -> ActionStep:
    """A copy of the action step `step` as it was when its run was stopped (its lists copied: the run's thread
    may still append to the original)."""
    kept = copy.copy(step)
    for name in (f.name for f in dataclasses.fields(kept)):
        value = getattr(kept, name)
        if isinstance(value, list):
            setattr(kept, name, list(value))
    kept.stopped, kept.error = True, step.error or STOPPED_STEP
    kept.timing = Timing(step.timing.start_time, step.timing.end_time or time.time())
    return kept


def prompt_from_steps(system_messages: list[Message], steps: Sequence[MemoryStep]) -> list[Message]:
    """The prompt the steps add up to, honouring the latest SummaryStep.

    Without a summary: the system messages, then every step's messages in order. With one at index `s`:
    the steps before `s` listed in its `kept_steps` stay verbatim, the summary's message takes the place of
    the first step it folds, and every step after `s` follows.
    """
    messages = list(system_messages)
    latest = latest_summary(steps)
    if latest is None:
        for step in steps:
            messages.extend(step.messages)
        return messages
    last, summary = latest
    kept = set(summary.kept_steps)
    placed = False
    for index in range(last):
        step = steps[index]
        if index in kept:
            messages.extend(step.messages)
        elif step.messages and not placed:
            messages.extend(summary.messages)
            placed = True
    if not placed:
        messages.extend(summary.messages)
    for step in steps[last + 1:]:
        messages.extend(step.messages)
    return messages


class AgentMemory:
    """Holds the steps and keeps the model's prompt as an append-only list of messages.

    `messages` is maintained incrementally: recording a step appends that step's pre-rendered messages.
    After compaction or loading, `rebuild_prompt` lays the prompt out again from the steps, while `steps`
    keeps every step.
    """

    def __init__(self, system_prompt: str = "", examples: list[Message] | tuple[Message, ...] = ()) -> None:
        self.system_prompt = SystemPromptStep(system_prompt=system_prompt,
                                              messages=[{"role": "system", "content": system_prompt}, *examples])
        self.steps: list[MemoryStep] = []
        self._messages: list[Message] = list(self.system_prompt.messages)
        #: How many prompt messages carry observation images (agents/loop/observation_images.py): counted as
        #: steps are recorded, so a prompt without images is never scanned for them.
        self.image_messages = 0
        self.image_bytes = 0
        #: The size of every image the steps hold (base64 characters): a saved chat holds them all, so an agent
        #: stops adding images past `agents.models.images.MAX_MEMORY_IMAGE_BYTES`.
        self.image_bytes = 0
        #: The decision a run ended at, in pause mode (agents/decisions/pending.py); None when none waits.
        self.pending: PendingDecision | None = None
        #: The action step a run is acting now, not recorded until it ends (None between steps): a stop the loop
        #: has not confirmed yet can still keep it, as it was when stopped (`stopped_copy`). Never saved.
        self.in_progress: ActionStep | None = None

    # -- recording -------------------------------------------------------------------------------
    def add_step(self, step: MemoryStep) -> None:
        self.steps.append(step)
        self._messages.extend(step.messages)
        self.image_messages += sum(1 for m in step.messages if m.get(OBSERVATION_IMAGES_KEY))
        self.image_bytes += images_size(step.messages)

    def set_system_prompt(self, system_prompt: str, examples: list[Message] | tuple[Message, ...] = ()) -> None:
        """The system message, then the prompt's worked examples as chat turns (see agents/prompts/profiles.py)."""
        messages = [{"role": "system", "content": system_prompt}, *examples]
        if messages == self.system_prompt.messages:
            return
        before = len(self.system_prompt.messages)
        self.system_prompt = SystemPromptStep(system_prompt=system_prompt, messages=messages)
        # A new list, not an in-place edit: earlier steps' prompt snapshots keep what was really sent.
        self._messages = self.system_prompt.messages + self._messages[before:]

    @property
    def conversation(self) -> list[Message]:
        """The prompt after the system message and its examples: what the steps added."""
        return self._messages[len(self.system_prompt.messages):]

    def reset(self) -> None:
        self.steps.clear()
        self._messages = list(self.system_prompt.messages)
        self.image_messages = 0
        self.pending = None

    def rebuild_prompt(self) -> None:
        """Rebuild the prompt from every step's cached messages (after loading a saved memory or compacting).

        The latest SummaryStep, if any, stands in for the earlier steps it folded (see compaction.py)."""
        self._messages = prompt_from_steps(self.system_prompt.messages, self.steps)
        self.image_messages = sum(1 for m in self._messages if m.get(OBSERVATION_IMAGES_KEY))
        self.image_bytes = sum(images_size(step.messages) for step in self.steps)

    def stopped_copy(self) -> AgentMemory:
        """A copy that a run still going in another thread no longer changes, as the run was when stopped: the
        step it was acting recorded as stopped (its code and output so far), its task ended "interrupted".

        Why: a stop the loop has not confirmed yet is saved from this copy at once (the app's Stop). Without the
        step, a chat reopened from it lost the stopped step's code that the live chat showed."""
        stopped = AgentMemory()
        stopped.system_prompt = self.system_prompt
        stopped.steps = list(self.steps)
        acting = self.in_progress
        # (a step stopped while the model was still answering has nothing to show: it is left out)
        if acting is not None and (acting.model_output or acting.code) \
                and not any(step is acting for step in stopped.steps):
            stopped.steps.append(_stopped_step(acting))
        for index in range(len(stopped.steps) - 1, -1, -1):
            task = stopped.steps[index]
            if isinstance(task, TaskStep):
                if not task.state:  # the run had not ended: it ends here, stopped
                    after = stopped.steps[index + 1:]
                    numbers = [s.step_number for s in after if isinstance(s, (PlanningStep, ActionStep))]
                    stopped.steps[index] = dataclasses.replace(
                        task, state="interrupted", end_step=max(numbers, default=task.steps_before),
                        duration_s=sum(s.timing.duration_s for s in after if isinstance(s, ActionStep)))
                break
        stopped.rebuild_prompt()
        return stopped

    # -- reading ---------------------------------------------------------------------------------
    @property
    def messages(self) -> list[Message]:
        """The prompt so far. Callers must not mutate it."""
        return self._messages

    def action_steps(self) -> Iterator[ActionStep]:
        return (s for s in self.steps if isinstance(s, ActionStep))

    def latest_plan(self) -> PlanningStep | None:
        for step in reversed(self.steps):
            if isinstance(step, PlanningStep):
                return step
        return None

    def last_task(self) -> str:
        for step in reversed(self.steps):
            if isinstance(step, TaskStep):
                return step.task
        return ""

    def last_step_number(self) -> int:
        """The number of the latest planning or action step (0 for none): a run continuing this memory numbers
        its steps after it."""
        return max((getattr(step, "step_number", 0) for step in self.steps), default=0)

    def __len__(self) -> int:
        return len(self.steps)
