"""A session's agent, the settings of its last run, and the memory kept for its next agent.

Its invariant: the agent and the part of the settings it was built with (`RunSettings.agent_build`: model, agent
type, token, imports) change together; the rest (max steps, planning, tools offered, approval mode) goes to each
run and never builds anything. A new model or agent type builds a new agent; new imports give the same agent a
new sandbox. The memory of an agent that is closed (a new model, a sandbox closed to make room, a stop the agent
did not confirm, a closed session) goes to the next agent, and a new sandbox re-runs the recorded code
(ui/saved/restore.py): nothing of the conversation is lost, and the chat says why once.
Used by its session (ui/session/session.py), under the session's lock.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ui.chat.formatting import clip
from ui.chat.render import Transcript
from ui.chat.safe_markdown import neutralize
from ui.saved.restore import carry_memory_into, rebuild_variables
from ui.session import stopping
from ui.settings import AgentBuild, RunSettings

AgentFactory = Callable[[RunSettings, Path], Any]
SLEPT_NOTE = ("💤 **Sandbox restarted**: it was closed while idle to make room on the server; its variables were "
              "rebuilt from the recorded steps.")
SETTINGS_NOTE = "⚙️ **Settings changed**: the new agent continues this conversation."
IMPORTS_NOTE = "🧰 **Imports changed**: the code runs in a new sandbox that allows them."


def settings_note(old: AgentBuild | None, new: AgentBuild) -> str:
    """The chat's note when a new agent takes over: what changed that needed it."""
    if old is None:
        return SETTINGS_NOTE
    changed = [f"{what}: {neutralize(clip(before, 80))} → {neutralize(clip(after, 80))}" for what, before, after in
               (("model", old.model, new.model), ("agent type", old.agent_type, new.agent_type)) if before != after]
    if old.token != new.token:
        changed.append("your Hugging Face sign-in")
    return f"⚙️ **Settings changed** ({'; '.join(changed)}): the new agent continues this conversation." \
        if changed else SETTINGS_NOTE


