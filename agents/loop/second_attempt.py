"""A second, independent attempt at a run's question, to confirm a small model's plain answer
(agents/answer_checks/agreement.py says when and how it is compared).

Independent: the model is sent the system prompt, its examples and the run's task only (no step of the first
attempt, no earlier answer), and a model that takes call options samples (`second_attempt_temperature` of the
prompt file) where the first attempt decoded greedily. Cheap: at most `max_calls` model calls (a call that gives
no answer is followed by one fresh call, never by a retry that sees it), each reply's code run once. The code
runs in the run's own sandbox (so the uploads are there); it is not shown as a step, and its value is not kept.

It is announced and reported as typed events (`SecondAttemptStarted`, `SecondAttemptFinished`), so the chat can
say why the answer takes longer, and logs and traces show what the second attempt gave.
"""
from __future__ import annotations

import time
from typing import Any, Protocol

from agents.answer_checks.agreement import Attempt, agrees
from agents.decisions import DecisionKind
from agents.errors import AgentInterrupted
from agents.events import SecondAttemptFinished, SecondAttemptStarted
from agents.loop.context import RunContext
from agents.loop.model_reader import ModelStreamReader
from agents.loop.parsing import extract_code
from agents.loop.structured_code import StructuredReplyError, parse_code_step
from agents.models.base import Message, ModelReply
from agents.prompts import render
from agents.prompts.profiles import name_choice_for

#: Model calls a second attempt may make: one, and one more when the first gave no answer.
DEFAULT_MAX_CALLS = 2


class AttemptingAgent(Protocol):
    """What a second attempt needs of its CodeAgent."""

    model: Any
    memory: Any
    prompt_templates: Any
    runner: Any
    stop_sequences: list[str]
    structured: bool
    _interrupt_flag: Any

    @property
    def sandbox(self) -> Any: ...

    def step_options(self, options: dict[str, Any]) -> dict[str, Any]: ...

    def code_preamble(self) -> str: ...


def may_attempt(run: RunContext | None) -> bool:
    """Whether a second attempt may run code without asking: not when the person reviews code before it runs
    (its code would run unseen), and not for a run without a context (nothing to report it to)."""
    if run is None:
        return False
    return not run.broker.policy.needs_decision(DecisionKind.CODE)


def second_attempt(agent: AttemptingAgent, run: RunContext, task_message: Message, task: str, answer: Any,
                   max_calls: int = DEFAULT_MAX_CALLS) -> Attempt:
    """Ask the model afresh, run its code, and report it as events; the attempt (its value or why none)."""
    fields = run.event_fields()
    run.emit(SecondAttemptStarted(**fields, answer=answer))
    started = time.perf_counter()
    attempt, code, calls = Attempt(answered=False, error="no attempt"), "", 0
    try:
        for _ in range(max(1, max_calls)):
            calls += 1
            attempt, code = _one_call(agent, run, task_message, task)
            if attempt.answered:
                break
    except AgentInterrupted:
        attempt = Attempt(answered=False, error="stopped", stopped=True)
    run.emit(SecondAttemptFinished(**fields, answered=attempt.answered, value=attempt.value,
                                   agrees=attempt.answered and agrees(answer, attempt.value), error=attempt.error,
                                   code=code, model_calls=calls, duration_s=round(time.perf_counter() - started, 3)))
    return attempt


def _one_call(agent: AttemptingAgent, run: RunContext, task_message: Message, task: str) -> tuple[Attempt, str]:
    """One fresh model call and its code run: (the attempt, the code it ran)."""
    messages = [*agent.memory.system_prompt.messages, task_message]
    reply = _reply(agent, run, messages, _options(agent, task))
    code = _code(agent, reply.content)
    if code is None:
        return Attempt(answered=False, error="no code"), ""
    preamble = agent.code_preamble()
    if preamble:
        code = f"{preamble}\n{code}"
    run.check_interrupt()
    result = agent.sandbox.run(code, cancel=agent._interrupt_flag, tools=agent.runner.as_callables(None))
    if run.interrupt_flag.is_set():
        raise AgentInterrupted("The run was stopped by the user during the second attempt.")
    if result.error or not result.is_final_answer:
        return Attempt(answered=False, error=result.error_type or "it gave no answer", code=code), code
    return Attempt(answered=True, value=result.output, code=code), code


def _options(agent: AttemptingAgent, task: str) -> dict[str, Any]:
    """The call's options as a step's (the reply prefix, the column choice), sampled: a model that takes options
    (a local one) decodes its first attempt greedily, and the same prompt decoded greedily again would only repeat
    it. Other models are sent the prompt alone (they sample by default)."""
    model, templates = agent.model, agent.prompt_templates
    options: dict[str, Any] = {}
    if getattr(model, "supports_response_prefix", False):
        prefix = templates.get("response_prefix")
        if prefix:
            options["response_prefix"] = str(prefix)
        choice = name_choice_for(templates, task)
        if choice is not None:
            options["name_choice"] = choice
        options.update(do_sample=True, temperature=float(templates.get("second_attempt_temperature") or 0.7))
    return agent.step_options(options)


def _reply(agent: AttemptingAgent, run: RunContext, messages: list[Message], options: dict[str, Any]) -> ModelReply:
    """The model's whole reply, read so that Stop takes effect within a fraction of a second."""
    stops = agent.stop_sequences or None
    reader = ModelStreamReader(lambda: agent.model.generate_stream(messages, stop_sequences=stops, **options),
                               name="model-second-attempt")
    reply: ModelReply | None = None
    pieces: list[str] = []
    try:
        for delta in reader.deltas(run.interrupt_flag.is_set):
            if delta.retry is not None and delta.retry.discarded_text:
                pieces.clear()
            if delta.content:
                pieces.append(delta.content)
            if delta.reply is not None:
                reply = delta.reply
    finally:
        reader.close()
    return reply if reply is not None else ModelReply(content="".join(pieces))


def _code(agent: AttemptingAgent, text: str) -> str | None:
    if not agent.structured:
        return extract_code(text)
    try:
        return parse_code_step(text).code
    except StructuredReplyError:
        return None


def task_message_of(agent: AttemptingAgent, run_id: str, task: str) -> Message:
    """The run's task message as its first step was sent it (its TaskStep's), else the task written afresh."""
    for step in reversed(agent.memory.steps):
        if getattr(step, "run_id", None) == run_id and getattr(step, "messages", None) and hasattr(step, "task"):
            return dict(step.messages[0])
    return {"role": "user", "content": render(agent.prompt_templates, "task", task=task)}
