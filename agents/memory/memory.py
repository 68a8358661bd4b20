"""AgentMemory: the steps of an agent's conversation and the prompt they add up to."""
from __future__ import annotations

from collections.abc import Iterator

from agents.memory.steps import ActionStep, MemoryStep, PlanningStep, SystemPromptStep, TaskStep
from agents.models.base import Message


class AgentMemory:
    """Holds the steps and keeps the model's prompt as an append-only list of messages.

    `messages` is maintained incrementally: recording a step appends that step's pre-rendered messages.
    Compaction swaps in a shorter prompt (`replace_prompt`) while `steps` keeps every step.
    """

    def __init__(self, system_prompt: str = "", examples: list[Message] | tuple = ()) -> None:
        self.system_prompt = SystemPromptStep(system_prompt=system_prompt,
                                              messages=[{"role": "system", "content": system_prompt}, *examples])
        self.steps: list[MemoryStep] = []
        self._messages: list[Message] = list(self.system_prompt.messages)

    # -- recording -------------------------------------------------------------------------------
    def add_step(self, step: MemoryStep) -> None:
        self.steps.append(step)
        self._messages.extend(step.messages)

    def set_system_prompt(self, system_prompt: str, examples: list[Message] | tuple = ()) -> None:
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

    def replace_prompt(self, messages: list[Message]) -> None:
        """Install a new prompt (after compaction or loading); later steps append to it."""
        self._messages = list(messages)

    def rebuild_prompt(self) -> None:
        """Rebuild the prompt from every step's cached messages (after loading a saved memory or compacting).

        The latest SummaryStep, if any, stands in for the earlier steps it folded (see compaction.py)."""
        from agents.memory.compaction import prompt_from_steps

        self._messages = prompt_from_steps(self.system_prompt.messages, self.steps)

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

    def __len__(self) -> int:
        return len(self.steps)

    # -- saving and loading (agents/memory/serialize.py) -------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-safe, versioned document of every step (see serialize.memory_to_dict)."""
        from agents.memory.serialize import memory_to_dict
        return memory_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> AgentMemory:
        from agents.memory.serialize import memory_from_dict
        return memory_from_dict(data)

    def save(self, path, secret: bytes | str | None = None) -> None:
        """Write the memory as signed JSON (secret: given, else AGENTDECK_SECRET / the secret file)."""
        from agents.memory.serialize import save_memory
        save_memory(self, path, secret)

    @classmethod
    def load(cls, path, secret: bytes | str | None = None, **limits) -> AgentMemory:
        """Read a signed memory document; refuses tampered, foreign, oversize or unknown-version files."""
        from agents.memory.serialize import load_memory
        return load_memory(path, secret, **limits)
