"""Compaction: a 200-step ReplayModel run under a 2,000-token context budget.

Prints the size of the last prompt (must stay under the budget) and the largest prompt of the run, the
tokens and characters sent over the whole run (the summary requests included), the characters sent so far
at 50/100/150/200 steps, and how much the last 50 steps cost compared with the first 50: about 1x when
growth is linear, about 7x when it is quadratic (the run without compaction, printed below for reference).
Reference from the issue: 7.9 million characters over 200 trivial steps without compaction.

Setup, as in bench/agent_loop.py: a CodeAgent whose sandbox is a stub that returns at once, and a
ReplayModel script of trivial steps. The script holds the agent's replies only; summary requests (the
compaction call, recognised by its system prompt: `is_summary_request`) are answered by the wrapper below
with a short summary it writes from the request it received, so every byte the agent sends is counted.
"""
from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import CodeAgent, ReplayModel
from agents.events import MemoryCompacted
from agents.memory.compaction import is_summary_request
from agents.models.base import ModelReply, message_text
from bench.instant_sandbox import InstantSandbox

STEPS = 200
BUDGET = 2_000


class SummarizingReplay(ReplayModel):
    """Plays the agent's script; answers summary requests itself and logs the size of every call."""

    def __init__(self, replies, **kwargs) -> None:
        super().__init__(replies, **kwargs)
        self.log: list[tuple[str, int, int]] = []  # (kind, characters, tokens) per call, in order

    def _measure(self, kind: str, messages) -> None:
        self.log.append((kind, sum(len(message_text(m)) for m in messages), self.count_tokens(list(messages))))

    def generate(self, messages, stop_sequences=None, tools=None, **kwargs):
        if is_summary_request(messages):
            self._measure("summary", messages)
            request = message_text(messages[-1])
            printed = re.findall(r"Execution logs:\s*\n(\d+)", request)
            last = printed[-1] if printed else "nothing yet"
            text = (f"The agent has been counting up by one in variable x, one step at a time, printing it each step. "
                    f"The last value printed in these steps was {last}. No errors. "
                    "Next: keep counting, then final_answer(x).")
            return ModelReply(content=text)
        return super().generate(messages, stop_sequences, tools, **kwargs)

    def generate_stream(self, messages, stop_sequences=None, tools=None, **kwargs):
        self._measure("agent", messages)
        yield from super().generate_stream(messages, stop_sequences, tools, **kwargs)


def run(compaction: bool) -> dict:
    replies = ["Thought: increment.\n```python\nx = x + 1\nprint(x)\n```"] * (STEPS - 1)
    replies.append("Thought: done.\n```python\nfinal_answer(x)\n```")
    model = SummarizingReplay(replies, chunk_size=64)
    with tempfile.TemporaryDirectory() as workdir:
        agent = CodeAgent(tools=[], model=model, max_steps=STEPS, workdir=workdir, verbosity=0,
                          context_budget=BUDGET if compaction else None, compaction=None if compaction else False)
        agent._sandbox = InstantSandbox()
        started = time.perf_counter()
        events = list(agent.run("Count up.", stream=True))
        elapsed = time.perf_counter() - started
    assert events[-1].state == "success" and events[-1].output == STEPS - 1, events[-1]
    sent_at: dict[int, int] = {}
    chars = tokens = agent_calls = 0
    for kind, call_chars, call_tokens in model.log:
        chars += call_chars
        tokens += call_tokens
        if kind == "agent":
            agent_calls += 1
            sent_at[agent_calls] = chars
    agent_prompts = [entry for entry in model.log if entry[0] == "agent"]
    return {
        "last_prompt_tokens": agent_prompts[-1][2], "last_prompt_chars": agent_prompts[-1][1],
        "max_prompt_tokens": max(t for _, _, t in agent_prompts),
        "chars": chars, "tokens": tokens, "sent_at": sent_at, "seconds": elapsed,
        "summary_calls": sum(1 for kind, _, _ in model.log if kind == "summary"),
        "compactions": sum(1 for e in events if isinstance(e, MemoryCompacted)),
    }


def report(name: str, result: dict) -> None:
    sent = result["sent_at"]
    first50, last50 = sent[50], sent[200] - sent[150]
    print(f"\n{name}")
    print(f"  last prompt: {result['last_prompt_tokens']:,} tokens ({result['last_prompt_chars']:,} chars); "
          f"largest prompt: {result['max_prompt_tokens']:,} tokens")
    print(f"  sent over the run: {result['tokens']:,} tokens, {result['chars']:,} characters "
          f"({result['summary_calls']} summary calls, {result['compactions']} compactions), {result['seconds']:.2f} s")
    print("  characters sent so far: " + ", ".join(f"{k} steps: {sent[k]:,}" for k in (50, 100, 150, 200)))
    print(f"  last 50 steps cost {last50 / first50:.2f}x the first 50 (linear ~1x, quadratic ~7x)")


def main() -> None:
    compacted = run(compaction=True)
    report(f"With compaction, budget {BUDGET:,} tokens", compacted)
    ok = compacted["max_prompt_tokens"] <= BUDGET
    print(f"  every prompt under the budget: {'yes' if ok else 'NO'}")
    report("Without compaction (reference; the issue measured 7.9 million characters)", run(compaction=False))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
