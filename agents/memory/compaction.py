"""Compaction: keep the prompt under the agent's context budget by folding older steps into a summary.

How it works
- Budget: `context_budget` (tokens) given to the agent, else the model's `context_size` minus a reserve for
  the reply (`reply_reserve`), else 32,000 (the app passes its AGENTDECK_CONTEXT_BUDGET as `context_budget`).
- Cheap check: `Compactor.prompt_tokens` keeps a running total of the prompt's tokens. The prompt list is
  append-only, so each check counts only the messages added since the last one (with `model.count_tokens`,
  which uses the model's tokenizer when it has one). A new list (reset, compaction, load) is counted once.
- When the prompt about to be sent is over the budget, the older steps are folded into a `SummaryStep`
  written by the model from the `compaction.*` templates (common.yaml). Kept verbatim: the system prompt,
  every history and task step, the latest plan, the last `keep_last_steps` action steps and the relevant
  errors (errors after the last successful action step, at most `max_errors_kept`). If the kept part is
  too big for the target, fewer last steps are kept (down to one).
- The summary call goes straight to `model.generate` (no streaming, no ModelOutput events); it is not an
  action step; its token usage is recorded on the SummaryStep. If it fails or comes back empty, a
  deterministic summary (`fallback_summary`) lists the folded steps with shortened observations.
- Veto contract: before the SummaryStep is installed, the compactor hands it to its `review` callback. The
  agent loop's review (agents/loop/step_runner.py) checks for Stop, then calls the agent's step callbacks
  with it (`step_callbacks.fire(summary_step, agent)`: callbacks for every step and those registered for
  "summary"/SummaryStep). If any callback returns exactly `False`, the compaction is vetoed: nothing is
  installed, no event is emitted, and the compactor does not try again until the prompt has grown by a
  further quarter of the budget. Any other return value (None, True, ...) lets it through.
- Installing: the SummaryStep is appended to `memory.steps` (every folded step stays there and in the saved
  document); the prompt is rebuilt by `prompt_from_steps` (memory.py), which lays out the steps around the
  latest SummaryStep (its `kept_steps` say which earlier steps stay verbatim). The compactor returns a
  `Compaction`, from which the loop emits a `MemoryCompacted` event: the token counts before and after, the
  number of steps folded, the budget and the summary's source.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.errors import ConfigurationError
from agents.memory.memory import AgentMemory, latest_summary
from agents.memory.steps import ActionStep, MemoryStep, PlanningStep, SummaryStep
from agents.models.base import Message, Model, TokenUsage, message_text
from agents.prompts import render

DEFAULT_CONTEXT_BUDGET = 32_000
#: The first line of the summary request's system message; `is_summary_request` looks for it.
SUMMARY_MARKER = "You are compacting the working memory of an AI agent."
CHARS_PER_TOKEN = 4


def reply_reserve(context_size: int) -> int:
    """Tokens left free for the model's reply when the budget comes from the model's context size."""
    return min(4096, max(256, context_size // 8))


def default_budget(model: Any) -> int:
    """The budget when none is given: the model's context size minus the reply reserve, else 32,000."""
    size = getattr(model, "context_size", None)
    if isinstance(size, int) and size > 0:
        return max(256, size - reply_reserve(size))
    return DEFAULT_CONTEXT_BUDGET


def is_summary_request(messages: Sequence[Message]) -> bool:
    """True when `messages` is a compaction summary request (lets scripted models answer it themselves)."""
    return bool(messages) and SUMMARY_MARKER in message_text(messages[0])


def _prompt_step_indices(steps: Sequence[MemoryStep], end: int) -> list[int]:
    """Indices (< end) of the steps whose messages are in the current prompt."""
    latest = latest_summary(steps[:end])
    if latest is None:
        return [i for i in range(end) if steps[i].messages]
    last, summary = latest
    kept = set(summary.kept_steps)
    return [i for i in range(end) if steps[i].messages and (i in kept or i >= last)]


