"""The embedded SmolLM2-135M default model: conversion cache, tiny prompt, and the real agent loop."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from agents.models import gguf_cache
from agents.prompts import load_prompt_templates, render
from agents.prompts.profiles import example_messages

TASK = "What is 17 * 23?"


class StubTool:
    name = "get_weather"
    description = "Weather of a city.\nReturns a sentence."

    def signature_text(self) -> str:
        return "get_weather(city: string) -> string"


class StubAgent:
    name = "researcher"
    description = "Searches the web."


def test_tiny_prompt_renders_with_strict_variables():
    templates = load_prompt_templates("code_agent_tiny")
    text = render(templates, "system_prompt", tools=[StubTool()], managed_agents=[StubAgent()],
                  authorized_imports=["math"], custom_instructions="Answer in French.")
    assert "get_weather(city: string) -> string" in text and "researcher" in text
    assert "final_answer(<expression>)" in text and "Answer in French." in text and "math" in text
    examples = example_messages(templates, ["math"])
    assert {"role": "assistant", "content": "```python\nfinal_answer(5 + 7)\n```"} in examples
    preamble = render(templates, "code_preamble", authorized_imports=["math", "pandas"])
    assert preamble == "import math\nimport pandas as pd"
    assert render(templates, "parse_error")
    assert render(templates, "execution_observation", logs="", has_output=True, output="3") .endswith("3")


def test_conversion_is_safe_when_two_converters_race(tmp_path, monkeypatch):
    """Both callers get the same complete folder; nothing half-written or temporary is left behind."""
    from agents.host_settings import HostSettings

    monkeypatch.setattr("agents.host_settings._current", HostSettings(cache_dir=str(tmp_path / "cache")))
    source = tmp_path / "model.gguf"
    source.write_bytes(os.urandom(4096))
    writes = []

    def fake_write(gguf_path: Path, target: Path) -> None:
        writes.append(target)
        target.mkdir(parents=True)
        time.sleep(0.2)
        (target / "model.safetensors").write_text("weights")

    monkeypatch.setattr(gguf_cache, "_write_converted", fake_write)
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(gguf_cache.convert_gguf(source))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2 and results[0] == results[1]
    assert len(writes) == 1  # the second waited for the first instead of converting again
    folder = results[0]
    assert (folder / gguf_cache.MARKER).is_file() and (folder / "model.safetensors").read_text() == "weights"
    assert sorted(p.name for p in folder.parent.iterdir() if not p.name.endswith(".lock")) == [folder.name]


@pytest.fixture(scope="module")
def embedded_model():
    from agents.models import load_model

    started = time.perf_counter()
    model = load_model("embedded")
    print(f"\nembedded model loaded in {time.perf_counter() - started:.1f}s")
    return model


@pytest.mark.slow
@pytest.mark.embedded
def test_embedded_model_answers_arithmetic_with_a_code_block(embedded_model):
    assert embedded_model.model_id == "embedded:smollm2"
    assert embedded_model.prompt_style == "tiny" and embedded_model.context_size == 8192
    templates = load_prompt_templates("code_agent_tiny")
    system = render(templates, "system_prompt", tools=[], managed_agents=[],
                    authorized_imports=["math"], custom_instructions="")
    messages = [{"role": "system", "content": system}, *example_messages(templates, ["math"]),
                {"role": "user", "content": f"New task:\n{TASK}"}]
    options = {"stop_sequences": ["Observation:", "Calling tools:"], "response_prefix": templates["response_prefix"]}
    started = time.perf_counter()
    reply = embedded_model.generate(messages, **options)
    print(f"generation took {time.perf_counter() - started:.1f}s: {reply.content!r}")
    assert reply.content.strip() == "```python\nfinal_answer(17 * 23)\n```"
    streamed = list(embedded_model.generate_stream(messages, **options))
    assert "".join(d.content for d in streamed) == reply.content  # greedy: repeatable


@pytest.mark.slow
@pytest.mark.embedded
def test_code_agent_on_the_embedded_model(embedded_model):
    pytest.importorskip("agents.loop.code_agent")
    from agents import CodeAgent
    from agents.models import load_model

    agent = CodeAgent(tools=[], model=load_model("embedded"), max_steps=3)  # shares the loaded weights
    try:
        assert agent.run(TASK) == 391
    finally:
        agent.close()
