"""A whole chat whose sandbox host does NOT share the app's disk (issue 27): uploads, a chart the agent writes,
the chat's images and file links, the files panel, the model's pictures, the exports and a reopened chat all
reach the workspace through the host's file operations (ui/session/workspace_access.py).

The host (`ElsewhereHost`, tests/ui/test_workspace_access.py) keeps the workspace in a folder of its own, as a
remote pod would; the app's workspace folder stays empty throughout, so anything the UI read or wrote there
directly would be missing (or would show up in it), and the test fails."""
from __future__ import annotations

import base64
import io
import json
import os
import re
import threading
import wave
import zipfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from test_workspace_access import ElsewhereHost
from ui_testlib import Req

from agents import events as ev
from agents.memory import ActionStep, AgentMemory, FinalAnswerStep, TaskStep
from tools.speech_to_text import SpeechToTextTool
from ui.panels.exports import ChatExports
from ui.session import rewind
from ui.session.chat_record import ChatRecord
from ui.session.workspace_access import HostFiles
from ui.uploads.images import images_for_model

CSV = b"species,mass\nAdelie,3700\nGentoo,5000\n"
TASK = "Plot the uploaded table"


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (2, 2), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


PNG = png_bytes()


def copies_linked(text: str) -> dict[str, bytes]:
    """Each link of an answer (shown name -> the bytes of the published copy it points at)."""
    return {name.replace("\\_", "_"): Path(url.removeprefix("gradio_api/file=")).read_bytes()
            for name, url in re.findall(r"\[`?([^\]`]+)`?\]\((gradio_api/file=[^)]+)\)", text)}


def texts(record: ChatRecord) -> list[str]:
    return [m["content"] for m in record.transcript.messages() if isinstance(m["content"], str)]


def images(record: ChatRecord) -> list[bytes]:
    """The pictures the chat shows (file messages of .png copies), by content."""
    return [Path(m["content"]["path"]).read_bytes() for m in record.transcript.messages()
            if isinstance(m["content"], dict) and str(m["content"].get("path", "")).endswith(".png")]


class Model:
    supports_images = True
    model_id = "vision"


class Agent:
    def __init__(self, memory: AgentMemory) -> None:
        self.model, self.memory = Model(), memory


class Session:
    """What the export handlers read of a session (ui/panels/exports.py)."""

    def __init__(self, record: ChatRecord, memory: AgentMemory) -> None:
        self.lock, self.running, self.record, self.agent = threading.RLock(), False, record, Agent(memory)


class Services:
    def __init__(self, session: Session) -> None:
        self.registry = type("Registry", (), {"peek": staticmethod(lambda key: session if key == "tab" else None)})()
        self.store = None


@pytest.fixture()
def chat(tmp_path: Path):
    remote = tmp_path / "remote"
    remote.mkdir()
    host = ElsewhereHost(remote)
    record = ChatRecord(tmp_path / "session", threading.RLock())
    record.use_host(lambda: host)
    yield record, host, remote
    record.remove_files()


def memory_of_the_run() -> AgentMemory:
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task=TASK, run_id="r1"))
    memory.add_step(ActionStep(step_number=1, run_id="r1", model_output="Thought: plot it.",
                               code="import matplotlib\n# ...\nfig.savefig('chart.png')", logs="saved\n",
                               artifacts=["chart.png"]))
    memory.add_step(FinalAnswerStep(output="Saved chart.png from penguins_2.csv.", run_id="r1"))
    return memory


