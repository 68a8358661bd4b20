"""Record a real run's model exchanges, replay the transcript offline, and get the same events."""
from __future__ import annotations

import dataclasses

import pytest

from agents import CodeAgent, ReplayModel, ToolCallingAgent
from agents import events as ev
from agents.models import RecordingModel
from tests.agents.conftest import code

# model_id differs by design: a replayed model says it is a replay of the recorded one.
VOLATILE = {"run_id", "timestamp", "duration_s", "parent_id", "call_id", "request_id", "path", "model_id"}


def _comparable(events: list[ev.Event]) -> list[tuple]:
    """Events without ids, clocks and absolute paths, which differ between any two runs."""
    rows = []
    for event in events:
        fields = {k: v for k, v in dataclasses.asdict(event).items() if k not in VOLATILE}
        rows.append((event.kind, sorted(fields.items(), key=lambda kv: kv[0]).__repr__()))
    return rows


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_code_agent_run_recorded_then_replayed_gives_the_same_events(tmp_path, suffix):
    script = [code("values = [3, 1, 2]\nprint(sorted(values))"), code("final_answer(sum(values))")]
    transcript = tmp_path / f"session.{suffix}"
    recorder = RecordingModel(ReplayModel(script), path=transcript)
    with CodeAgent(tools=[], model=recorder, workdir=tmp_path / "a", verbosity=0) as agent:
        original = list(agent.run("Sum the values.", stream=True))
    assert transcript.exists()

    replay = ReplayModel.from_file(transcript)
    with CodeAgent(tools=[], model=replay, workdir=tmp_path / "b", verbosity=0) as agent:
        replayed = list(agent.run("Sum the values.", stream=True))
    assert original[-1].output == replayed[-1].output == 6
    assert _comparable(original) == _comparable(replayed)


def test_tool_calling_run_with_native_calls_round_trips(tmp_path):
    script = [{"content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": "done"}, "id": "c1"}]}]
    transcript = tmp_path / "native.yaml"
    recorder = RecordingModel(ReplayModel(script), path=transcript)
    original = list(ToolCallingAgent(tools=[], model=recorder, verbosity=0).run("t", stream=True))
    replay = ReplayModel.from_file(transcript)
    replayed = list(ToolCallingAgent(tools=[], model=replay, verbosity=0).run("t", stream=True))
    assert original[-1].output == replayed[-1].output == "done"
    assert _comparable(original) == _comparable(replayed)
