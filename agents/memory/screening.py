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
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str) and note not in content:
                message["content"] = note + "\n" + content
            elif isinstance(content, list) and content and isinstance(content[0], dict) \
                    and content[0].get("type") == "text" and note not in str(content[0].get("text", "")):
                content[0] = {**content[0], "text": note + "\n" + str(content[0].get("text", ""))}  # with images
            break
    if flagged:
        memory.rebuild_prompt()
    return flagged