def test_a_chat_on_a_host_without_the_same_disk(chat, tmp_path: Path) -> None:
    record, host, remote = chat
    assert isinstance(record.files, HostFiles)
    app_workspace = record.workspace
    incoming = tmp_path / "incoming"  # where Gradio keeps an upload
    incoming.mkdir()
    (incoming / "penguins.csv").write_bytes(CSV)
    (incoming / "photo.png").write_bytes(PNG)
    (remote / "penguins.csv").symlink_to("/etc/passwd")  # the code left a link under the upload's name

    # 1. the person's upload goes to the host, exclusively: the link is neither followed nor replaced
    results, _ = record.take_message("Plot my data", [(str(incoming / "penguins.csv"), "penguins.csv"),
                                                      (str(incoming / "photo.png"), "photo.png")], 1 << 20)
    assert [r.error for r in results] == [None, None]
    assert [r.safe_name for r in results] == ["penguins_2.csv", "photo.png"]
    assert (remote / "penguins_2.csv").read_bytes() == CSV and (remote / "photo.png").read_bytes() == PNG
    assert os.readlink(remote / "penguins.csv") == "/etc/passwd"
    record.add_turn(TASK, "Plot my data", results)

    # 2. the model is shown the picture, read back through the host
    pictures, notes = images_for_model(results, Agent(AgentMemory("s")), record.files)
    assert notes == [] and [p.data for p in pictures] == [PNG]

    # 3. the agent's code writes a chart on the host; the chat shows its published copy and links the files
    (remote / "chart.png").write_bytes(PNG)
    record.apply(ev.ArtifactCreated(run_id="r1", step=1, path=str(app_workspace / "chart.png"),
                                    relative_path="chart.png", artifact_kind="image"))
    record.apply(ev.FinalAnswer(run_id="r1", step=1, value=f"Saved chart.png (also {app_workspace}/chart.png) "
                                                           "from penguins_2.csv; not penguins.csv."))
    assert images(record)[-1] == PNG
    answer = next(t for t in texts(record) if t.startswith("Saved"))
    assert copies_linked(answer) == {"chart.png": PNG, "penguins_2.csv": CSV}  # the link is no file: not linked

    # 4. the files panel: every file as the host lists it, each a published copy
    assert sorted(Path(p).read_bytes() for p in record.file_paths()) == sorted([CSV, PNG, PNG])
    assert record.published_bytes > 0

    # 5. the exports read the workspace through the host too
    memory = memory_of_the_run()
    exports = ChatExports(Services(Session(record, memory)))  # type: ignore[arg-type]
    notebook = json.loads(Path(exports.export_notebook(Req("tab"))).read_text())
    embedded = [o["data"]["image/png"] for c in notebook["cells"] for o in c.get("outputs", [])
                if "image/png" in o.get("data", {})]
    assert [base64.b64decode(e) for e in embedded] == [PNG]
    with zipfile.ZipFile(exports.export_bundle(Req("tab"))) as bundle:
        assert bundle.read("chart.png") == PNG and bundle.read("penguins_2.csv") == CSV
        assert bundle.read("photo.png") == PNG and "LEFT-OUT.txt" not in bundle.namelist()
    assert "chart.png" in Path(exports.export_markdown(Req("tab"))).read_text()

    # 6. a tool of the app (speech to text) reads the workspace through the host
    sound = io.BytesIO()
    with wave.open(sound, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\0\0" * 80)
    (remote / "voice.wav").write_bytes(sound.getvalue())
    tool = SpeechToTextTool(model_id=str(tmp_path / "never-loaded")).for_workspace(app_workspace, record.files.read)
    assert tool._read_inside_root(str(app_workspace / "voice.wav")).data == sound.getvalue()

    # 7. deleting from the files panel deletes on the host
    record.remove_file("photo.png")
    assert not (remote / "photo.png").exists()

    assert list(app_workspace.iterdir()) == []  # nothing ever went through the app's own folder


def test_a_saved_chat_reopens_from_the_hosts_files(chat, tmp_path: Path) -> None:
    _, host, remote = chat
    (remote / "penguins_2.csv").write_bytes(CSV)
    (remote / "chart.png").write_bytes(PNG)
    turns = [{"task": TASK, "text": "Plot my data", "uploads": [
        {"name": "penguins_2.csv", "original": "penguins.csv", "size": len(CSV), "kind": "csv", "preview": ""},
        {"name": "gone.csv", "original": "gone.csv", "size": 3, "kind": "csv", "preview": ""}]}]
    reopened = ChatRecord(tmp_path / "reopened", threading.RLock())
    reopened.use_host(lambda: host)
    try:
        assert reopened.reopen(memory_of_the_run(), turns)
        assert [u.safe_name for u in reopened.uploads] == ["penguins_2.csv"]  # a file since deleted is left out
        assert images(reopened) == [PNG]  # the chart, read from the host
        answer = next(t for t in texts(reopened) if t.startswith("Saved"))
        assert copies_linked(answer) == {"chart.png": PNG, "penguins_2.csv": CSV}
        assert [u.safe_name for u in rewind.message_of(turns[0], reopened.files).uploads] == ["penguins_2.csv"]

        (remote / "chart.png").unlink()  # gone from the host: a later reopening shows no chart
        again = ChatRecord(tmp_path / "again", threading.RLock())
        again.use_host(lambda: host)
        again.reopen(memory_of_the_run(), turns)
        assert images(again) == []
        again.remove_files()
        assert list(reopened.workspace.iterdir()) == []
    finally:
        reopened.remove_files()


def test_the_host_refuses_what_the_disk_refuses(chat) -> None:
    record, _, remote = chat
    (remote / "secret.png").symlink_to("/etc/passwd")
    (remote / "sub").symlink_to("/etc")
    record.apply(ev.ArtifactCreated(run_id="r1", step=1, path=str(record.workspace / "secret.png"),
                                    relative_path="secret.png", artifact_kind="image"))
    record.apply(ev.FinalAnswer(run_id="r1", step=1, value="See secret.png and sub/passwd."))
    assert images(record) == []
    answer = next(t for t in texts(record) if t.startswith("See"))
    assert "](" not in answer  # neither name became a link
    files: Any = record.files
    with pytest.raises(FileExistsError):
        files.write("secret.png", b"x", exclusive=True)  # an exclusive write never replaces the link
    assert os.readlink(remote / "secret.png") == "/etc/passwd"


def test_showing_a_hosts_file_again_takes_no_more_room(chat) -> None:
    """A host gives content, not a version: each show reads it again, but the same content is kept once (a chat
    whose files panel refreshes every step would otherwise run out of its share of published copies)."""
    record, _, remote = chat
    (remote / "table.csv").write_bytes(CSV)
    first = record.publish(record.workspace / "table.csv")
    for _ in range(3):
        assert record.publish(record.workspace / "table.csv") == first
    assert record.published_bytes == len(CSV)
    (remote / "table.csv").write_bytes(CSV + b"Chinstrap,3700\n")  # a new version is a new copy
    second = record.publish(record.workspace / "table.csv")
    assert second.digest != first.digest and record.published_bytes == 2 * len(CSV) + 15
    assert Path(second.path).read_bytes().endswith(b"Chinstrap,3700\n")
