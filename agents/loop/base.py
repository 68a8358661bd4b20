"""MultiStepAgent: the run loop shared by the code and tool-calling agents.

The agent holds what lasts across runs: its settings, tools, memory, decisions broker and compactor. Each
run is an object of its own: a RunContext (the run's ids, events, stop flag, decisions) driven by a
StepRunner (agents/loop/step_runner.py), which the agent builds and hands itself. `run(stream=True)` runs
it in a background thread and returns its EventStream (agents/loop/event_stream.py), so nested sub-agents,
tool calls from sandboxed code and paused decisions all stream the same way. The StepRunner's loop yields each
model call (agents/loop/model_call.py): `run` serves them in its thread, `arun`/`astream` await them in their
event loop (agents/loop/async_driver.py).
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from agents.decisions import ApprovalPolicy, Decider, Decision, DecisionBroker, ExternalDecider
from agents.decisions.pending import PendingDecision
from agents.errors import ConfigurationError
from agents.events import Event, new_id
from agents.loop.agent_decisions import AgentDecisions, ignore_event
from agents.loop.agent_images import AgentImages
from agents.loop.agent_sharing import AgentSharing
from agents.loop.callbacks import StepCallbacks
from agents.loop.context import RunContext
from agents.loop.event_stream import EventStream
from agents.loop.managed import ManagedAgentTool
from agents.loop.model_call import Steps, drive
from agents.loop.observation_images import ObservationImageBudget, check_mode
from agents.loop.result import RunResult, RunState
from agents.loop.run_options import RunOptions, resume_options
from agents.loop.step_agent import FinalAnswerCheck
from agents.loop.step_hooks import StepHooks
from agents.loop.step_runner import StepRunner
from agents.loop.tool_runner import ToolRunner
from agents.memory import AgentMemory, HistoryStep
from agents.memory.compaction import make_compactor
from agents.models.base import Message, Model
from agents.models.images import ImageData, with_images
from agents.prompts import load_prompt_templates, render
from agents.telemetry.hub import observe_run
from agents.tooling.base import Tool

if TYPE_CHECKING:
    from agents.console import ConsoleRenderer


class MultiStepAgent(StepHooks, AgentImages, AgentSharing, AgentDecisions):
    """Base agent. Subclasses set `prompt_kind` and implement `act(step, reply, run)`."""

    prompt_kind = ""
    stop_sequences: list[str] = []

    def __init__(
        self,
        tools: list[Tool] | tuple[Tool, ...] = (),
        model: Model | None = None,
        max_steps: int = 20,
        planning_interval: int | None = None,
        name: str | None = None,
        description: str | None = None,
        managed_agents: list[MultiStepAgent] | tuple[MultiStepAgent, ...] = (),
        step_callbacks: Any = None,
        final_answer_checks: list[FinalAnswerCheck] | tuple[FinalAnswerCheck, ...] = (),
        prompt_templates: dict[str, Any] | None = None,
        instructions: str | None = None,
        approval_policy: ApprovalPolicy | str | None = None,
        decider: Decider | None = None,
        verbosity: int = 1,
        context_budget: int | None = None,
        compaction: Any = None,
        max_tokens_per_run: int | None = None,
        observation_images: str = "latest",
        observation_image_budget: ObservationImageBudget | None = None,
        pause_on_decision: bool = False,
    ) -> None:
        if model is None:
            raise ConfigurationError("An agent needs a model, e.g. model=load_model('embedded') or ReplayModel([...]).")
        if max_steps < 1:
            raise ConfigurationError("max_steps must be at least 1.")
        if planning_interval is not None and planning_interval < 1:
            raise ConfigurationError("planning_interval must be a positive number of steps, or None.")
        if name is not None and not name.isidentifier():
            raise ConfigurationError(f"Agent name {name!r} must be a Python identifier: it is called like a tool.")
        self.model = model
        self.max_steps = max_steps
        self.max_tokens_per_run = max_tokens_per_run  # an operator's spending cap: the run stops past it
        #: Which images the steps produced go to a vision model with the next steps (observation_images.py).
        self.observation_images = check_mode(observation_images)
        self.observation_image_budget = observation_image_budget or ObservationImageBudget()
        self.planning_interval = planning_interval
        self.name = name
        self.description = description
        self.instructions = instructions or ""
        self.verbosity = verbosity
        self.tools = self._index_tools(tools)
        self.managed_agents = self._index_managed_agents(managed_agents)
        if isinstance(approval_policy, str):
            approval_policy = ApprovalPolicy.from_mode(approval_policy)
        self.broker = DecisionBroker(approval_policy or ApprovalPolicy(), decider or ExternalDecider())
        self.runner = ToolRunner(self._callable_tools())
        self.step_callbacks = StepCallbacks(step_callbacks)
        self.final_answer_checks = list(final_answer_checks)
        self.prompt_templates = load_prompt_templates(self._prompt_kind(), prompt_templates)
        self.memory = AgentMemory(self.system_prompt(), self.prompt_examples())
        # Keeps prompts under `context_budget` tokens (default: from the model); compaction=False turns it off.
        self.compactor = make_compactor(context_budget, compaction)
        self._interrupt_flag = threading.Event()
        #: Pause mode (agents/decisions/pending.py): an action step's decision request ends a top-level run,
        #: recorded in `memory.pending`; `resume(decision)` goes on from there, here or in another process.
        self.pause_on_decision = pause_on_decision
        #: The conversation's latest step number: a follow-up run numbers its steps after it.
        self._step_number = 0

    # -- set-up ----------------------------------------------------------------------------------
    def _prompt_kind(self) -> str:
        return self.prompt_kind

    def _index_tools(self, tools: Any) -> dict[str, Tool]:
        indexed: dict[str, Tool] = {}
        for candidate in tools:
            if not isinstance(candidate, Tool):
                raise ConfigurationError(
                    f"{candidate!r} is not a Tool: decorate functions with @tool or subclass Tool."
                )
            if candidate.name in indexed:
                raise ConfigurationError(f"Two tools are named {candidate.name!r}; tool names must be unique.")
            indexed[candidate.name] = candidate
        return indexed

    def _index_managed_agents(self, agents: Any) -> dict[str, MultiStepAgent]:
        indexed: dict[str, MultiStepAgent] = {}
        for agent in agents:
            if not getattr(agent, "name", None) or not getattr(agent, "description", None):
                raise ConfigurationError(
                    "A managed agent needs a `name` and a `description` so its manager can call it.")
            if agent.name in indexed or agent.name in self.tools:
                raise ConfigurationError(f"The name {agent.name!r} is used twice among tools and managed agents.")
            indexed[agent.name] = agent
        return indexed

    def _callable_tools(self) -> dict[str, Tool]:
        callables: dict[str, Tool] = dict(self.tools)
        for name, agent in self.managed_agents.items():
            callables[name] = ManagedAgentTool(agent)
        return callables

    def run_tools(self, run: RunContext) -> dict[str, Tool]:
        """The tools (managed agents as tools) `run` may call: the ones it offers, else all of the agent's."""
        return run.tools if run.tools is not None else self.runner.tools

    # -- public API ------------------------------------------------------------------------------
    def run(self, task: str, stream: bool = False, reset: bool = True, return_result: bool = False,
            history: list[Message] | None = None, additional_args: dict[str, Any] | None = None,
            images: list[Any] | None = None, *, max_steps: int | None = None, planning_interval: int | None = None,
            approval_policy: ApprovalPolicy | str | None = None, tools: Collection[str] | None = None) -> Any:
        """Run `task`. `reset=False` continues the same memory and state (a follow-up question).

        `images` (PIL images, file paths or bytes: PNG, JPEG, WebP, GIF) go to the model with the task; a model
        that reads no images (`Model.supports_images`) refuses them here, before the run starts.

        For this run only (the agent, its model and its sandbox stay as they are; None is the agent's own):
        `max_steps`; `planning_interval` (0: no planning in this run); `approval_policy` (a policy or a mode name,
        also for the managed agents this run calls); `tools`, the names of the agent's tools (and managed agents)
        this run offers the model (agents/loop/run_options.py). A bad value raises ConfigurationError here.

        With `stream=True`, returns an EventStream: an iterator of events that can also be read with a timeout.
        Otherwise returns the final answer, or a RunResult with `return_result=True`. A run that fails (model
        unreachable, script exhausted) raises its error unless `return_result=True`.
        """
        options = self.run_options(max_steps, planning_interval, approval_policy, tools)
        arguments: dict[str, Any] = {"task": task, "reset": reset, "history": history,
                                     "additional_args": additional_args,
                                     "images": self.check_images(images, fresh=reset), "options": options}
        if stream:
            return self._stream(arguments)
        logger = self._console()
        result = self._execute(emit=logger.handle if logger else ignore_event, **arguments)
        if return_result:
            return result
        if result.state is RunState.ERROR and result.exception is not None:
            raise result.exception
        return result.output

    def astream(self, task: str, reset: bool = True, history: list[Message] | None = None,
                additional_args: dict[str, Any] | None = None,
                images: list[Any] | None = None, *, max_steps: int | None = None,
                planning_interval: int | None = None, approval_policy: ApprovalPolicy | str | None = None,
                tools: Collection[str] | None = None) -> AsyncIterator[Event]:
        """`async for event in agent.astream(task)`: the events of `run(stream=True)`, in an event loop; the
        model call is awaited there when the model can be (agents/loop/async_api.py). Cancel the task to Stop.
        `images` and this run's own settings as for `run`: refused here, before the run."""
        from agents.loop.async_api import astream
        options = self.run_options(max_steps, planning_interval, approval_policy, tools)
        return astream(self, task, reset=reset, history=history, additional_args=additional_args, images=images,
                       options=options)

    async def arun(self, task: str, reset: bool = True, return_result: bool = False,
                   history: list[Message] | None = None, additional_args: dict[str, Any] | None = None,
                   images: list[Any] | None = None, *, max_steps: int | None = None,
                   planning_interval: int | None = None, approval_policy: ApprovalPolicy | str | None = None,
                   tools: Collection[str] | None = None) -> Any:
        """`await agent.arun(task)`: what `run(task)` returns, from an event loop (see `astream`); `images` and
        this run's own settings as for `run`."""
        from agents.loop.async_api import arun
        options = self.run_options(max_steps, planning_interval, approval_policy, tools)
        return await arun(self, task, reset=reset, return_result=return_result, history=history,
                          additional_args=additional_args, images=images, options=options)

    def run_options(self, max_steps: int | None = None, planning_interval: int | None = None,
                    approval_policy: ApprovalPolicy | str | None = None,
                    tools: Collection[str] | None = None) -> RunOptions:
        """A run's own settings, checked against this agent (its tools by name) before the run starts."""
        options = RunOptions.make(max_steps, planning_interval, approval_policy, tools)
        options.offered(self.runner.tools)  # an unknown tool name is refused now, not in the run's thread
        return options

    def interrupt(self) -> None:
        """Stop the current run at the next safe point; running code and pending decisions stop at once."""
        self._interrupt_flag.set()
        decider = self.broker.decider
        if isinstance(decider, ExternalDecider):
            decider.cancel_all()
        for agent in self.managed_agents.values():
            agent.interrupt()

    def _resume_steps(self, pending: PendingDecision, decision: Decision,
                      emit: Callable[[Event], None]) -> Steps[RunResult]:
        """`_resume` as the step loop's generator (agents/loop/model_call.py)."""
        emit = observe_run(self, emit, None)
        emit = self.answer_observer(emit, top_level=True)
        options = resume_options(pending, self.runner.tools)
        run = self._run_context(emit, None, None, options)
        run.run_id, run.grant = pending.run_id, (pending, decision)
        self._interrupt_flag.clear()
        steps = StepRunner(self, run, last_step_number=self._step_number, started=time.perf_counter())
        run.first_message = None
        try:
            return (yield from steps.resume_steps(pending))
        finally:
            self._step_number = max(self._step_number, steps.last_step_number)

    def run_for_manager(self, task: str, emit: Callable[[Event], None], parent_id: str,
                        additional_args: dict[str, Any] | None = None,
                        event_loop: asyncio.AbstractEventLoop | None = None,
                        approval_policy: ApprovalPolicy | None = None) -> RunResult:
        """Run `task` as a managed agent, inside its manager's run (agents/loop/managed.py): a fresh memory, the
        events into the manager's stream (`emit`), this run's `parent_id` the manager's call that started it
        (and its model calls in the manager's event loop, under `arun`/`astream`); `approval_policy`: the one
        the manager's run was given, if any."""
        return self._execute(task, emit=emit, reset=True, additional_args=additional_args, parent_id=parent_id,
                             event_loop=event_loop, options=RunOptions(approval_policy=approval_policy))

    def continue_from(self, memory: AgentMemory) -> None:
        """Carry on the conversation held in `memory` (loaded from disk, or an earlier agent's): the next
        `run(..., reset=False)` continues it, numbering its steps after the memory's last. A loaded memory is
        screened first: see `agents.loop.restore.restore_agent_memory`."""
        self.memory = memory
        self._step_number = memory.last_step_number()

    def _agents_tree(self) -> Iterator[MultiStepAgent]:
        yield self
        for agent in self.managed_agents.values():
            yield from agent._agents_tree()

    def close(self) -> None:
        """Free what the agent holds (its sandbox, its sub-agents')."""
        for agent in self.managed_agents.values():
            agent.close()

    def __enter__(self) -> MultiStepAgent:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- running ---------------------------------------------------------------------------------
    def _console(self) -> ConsoleRenderer | None:
        if self.verbosity <= 0:
            return None
        from agents.console import ConsoleRenderer
        return ConsoleRenderer(self.verbosity)

    def _stream(self, arguments: dict[str, Any]) -> EventStream:
        return EventStream(lambda emit: self._execute(emit=emit, **arguments), on_abandon=self.interrupt,
                           thread_name=f"agent-run-{self.name or type(self).__name__}")

    def _reset(self) -> None:
        self.memory.reset()
        self._step_number = 0

    def _execute(self, task: str, emit: Callable[[Event], None], reset: bool = True,
                 history: list[Message] | None = None, additional_args: dict[str, Any] | None = None,
                 parent_id: str | None = None, event_loop: asyncio.AbstractEventLoop | None = None,
                 images: list[ImageData] | None = None, options: RunOptions | None = None) -> RunResult:
        """Start a run and drive it in this thread (see `_run_steps`)."""
        return drive(self._run_steps(task, emit, reset, history, additional_args, parent_id, event_loop, images,
                                     options))

    def _run_steps(self, task: str, emit: Callable[[Event], None], reset: bool = True,
                   history: list[Message] | None = None, additional_args: dict[str, Any] | None = None,
                   parent_id: str | None = None, event_loop: asyncio.AbstractEventLoop | None = None,
                   images: list[ImageData] | None = None, options: RunOptions | None = None) -> Steps[RunResult]:
        """A run as the step loop's generator, yielding the model calls it waits for (agents/loop/model_call.py):
        a new RunContext (with this run's own settings, `options`) and StepRunner; the agent's own part is
        preparing its memory. `run` drives it in its thread, `arun`/`astream` from an event loop."""
        emit = observe_run(self, emit, parent_id)  # traces and metrics (agents/telemetry); unchanged when off
        emit = self.answer_observer(emit, top_level=parent_id is None)
        run = self._run_context(emit, parent_id, event_loop, options or RunOptions())
        self._interrupt_flag.clear()
        self.memory.pending = None  # a new task: a decision a paused run waited for is no longer asked
        started = time.perf_counter()
        if reset:
            self._reset()
        steps = StepRunner(self, run, last_step_number=self._step_number, started=started)
        history_message = None
        if history:
            self._add_history(history)
            history_message = self.memory.steps[-1].messages[0]
        if additional_args:
            task = self._hand_over_arguments(task, additional_args)
        task = self.task_for_run(task)
        self.memory.set_system_prompt(self.system_prompt(run), self.prompt_examples(task))
        task_message = {"role": "user", "content": with_images(render(self.prompt_templates, "task", task=task),
                                                               list(images or []))}
        run.first_message = history_message or task_message
        try:
            return (yield from steps.execute_steps(task, task_message))
        finally:
            self._step_number = steps.last_step_number

    def _run_context(self, emit: Callable[[Event], None], parent_id: str | None,
                     event_loop: asyncio.AbstractEventLoop | None, options: RunOptions) -> RunContext:
        """A run's context: its ids and events, and its settings (the run's own, else the agent's). A run with
        its own approval policy asks through a broker of its own, with the agent's decider (so a decision is
        answered as any other: `resolve_decision`)."""
        broker = self.broker.for_policy(options.approval_policy)
        max_steps = options.max_steps or self.max_steps
        cap = self.step_cap()
        if cap:  # a small model's checked answers come from short runs (agents/loop/answer_checking.py)
            max_steps = min(max_steps, cap)
        interval = self.planning_interval if options.planning_interval is None else options.planning_interval
        return RunContext(run_id=new_id(), emit_function=emit, interrupt_flag=self._interrupt_flag, broker=broker,
                          parent_id=parent_id, step=self._step_number, event_loop=event_loop,
                          max_steps=max_steps, planning_interval=interval or None,
                          tools=options.offered(self.runner.tools), approval_policy=options.approval_policy,
                          pausing=self.pause_on_decision and parent_id is None)

    def _add_history(self, history: list[Message]) -> None:
        checked: list[Message] = []
        for message in history:
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
                raise ConfigurationError(
                    "history must be a list of {'role': 'user'|'assistant', 'content': ...} dicts.")
            checked.append({"role": message["role"], "content": message.get("content", "")})
        self.memory.add_step(HistoryStep(history=checked, messages=checked))

    def _hand_over_arguments(self, task: str, additional_args: dict[str, Any]) -> str:
        """Make `additional_args` available to the agent; the base agent describes them in the task."""
        listing = "\n".join(f"- {key}: {value!r}"[:500] for key, value in additional_args.items())
        return f"{task}\n\nYou have been given these additional arguments:\n{listing}"
