"""AgentMemory: the steps of an agent's conversation and the prompt they add up to.

Memory is data: it knows nothing of the agent loop. Saving and loading live in `serialize.py`, compaction
(which reads a memory and appends a summary step) in `compaction.py`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from agents.memory.steps import ActionStep, MemoryStep, PlanningStep, SummaryStep, SystemPromptStep, TaskStep
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
