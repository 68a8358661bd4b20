"""The README's examples of sharing agents and tools run as written, against the loopback Hub stand-in (the
default endpoint here) and a local Gradio app standing in for the Space (its id replaced by the app's URL)."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import gradio as gr

from tests.agents.hub_standin import HubStandIn, point_huggingface_hub_at

README = Path(__file__).resolve().parents[2] / "README.md"


def _examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Sharing agents and tools", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def _run(code: str, folder: Path, monkeypatch) -> dict:
    """Run the example from a file (the tools' source is read from it, as from any file of yours)."""
    monkeypatch.chdir(folder)
    path = folder / "readme_example.py"
    path.write_text(code, encoding="utf-8")
    return runpy.run_path(str(path), run_name="readme_example")


def test_the_readme_has_the_two_sharing_examples():
    assert len(_examples()) == 2


def test_the_agent_and_tool_example_runs_against_the_hub_stand_in(tmp_path, monkeypatch):
    with HubStandIn() as hub:
        point_huggingface_hub_at(hub, monkeypatch, tmp_path)
        names = _run(_examples()[0], tmp_path, monkeypatch)
        assert sorted(hub.repos) == ["your-name/lookup-price", "your-name/price-agent"]
    assert (tmp_path / "price_agent" / "tools" / "lookup_price" / "tool.py").is_file()
    assert names["same"].max_steps == 4 and names["shared"].max_steps == 8
    assert names["shared"].tools["lookup_price"](item="apple") == 0.5
    for agent in ("agent", "same", "shared"):
        names[agent].close()


def test_the_space_example_runs_against_a_local_gradio_app(tmp_path, monkeypatch, capsys):
    def repeat(text: str, times: float = 2, shout: bool = False) -> str:
        return (" ".join([text] * int(times))).upper() if shout else " ".join([text] * int(times))

    demo = gr.Interface(repeat, inputs=[gr.Textbox(label="text"), gr.Number(label="times", value=2),
                                        gr.Checkbox(label="shout")], outputs=gr.Textbox(label="result"))
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        example = _examples()[1]
        names = _run(example.replace('"your-name/repeat-space"', repr(url)), tmp_path, monkeypatch)
        printed = capsys.readouterr().out.strip().splitlines()
    finally:
        demo.close()
    promised = example.split("# ", 1)[1].strip()
    assert printed[-1] == promised
    assert names["repeat"].requires_approval


