"""A tool's image (web_browser's screenshot) shows in the chat for the ToolCallingAgent too, through the typed
events only: saved in the agent's workdir and announced as an ArtifactCreated, the chat (ui.chat.render) shows it
inline, and a saved chat replayed from its memory shows the same picture at the same place."""
from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

from PIL import Image

from agents import ReplayModel, ToolCallingAgent, tool
from agents import events as ev
from agents.memory.serialize import dumps_memory, loads_memory
from agents.models.images import TextAndImage, to_image
from agents.step_events import replay, replayable
from tests.agents.conftest import call
from ui.chat.render import Transcript

SECRET = b"tool-images-secret-0123456789abc"


def jpeg_bytes(color: str = "blue") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buffer, format="JPEG")
    return buffer.getvalue()


SHOT = jpeg_bytes()


@tool
def look(url: str) -> Any:
    """Open a page and look at it.

    Args:
        url: The page.
    """
    return TextAndImage(text=f"The page {url} says hello.", image=to_image(SHOT))


@tool
def chart(kind: str) -> Any:
    """Draw a chart.

    Args:
        kind: Which chart.
    """
    return Image.new("RGB", (5, 5), "red")


def first_action(agent: ToolCallingAgent) -> Any:
    return next(s for s in agent.memory.steps if getattr(s, "step_number", 0) == 1 and hasattr(s, "observations"))


def comparable(event: ev.Event) -> tuple[str, dict[str, Any]]:
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    fields.pop("timestamp")
    return type(event).__name__, fields


def inline_images(events: list[ev.Event]) -> list[dict[str, Any]]:
    transcript = Transcript()
    for event in events:
        transcript.apply(event)
    return [m["content"] for m in transcript.messages() if isinstance(m["content"], dict)]


def run_agent(tmp_path: Path, replies: list[str], **kwargs: Any) -> tuple[ToolCallingAgent, list[ev.Event]]:
    agent = ToolCallingAgent(tools=[look, chart], model=ReplayModel(replies, **kwargs), workdir=tmp_path,
                             verbosity=0)
    return agent, list(agent.run("Look at the page and draw.", stream=True))


def test_a_tools_screenshot_shows_in_the_chat_and_again_when_the_chat_is_reopened(tmp_path: Path) -> None:
    agent, live = run_agent(tmp_path, [call("look", url="http://example.test/"), call("chart", kind="bar"),
                                       call("final_answer", answer="done")])
    assert live[-1].state == "success"
    created = [e for e in live if isinstance(e, ev.ArtifactCreated)]
    assert [(e.step, e.artifact_kind) for e in created] == [(1, "image"), (2, "image")]
    assert created[0].relative_path.startswith("tool-image-") and created[0].relative_path.endswith(".jpg")
    assert created[1].relative_path.endswith(".png")
    assert Path(created[0].path).read_bytes() == SHOT  # the screenshot as the tool took it
    assert Path(created[0].path).parent == tmp_path
    # the picture comes after the step's tool call, before its observation (where a replay puts it)
    step_one = [type(e).__name__ for e in live if e.step == 1 and not isinstance(e, ev.ModelTextDelta)]
    assert step_one.index("ToolCallResult") < step_one.index("ArtifactCreated") < step_one.index("Observation")

    shown = inline_images(live)
    assert shown == [{"path": e.path, "alt_text": e.relative_path} for e in created]

    memory = loads_memory(dumps_memory(agent.memory, SECRET), SECRET)
    again = [event for _, events in replay(memory.steps, tmp_path) for event in events]
    assert [comparable(e) for e in again] == [comparable(e) for e in replayable(live)]
    assert inline_images(again) == shown


def test_a_text_only_model_still_shows_the_screenshot_to_the_person(tmp_path: Path) -> None:
    agent, live = run_agent(tmp_path, [call("look", url="http://example.test/"), call("final_answer", answer="ok")],
                            supports_images=False)
    assert len(inline_images(live)) == 1
    assert "which this model cannot see" in first_action(agent).observations


def test_without_a_workdir_the_agent_keeps_its_images_in_a_folder_of_its_own_until_closed() -> None:
    agent = ToolCallingAgent(tools=[look], model=ReplayModel([call("look", url="http://example.test/"),
                                                              call("final_answer", answer="ok")]), verbosity=0)
    created = [e for e in agent.run("Look.", stream=True) if isinstance(e, ev.ArtifactCreated)]
    assert len(created) == 1 and Path(created[0].path).read_bytes() == SHOT
    folder = Path(created[0].path).parent
    agent.close()
    assert not folder.exists()


def test_an_image_the_tool_returns_that_is_not_an_image_is_neither_saved_nor_shown(tmp_path: Path) -> None:
    @tool
    def fake(url: str) -> Any:
        """Return something dressed as an image.

        Args:
            url: Anything.
        """
        from agents.models.images import ImageData
        return TextAndImage(text="page", image=ImageData(b"<svg onload=alert(1)>", "image/png", 1, 1))

    model = ReplayModel([call("fake", url="x"), call("final_answer", answer="ok")])
    agent = ToolCallingAgent(tools=[fake], model=model, workdir=tmp_path, verbosity=0)
    live = list(agent.run("Look.", stream=True))
    assert not [e for e in live if isinstance(e, ev.ArtifactCreated)] and list(tmp_path.iterdir()) == []
    assert "not shown to you" in first_action(agent).observations