def choose_kept_steps(steps: Sequence[MemoryStep], keep_last: int, max_errors: int) -> set[int]:
    """Indices of the steps kept verbatim: history, tasks, latest plan, last action steps, relevant errors."""
    kept = {i for i, s in enumerate(steps) if s.step_type in ("history", "task")}
    plans = [i for i, s in enumerate(steps) if isinstance(s, PlanningStep)]
    if plans:
        kept.add(plans[-1])
    actions = [i for i, s in enumerate(steps) if isinstance(s, ActionStep)]
    errors = {i for i, s in enumerate(steps) if isinstance(s, ActionStep) and s.error}
    if keep_last > 0:
        kept.update(actions[-keep_last:])
    pending_errors: list[int] = []  # errors not followed by a successful action step
    for index in actions:
        if index in errors:
            pending_errors.append(index)
        else:
            pending_errors.clear()
    if max_errors > 0:
        kept.update(pending_errors[-max_errors:])
    return kept


def _shorten(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 30)].rstrip() + f" … [{len(text) - limit + 30} chars cut]"


def _step_label(step: MemoryStep) -> str:
    if isinstance(step, ActionStep):
        return f"Step {step.step_number}"
    if isinstance(step, PlanningStep):
        return f"Plan (step {step.step_number})"
    return step.step_type.replace("_", " ").capitalize()


