"""Screening a loaded memory for injected instructions (agents/injection.py) before an agent continues it."""
from __future__ import annotations

from typing import Any

from agents.injection import detect_injection, unfence, warning_line
from agents.memory.memory import AgentMemory


def flag_loaded_observations(memory: AgentMemory) -> list[tuple[str, Any]]:
    """Screen the observations of a loaded memory; flagged steps get the warning line in their prompt message.

    Returns (source, finding) pairs, the source naming the step (`memory:step 3`)."""
    flagged: list[tuple[str, Any]] = []
    for step in memory.action_steps():
        text = "\n".join(part for part in (step.observations, step.error or "") if part)
        findings = detect_injection(unfence(text)) if text else []
        if not findings:
            continue
        source = f"memory:step {step.step_number}"
        flagged.extend((source, finding) for finding in findings)
        note = warning_line(source)
        for message in reversed(step.messages):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                if note not in message["content"]:
                    message["content"] = note + "\n" + message["content"]
                break
    if flagged:
        memory.rebuild_prompt()
    return flagged