class AgentSlot:
    def __init__(self, factory: AgentFactory, on_step: Callable[[Any, Any], None]) -> None:
        self._factory = factory
        self._on_step = on_step  # a step callback given to every agent (the session saves each step)
        self._agent: Any = None
        self._settings: RunSettings | None = None
        self._kept: Any = None  # the memory of an agent closed meanwhile (given to the next agent)
        self._kept_why = SLEPT_NOTE  # the chat's note when the next agent gets that memory

    @property
    def agent(self) -> Any:
        return self._agent

    @property
    def settings(self) -> RunSettings | None:
        return self._settings

    @property
    def memory(self) -> Any:
        """The conversation so far: the live agent's memory, or the one kept for the next agent."""
        agent = self._agent
        return getattr(agent, "memory", None) if agent is not None else self._kept

    def agent_for(self, settings: RunSettings, workspace: Path, transcript: Transcript) -> Any:
        """The agent for a run with `settings`: the current one (with a new sandbox when the imports changed), or
        a new one that continues the conversation when the model or agent type changed (the chat says so once).
        Run-level settings change nothing here: the run gets them. Raises what the factory raises; the current
        agent then stays."""
        old = self._settings.agent_build() if self._settings is not None else None
        new = settings.agent_build()
        if self._agent is not None and not self._can_keep(new):
            # A new model needs a new agent, but the conversation goes on: the new agent gets the memory and its
            # sandbox re-runs the recorded code, so follow-ups still see earlier variables.
            memory = self._agent.memory
            replacement = self._factory(settings, workspace)  # if this fails, the old agent stays
            self.close()
            self.use(replacement, settings)
            if memory.steps:
                carry_memory_into(replacement, memory, transcript, settings_note(old, new))
        elif self._agent is not None:
            self._settings = settings  # what the next save records
            if old is not None and old.imports != new.imports and self._agent.change_imports(new.imports):
                memory = self._agent.memory  # the same agent and memory, a new sandbox: its variables rebuilt
                if memory.steps:
                    rebuild_variables(self._agent, memory, transcript, IMPORTS_NOTE)
        if self._agent is None:
            agent = self._factory(settings, workspace)
            self.use(agent, settings)
            memory, self._kept, why = self._kept, None, self._kept_why
            if memory is not None and memory.steps:
                carry_memory_into(agent, memory, transcript, why)
        return self._agent

    def use(self, agent: Any, settings: RunSettings | None) -> None:
        """Make `agent` (built with `settings`) the session's; each step it finishes goes to `on_step`."""
        self._agent, self._settings = agent, settings
        callbacks = getattr(agent, "step_callbacks", None)
        if callbacks is not None and hasattr(callbacks, "add"):
            callbacks.add(self._on_step)

    def build(self, settings: RunSettings, workspace: Path) -> Any:
        """A new agent, not the session's yet (`use` makes it so). Raises what the factory raises."""
        return self._factory(settings, workspace)

    def _can_keep(self, new: AgentBuild) -> bool:
        """The agent can run with settings built as `new`: the same model, type and token, and the same imports
        or a sandbox it can change them in (`CodeAgent.change_imports`)."""
        if self._agent is None or self._settings is None:
            return False
        old = self._settings.agent_build()
        return old.agent_part() == new.agent_part() and (
            old.imports == new.imports or hasattr(self._agent, "change_imports"))

    def built_with(self, settings: RunSettings) -> bool:
        """There is an agent that can go on with `settings` (see `agent_for`): nothing needs building."""
        return self._can_keep(settings.agent_build())

    def renew(self, replacement: Any, settings: RunSettings) -> None:
        """Retry / Edit (ui/session/rewind.py): `replacement` (built with `settings`) takes the agent's place, or
        with None the agent stays and its sandbox restarts (the undone answer's variables go with its worker).
        The memory kept for the next agent is dropped: the rewound memory goes to the agent at once."""
        if replacement is not None:
            self.close()
            self.use(replacement, settings)
        else:
            old = self._settings.agent_build().imports if self._settings is not None else None
            self._settings = settings
            new = settings.agent_build().imports
            change = getattr(self._agent, "change_imports", None)
            changed = old != new and change is not None and change(new)  # a new sandbox, with the imports
            restart = getattr(self._agent, "restart_sandbox", None)
            if not changed and restart is not None:
                restart()
        self.keep_for_next(None)

    @property
    def kept_memory(self) -> Any:
        """The memory kept for the next agent (None when an agent holds it, or there is none)."""
        return self._kept

    def keep_for_next(self, memory: Any, why: str = SLEPT_NOTE) -> None:
        """`memory` goes to the next agent, with `why` in the chat then."""
        self._kept, self._kept_why = memory, why

    def hibernate(self) -> None:
        """Close the agent and its sandbox; its memory goes to the next agent."""
        if self._agent is not None:
            self.keep_for_next(self._agent.memory)
            self.close()

    def replace(self, agent: Any) -> bool:
        """A stopped `agent` that never confirmed the stop: closed in the background, a copy of its memory
        (it may still change) kept for the next agent. False if it is no longer the session's."""
        if agent is None or self._agent is not agent:
            return False
        self.keep_for_next(stopping.snapshot_memory(agent.memory), stopping.STOPPED_NOTE)
        self._agent, self._settings = None, None
        stopping.close_in_background(agent)
        return True

    def close(self, keep_memory: bool = False) -> None:
        """Close the agent now; with `keep_memory`, a copy of its memory goes to the next agent (a run may
        still be changing it)."""
        agent, self._agent, self._settings = self._agent, None, None
        if agent is None:
            return
        if keep_memory:
            self.keep_for_next(stopping.snapshot_memory(agent.memory))
        stopping.close_quietly(agent)

    def clear(self) -> None:
        """New chat: the agent closed, no memory kept."""
        self.close()
        self._kept = None
