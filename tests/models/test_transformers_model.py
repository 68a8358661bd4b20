"""TransformersModel on a tiny Llama built and overfit offline (see conftest.TINY_SCRIPTS)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tiny_llm import TINY_SCRIPTS

from agents.errors import ModelNotFoundError
from agents.models import TransformersModel, load_model

(ADD_TASK, ADD_REPLY), (HELLO_TASK, HELLO_REPLY) = TINY_SCRIPTS


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


pytestmark = pytest.mark.slow  # loads a (tiny) local model: the transformers path runs in `make test`

@pytest.fixture(scope="module")
def model(tiny_model_dir: Path) -> TransformersModel:
    return load_model(f"transformers:{tiny_model_dir}")


def test_generate_follows_the_learned_script(model):
    reply = model.generate(ask(ADD_TASK))
    assert reply.content == ADD_REPLY
    assert reply.token_usage.input_tokens == model.count_tokens(ask(ADD_TASK))
    assert 0 < reply.token_usage.output_tokens <= 40
    assert model.generate(ask(HELLO_TASK)).content == HELLO_REPLY


def test_stream_pieces_join_to_the_reply(model):
    deltas = list(model.generate_stream(ask(ADD_TASK)))
    pieces = [d.content for d in deltas if d.content]
    assert len(pieces) > 3 and "".join(pieces) == ADD_REPLY
    assert deltas[-1].reply.content == ADD_REPLY
    assert deltas[-1].reply.token_usage.output_tokens > 0


def test_stop_strings_end_generation_early(model):
    full = model.generate(ask(ADD_TASK))
    stopped = model.generate(ask(ADD_TASK), stop_sequences=["Observation:"])
    expected = ADD_REPLY.split("Observation:")[0]
    assert stopped.content == expected
    assert stopped.token_usage.output_tokens < full.token_usage.output_tokens  # it really stopped
    streamed = list(model.generate_stream(ask(ADD_TASK), stop_sequences=["Observation:"]))
    assert "".join(d.content for d in streamed) == expected == streamed[-1].reply.content


def test_token_counts_use_the_tokenizer(model):
    short, long = ask("Hi"), ask("Hi " * 50)
    assert model.count_tokens(long) > model.count_tokens(short) > 0
    assert model.context_size == 256


def test_two_sessions_generating_at_once(model):
    results: dict[str, list[str]] = {ADD_TASK: [], HELLO_TASK: []}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def session(task: str) -> None:
        try:
            barrier.wait()
            for _ in range(2):
                results[task].append("".join(d.content for d in model.generate_stream(ask(task))))
                results[task].append(model.generate(ask(task)).content)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(task,)) for task in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert results[ADD_TASK] == [ADD_REPLY] * 4
    assert results[HELLO_TASK] == [HELLO_REPLY] * 4


def test_response_prefix_and_end_patterns(tiny_model_dir):
    model = TransformersModel(str(tiny_model_dir), response_prefix="", end_patterns=[r"```python\n.*?\n```"])
    expected = ADD_REPLY[: ADD_REPLY.index("```\n") + 3]
    assert model.generate(ask(ADD_TASK)).content == expected
    assert "".join(d.content for d in model.generate_stream(ask(ADD_TASK))) == expected


def test_missing_models_fail_fast_with_clear_errors(tmp_path):
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE"):  # not cached, offline: no network, no hang
        TransformersModel("agentdeck-test/does-not-exist")
    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(ModelNotFoundError, match="no model weights"):
        TransformersModel(str(empty))
    with pytest.raises(ModelNotFoundError, match="No model folder"):
        TransformersModel(str(tmp_path / "missing" / "folder"))


def test_abandoned_stream_stops_generation(model):
    import time

    stream = model.generate_stream(ask(ADD_TASK))
    next(stream)
    started = time.perf_counter()
    stream.close()  # the consumer goes away: the worker thread must end, not run to max_new_tokens
    assert time.perf_counter() - started < 5
    assert not [t for t in threading.enumerate() if t.name == "agentdeck-generate" and t.is_alive()]
