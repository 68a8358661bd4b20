"""RecordingModel: record a session, save it, play it back with ReplayModel.from_file."""
from __future__ import annotations

import json

import pytest
import yaml

from agents.models import RecordingModel, ReplayModel, load_model
from agents.models.retry import RetryPolicy

SCRIPT = [
    "Thought: first\n```python\nx = 1\nprint(x)\n```",
    {"content": "", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "call_9"}],
     "token_usage": {"input_tokens": 40, "output_tokens": 12}},
    "Thought: done.\n```python\nfinal_answer(3)\n```\n\n  trailing spaces  \n\n",
]
CONVERSATION = [[{"role": "system", "content": "sys"}, {"role": "user", "content": f"step {i}"}] for i in range(3)]


def _replies(model, stream_every_other=True):
    replies = []
    for index, messages in enumerate(CONVERSATION):
        if stream_every_other and index % 2:
            replies.append(list(model.generate_stream(messages, stop_sequences=["Observation:"]))[-1].reply)
        else:
            replies.append(model.generate(messages, stop_sequences=["Observation:"]))
    return replies


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_record_then_replay_gives_identical_replies(tmp_path, suffix):
    recorder = RecordingModel(ReplayModel(SCRIPT, model_id="scripted"))
    original = _replies(recorder)
    path = recorder.save(tmp_path / f"session{suffix}")
    replayed = _replies(ReplayModel.from_file(path))
    assert [(r.content, r.tool_calls, r.token_usage) for r in replayed] == \
           [(r.content, r.tool_calls, r.token_usage) for r in original]
    data = json.loads(path.read_text()) if suffix == ".json" else yaml.safe_load(path.read_text())
    assert data["recorded_with"] == "scripted"
    assert [e["messages"] for e in data["exchanges"]] == CONVERSATION  # what was sent, for inspection
    assert data["exchanges"][0]["stop_sequences"] == ["Observation:"]
    assert load_model(f"replay:{path}").generate(CONVERSATION[0]).content == original[0].content


def test_recording_a_real_http_model_and_autosave(tmp_path, server):
    server.script = [{"type": "reply", "content": "from the server", "usage": (5, 3)},
                     {"type": "reply", "content": "streamed from the server", "usage": (6, 4)}]
    inner = load_model("openai/gpt-4.1-mini", api_base=server.url, api_key="sk-recorder-secret-123",
                       retry=RetryPolicy(max_retries=0))
    path = tmp_path / "live.yaml"
    recorder = RecordingModel(inner, path=path)
    first = recorder.generate(CONVERSATION[0])
    second = list(recorder.generate_stream(CONVERSATION[1]))[-1].reply
    assert path.is_file() and "sk-recorder-secret" not in path.read_text()
    replay = ReplayModel.from_file(path)
    assert replay.generate(CONVERSATION[0]).content == first.content == "from the server"
    again = replay.generate(CONVERSATION[1])
    assert (again.content, again.token_usage) == (second.content, second.token_usage)
    assert recorder.model_id == inner.model_id and recorder.supports_native_tools


def test_recorder_forwards_model_attributes():
    inner = ReplayModel(["hi"], model_id="scripted")
    inner.prompt_style = "tiny"
    recorder = RecordingModel(inner)
    assert recorder.prompt_style == "tiny" and recorder.context_size is None
    assert recorder.count_tokens([{"role": "user", "content": "abcd" * 10}]) == inner.count_tokens(
        [{"role": "user", "content": "abcd" * 10}])


def test_load_model_can_record(tmp_path, monkeypatch):
    script = tmp_path / "script.yaml"
    script.write_text("replies:\n  - recorded answer\n")
    out = tmp_path / "out.json"
    monkeypatch.setenv("AGENTDECK_RECORD", str(tmp_path / "not-here.json"))  # the app's setting, not the library's
    assert not isinstance(load_model(f"replay:{script}"), RecordingModel)
    model = load_model(f"replay:{script}", record_to=str(out))
    assert isinstance(model, RecordingModel)
    model.generate([{"role": "user", "content": "q"}])
    assert ReplayModel.from_file(out).generate([]).content == "recorded answer"
