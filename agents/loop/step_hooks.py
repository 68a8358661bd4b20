"""What a run's StepRunner asks of its agent, with the base agent's answers (a subclass overrides them): the
prompts (system prompt, examples, a step's messages and options, the task's wording), the answer checks (none
here; the CodeAgent checks a small model's answers, agents/loop/answer_checking.py), and the action itself.

A part of `MultiStepAgent` (agents/loop/base.py) kept apart by concept; it reads the agent's prompt templates,
memory, tools and managed agents.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.errors import AgentDeckError
from agents.events import Event
from agents.loop.context import RunContext
from agents.memory import ActionStep, AgentMemory
from agents.models.base import Message, ModelReply
from agents.prompts import render
from agents.prompts.profiles import describe_task, example_messages
from agents.tooling.base import Tool


class StepHooks:
    prompt_templates: dict[str, Any]
    memory: AgentMemory
    tools: dict[str, Tool]
    managed_agents: dict[str, Any]  # MultiStepAgents by name (base.py imports this module: no circle)
    instructions: str

    # -- prompts ---------------------------------------------------------------------------------
    def system_prompt(self, run: RunContext | None = None) -> str:
        """The system prompt; for a `run` that offers fewer tools (`RunOptions.tools`), naming only those."""
        return render(self.prompt_templates, "system_prompt", **self.prompt_variables(run))

    def prompt_examples(self, task: str = "") -> list[Message]:
        """Worked examples shown as earlier chat turns, when the prompt file has them (the tiny prompts);
        with a task, those the prompt file chooses for it."""
        return example_messages(self.prompt_templates, getattr(self, "authorized_imports", ()), task)

    def prompt_for_step(self, run: RunContext) -> list[Message]:
        """What the model is sent for an action step: the memory's prompt (an agent may show less of it)."""
        return self.memory.messages

    def step_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The options of an action step's model call (from `StepRunner._reply_options`); an agent may change
        them (the structured CodeAgent asks for its JSON reply instead)."""
        return options

    def describe_task(self, text: str, files: Any = (), unusable: Any = ()) -> str:
        """The task for `text` with uploaded `files`, worded the way this agent's prompts expect."""
        return describe_task(self.prompt_templates, text, files, unusable)

    def prompt_variables(self, run: RunContext | None = None) -> dict[str, Any]:
        """The variables the prompt templates are rendered with: the tools and managed agents `run` offers
        (all of them without a run, or for a run that offers them all)."""
        offered = run.tools if run is not None else None
        tools, agents = list(self.tools.values()), list(self.managed_agents.values())
        if offered is not None:
            tools = [tool for tool in tools if tool.name in offered]
            agents = [agent for agent in agents if agent.name in offered]
        return {"tools": tools, "managed_agents": agents, "custom_instructions": self.instructions}

    # -- answer checks: none here; the CodeAgent checks a small model's answers (agents/loop/answer_checking.py) --
    def answer_observer(self, emit: Callable[[Event], None], top_level: bool = True) -> Callable[[Event], None]:
        """The run's emit function, or one that also feeds an answer checker the run's events (top-level runs
        only: a managed agent's answer goes to its manager, not to the person)."""
        return emit

    def task_for_run(self, task: str) -> str:
        """The task as the model gets it (a follow-up may be given the earlier answer it refers to)."""
        return task

    def run_refusal(self) -> AgentDeckError | None:
        """Why this run cannot be attempted at all (raised before its first step), or None."""
        return None

    def step_cap(self) -> int | None:
        """The most steps any run of this agent may take, whatever the run asks for (None: no cap)."""
        return None

    def check_answer(self, value: Any, run: RunContext | None = None) -> dict[str, Any] | None:
        """What the app checked of the run's answer (agents.events.AnswerCheck as a dict), or None; `run`: the
        run's context (a check that asks the model again reports to it)."""
        return None

    def answer_problem(self, value: Any) -> str | None:
        """What is wrong with a step's answer, told to the model while the run has steps left (None: nothing
        found, or this agent checks nothing)."""
        return None

    # -- what subclasses provide to the step mechanics --------------------------------------------
    def act(self, step: ActionStep, reply: ModelReply, run: RunContext) -> None:
        """Act on the model's reply: fill in `step` (code, tool calls, observations, error, final answer)."""
        raise NotImplementedError(f"{type(self).__name__} must implement act(step, reply, run).")

    def native_tool_schemas(self, run: RunContext | None = None) -> list[dict[str, Any]] | None:
        """The tools (those `run` offers) as native tool-call schemas for the model, or None to let it write
        actions as text."""
        return None