def fallback_summary(steps: Sequence[MemoryStep], previous_summary: str, max_chars: int,
                     observation_chars: int = 300) -> str:
    """A deterministic summary: one line per folded step, observations and errors shortened."""
    lines: list[str] = []
    for step in steps:
        if isinstance(step, ActionStep):
            parts = [f"{_step_label(step)}:"]
            if step.code:
                first = next((ln.strip() for ln in step.code.splitlines() if ln.strip()), "")
                extra = len([ln for ln in step.code.splitlines() if ln.strip()]) - 1
                parts.append(f"ran `{_shorten(first, 120)}`" + (f" (+{extra} lines)" if extra > 0 else ""))
            if step.tool_calls:
                parts.append("called " + ", ".join(sorted({c.name for c in step.tool_calls})))
            if step.error:
                parts.append("-> error: " + _shorten(" ".join(step.error.split()), observation_chars))
            elif step.observations:
                parts.append("-> " + _shorten(" ".join(step.observations.split()), observation_chars))
            lines.append(" ".join(parts))
        elif isinstance(step, PlanningStep):
            lines.append(f"{_step_label(step)}: " + _shorten(" ".join(step.plan.split()), observation_chars))
    head = "Summary of even earlier steps: " + _shorten(" ".join(previous_summary.split()), max_chars // 3) \
        if previous_summary else ""
    budget = max_chars - len(head)
    kept_lines: list[str] = []
    used = 0
    for line in reversed(lines):  # the most recent steps matter most
        if used + len(line) + 1 > budget and kept_lines:
            kept_lines.append(f"... ({len(lines) - len(kept_lines)} older steps omitted)")
            break
        kept_lines.append(_shorten(line, budget))
        used += len(line) + 1
    body = "\n".join(reversed(kept_lines))
    return (head + "\n" + body).strip() if head else body


@dataclass
class Compaction:
    """What one compaction did: the installed summary step, and the figures the loop's MemoryCompacted event carries."""

    step: SummaryStep
    steps_folded: int
    budget: int


#: Called with the summary step before it is installed; returning False vetoes it. The agent loop's review
#: checks for Stop and asks the step callbacks (see the veto contract above).
SummaryReview = Callable[[SummaryStep], bool]


@dataclass
class Compactor:
    """Keeps a memory's prompt under the context budget. One per agent (it tracks the prompt's size).

    It takes narrow inputs: the memory, the model that counts tokens and writes the summary, the prompt
    templates, and a review callback; it knows nothing of the agent loop.
    """

    context_budget: int | None = None
    enabled: bool = True
    keep_last_steps: int = 3
    max_errors_kept: int = 5
    #: After compaction, aim for at most this share of the budget (so compaction does not run every step).
    target_ratio: float = 0.6
    #: The summary may take at most this share of the budget.
    summary_ratio: float = 0.15
    #: In the fallback summary, each folded observation is cut to this many characters.
    observation_chars: int = 300
    # running state
    compactions: int = field(default=0, init=False)
    vetoes: int = field(default=0, init=False)
    _tracked: list[Message] | None = field(default=None, init=False, repr=False)
    _tracked_model: Any = field(default=None, init=False, repr=False)
    _tracked_length: int = field(default=0, init=False, repr=False)
    _tracked_tokens: int = field(default=0, init=False, repr=False)
    _retry_above: int = field(default=0, init=False, repr=False)

    # -- sizes -----------------------------------------------------------------------------------
    def budget(self, model: Model) -> int:
        return int(self.context_budget) if self.context_budget else default_budget(model)

    def prompt_tokens(self, memory: AgentMemory, model: Model) -> int:
        """Tokens of `memory.messages`, counting only what was appended since the last call."""
        messages = memory.messages
        if messages is not self._tracked or model is not self._tracked_model or len(messages) < self._tracked_length:
            self._tracked, self._tracked_model, self._tracked_length, self._tracked_tokens = messages, model, 0, 0
        if len(messages) > self._tracked_length:
            self._tracked_tokens += model.count_tokens(list(messages[self._tracked_length:]))
            self._tracked_length = len(messages)
        return self._tracked_tokens

    # -- the check run before each model call ---------------------------------------------------
    def maybe_compact(self, memory: AgentMemory, model: Model, templates: dict[str, Any],
                      review: SummaryReview) -> Compaction | None:
        """Compact when the prompt about to be sent is over the budget; cheap otherwise."""
        if not self.enabled:
            return None
        tokens = self.prompt_tokens(memory, model)
        budget = self.budget(model)
        if tokens <= budget or tokens <= self._retry_above:
            return None
        return self.compact(memory, model, templates, review, tokens_before=tokens)

    def compact(self, memory: AgentMemory, model: Model, templates: dict[str, Any], review: SummaryReview,
                tokens_before: int | None = None) -> Compaction | None:
        """Fold older steps into a summary now. Returns what was installed, or None (nothing to fold, or vetoed)."""
        steps = memory.steps
        end = len(steps)
        budget = self.budget(model)
        tokens_before = self.prompt_tokens(memory, model) if tokens_before is None else tokens_before
        summary_tokens = max(48, int(budget * self.summary_ratio))
        target = int(budget * self.target_ratio)
        count = model.count_tokens
        in_prompt = _prompt_step_indices(steps, end)
        base_tokens = count(list(memory.system_prompt.messages)) + summary_tokens + 16
        step_tokens: dict[int, int] = {}

        def size(kept: set[int]) -> int:
            total = base_tokens
            for index in kept:
                if index not in step_tokens:
                    step_tokens[index] = count(list(steps[index].messages)) if steps[index].messages else 0
                total += step_tokens[index]
            return total

        keep_last = max(1, self.keep_last_steps)
        kept = choose_kept_steps(steps, keep_last, self.max_errors_kept)
        while keep_last > 1 and size(kept) > target:
            keep_last -= 1
            kept = choose_kept_steps(steps, keep_last, self.max_errors_kept)
        folded = [i for i in in_prompt if i not in kept]
        folded_real = [i for i in folded if not isinstance(steps[i], SummaryStep)]
        if not folded_real:
            self._retry_above = tokens_before + budget // 4  # nothing left to fold: don't retry every step
            return None
        previous = next((s for s in (steps[i] for i in reversed(folded)) if isinstance(s, SummaryStep)), None)
        previous_text = previous.summary if previous is not None else ""
        previous_count = previous.folded_steps if previous is not None else 0
        folded_steps = [steps[i] for i in folded_real]

        summary_text, usage, source = self._write_summary(memory, model, templates, folded_steps, previous_text,
                                                          summary_tokens, budget)
        total_folded = previous_count + sum(1 for s in folded_steps if isinstance(s, (ActionStep, PlanningStep)))
        step = SummaryStep(summary=summary_text, folded_steps=total_folded, kept_steps=sorted(kept),
                           source=source, tokens_before=tokens_before, token_usage=usage, budget=budget,
                           newly_folded=len(folded_steps))
        step.messages = [{"role": "user", "content": render(templates, "compaction.summary_message",
                                                            summary=summary_text, folded_steps=total_folded)}]
        if not review(step):
            self.vetoes += 1
            self._retry_above = tokens_before + budget // 4
            return None
        steps.append(step)
        memory.rebuild_prompt()
        step.tokens_after = self.prompt_tokens(memory, model)
        self._retry_above = 0
        self.compactions += 1
        return Compaction(step=step, steps_folded=len(folded_steps), budget=budget)

    # -- the summary -----------------------------------------------------------------------------
    def summary_request(self, memory: AgentMemory, templates: dict[str, Any], folded: Sequence[MemoryStep],
                        previous_summary: str, summary_tokens: int, budget: int) -> list[Message]:
        max_chars = max(2_000, int(budget * CHARS_PER_TOKEN * 0.6))
        transcript = _transcript(folded, max_chars)
        max_words = max(30, summary_tokens * 3 // 4)
        return [
            {"role": "system", "content": render(templates, "compaction.system", max_words=max_words)},
            {"role": "user", "content": render(templates, "compaction.request",
                                               task=_shorten(memory.last_task(), 2_000),
                                               previous_summary=previous_summary, transcript=transcript)},
        ]

    def _write_summary(self, memory: AgentMemory, model: Model, templates: dict[str, Any],
                       folded: Sequence[MemoryStep], previous_summary: str, summary_tokens: int,
                       budget: int) -> tuple[str, TokenUsage, str]:
        max_chars = summary_tokens * CHARS_PER_TOKEN
        messages = self.summary_request(memory, templates, folded, previous_summary, summary_tokens, budget)
        try:
            reply = model.generate(messages)
            text, usage = (reply.content or "").strip(), reply.token_usage
        except Exception:  # any model failure: the deterministic fallback keeps the run going
            text, usage = "", TokenUsage()
        if text:
            return _shorten(text, max_chars), usage, "model"
        intro = render(templates, "compaction.fallback_intro")
        body = fallback_summary(folded, previous_summary, max_chars - len(intro) - 1, self.observation_chars)
        return intro + "\n" + body, usage, "fallback"


def _transcript(steps: Sequence[MemoryStep], max_chars: int) -> str:
    """The folded steps as text for the summary request, cut to `max_chars` (older parts first)."""
    blocks: list[str] = []
    messages_total = sum(len(s.messages) for s in steps) or 1
    per_message = max(300, max_chars // messages_total)
    for step in steps:
        lines = [f"[{_step_label(step)}]"]
        for message in step.messages:
            lines.append(f"{message.get('role', 'user')}: {_shorten(message_text(message), per_message)}")
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    if len(text) > max_chars:
        text = "[earlier part cut]\n" + text[-max_chars:]
    return text


def make_compactor(context_budget: int | None = None, compaction: Any = None) -> Compactor:
    """Build an agent's Compactor from its `context_budget` and `compaction` arguments.

    `compaction` is None (defaults), False (never compact), a dict of Compactor settings, or a Compactor.
    """
    if context_budget is not None and (not isinstance(context_budget, int) or context_budget < 64):
        raise ConfigurationError(
            "context_budget must be a number of tokens (at least 64), or None for the model's default.")
    if isinstance(compaction, Compactor):
        if context_budget is not None:
            compaction.context_budget = context_budget
        return compaction
    if compaction is False:
        return Compactor(context_budget=context_budget, enabled=False)
    if compaction is None or compaction is True:
        return Compactor(context_budget=context_budget)
    if isinstance(compaction, dict):
        return Compactor(context_budget=context_budget, **compaction)
    raise ConfigurationError("compaction must be None, False, a dict of settings or a Compactor.")
