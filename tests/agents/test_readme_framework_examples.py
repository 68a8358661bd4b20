"""The README's framework examples for images and structured code steps run as written, with the hosted model
they name replaced by a scripted ReplayModel (no network here): the test checks what that model was given."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

import agents.models
from agents import ReplayModel
from agents.loop.structured_code import CODE_STEP_FORMAT

README = Path(__file__).resolve().parents[2] / "README.md"


def example(heading: str) -> str:
    """The one Python example under `heading` (up to the next heading)."""
    section = README.read_text(encoding="utf-8").split(heading + "\n", 1)[1]
    section = re.split(r"\n#{2,3} ", section, maxsplit=1)[0]
    found = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(found) == 1, f"expected one example under {heading!r}, found {len(found)}"
    return found[0]


def run_with(model: ReplayModel, code: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    def scripted(name: str, **_: object) -> ReplayModel:
        asked.append(name)
        return model

    monkeypatch.setattr(agents.models, "load_model", scripted)
    monkeypatch.chdir(folder)
    path = folder / "readme_example.py"
    path.write_text(code, encoding="utf-8")
    runpy.run_path(str(path), run_name="readme_example")
    return asked


def test_the_images_example_gives_the_picture_to_the_model(tmp_path, monkeypatch, capsys):
    model = ReplayModel(["Thought: it is red.\n```python\nfinal_answer('red')\n```"])
    asked = run_with(model, example("### Images and vision models"), tmp_path, monkeypatch)
    assert asked == ["openai/gpt-4o-mini"]
    assert capsys.readouterr().out.strip().splitlines()[-1] == "red"
    parts = model.calls[0][-1]["content"]
    images = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,")
    assert any("What colour is this picture?" in p.get("text", "") for p in parts)


def test_the_structured_code_example_asks_for_the_object_and_runs_its_code(tmp_path, monkeypatch, capsys):
    model = ReplayModel(['{"thought": "Multiply.", "code": "final_answer(6 * 7)"}'])
    asked = run_with(model, example("### Structured code steps"), tmp_path, monkeypatch)
    assert asked == ["openai/gpt-4.1-mini"]
    assert capsys.readouterr().out.strip().splitlines()[-1] == "42"
    assert model.call_options[0]["response_format"] == CODE_STEP_FORMAT


def test_the_model_example_runs_a_task_then_streams_a_follow_up(tmp_path, monkeypatch, capsys):
    model = ReplayModel(["```python\nfinal_answer(6765)\n```", "```python\nx = 832040\nprint(x)\n```",
                         "```python\nfinal_answer(x)\n```"])
    asked = run_with(model, _only_example_after("## Choosing a model"), tmp_path, monkeypatch)
    assert asked == ["openai/gpt-4.1-mini"]
    printed = capsys.readouterr().out.strip().splitlines()
    assert "6765" in printed  # the first answer (the console renderer shows the first run's steps around it)
    kinds = printed[printed.index("6765") + 1:]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and "final_answer" in kinds
    assert len(model.calls) == 3  # the follow-up went on in the same memory: its first prompt holds the first task
    assert any("20th Fibonacci" in str(m["content"]) for m in model.calls[1])


def test_the_approval_example_edits_then_approves(tmp_path, monkeypatch):
    code = _only_example_after("## Human in the loop")
    model = ReplayModel(["```python\nprint('risky')\n```", "```python\nfinal_answer('done')\n```"])
    monkeypatch.chdir(tmp_path)
    names = runpy.run_path(_write(tmp_path, code + "\nresult = agent.run('Do it.', return_result=True)\n"
                                  "agent.close()\n"), init_globals={"model": model})
    steps = [s for s in names["result"].steps if hasattr(s, "logs")]
    assert names["result"].output == "done"
    assert "safer code" in steps[0].logs and "risky" not in steps[0].logs  # the edited code ran, not the proposal


def _write(folder: Path, code: str) -> str:
    path = folder / "readme_example.py"
    path.write_text(code, encoding="utf-8")
    return str(path)


def _only_example_after(heading: str) -> str:
    """The first Python example under `heading` (sections here have one framework example each)."""
    section = README.read_text(encoding="utf-8").split(heading + "\n", 1)[1]
    section = re.split(r"\n## ", section, maxsplit=1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]


def test_the_tools_example_defines_a_tool_the_agent_can_call(tmp_path, monkeypatch):
    """The `@tool` example under "## Tools": its docstring becomes the tool's description and typed input, and a
    code agent given it calls it."""
    from agents import CodeAgent, Tool

    monkeypatch.chdir(tmp_path)
    names = runpy.run_path(_write(tmp_path, _only_example_after("## Tools")))
    price = names["lookup_price"]
    assert isinstance(price, Tool) and price.name == "lookup_price"
    assert price.description.startswith("Look up the price of an item.")
    assert price.inputs["item"]["type"] == "string" and price.output_type == "number"
    model = ReplayModel(["```python\nfinal_answer(lookup_price(item='apple') * 4)\n```"])
    agent = CodeAgent(tools=[price], model=model, workdir=tmp_path / "ws", verbosity=0)
    try:
        assert agent.run("Four apples?") == 2.0
    finally:
        agent.close()
