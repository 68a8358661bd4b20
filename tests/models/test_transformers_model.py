"""TransformersModel on a tiny Llama built and overfit offline (see conftest.TINY_SCRIPTS)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tiny_llm import TINY_SCRIPTS

from agents.errors import ModelNotFoundError
from agents.models import TransformersModel, load_model
from agents.models.name_choice import NameChoice, score_names

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


def _choice(task: str, names: tuple[str, ...], opener: str) -> NameChoice:
    return NameChoice(names=names, task=task, variants={n: f"{n}: {task}" for n in names}, evidence=task,
                      opener=opener)


def test_a_guided_name_is_one_of_the_names_and_the_models_likelihood_picks_it(model):
    """Where the reply reaches the opener, the adapter writes the name under which the model finds the task most
    likely (score_names), then the model goes on from its cache; streamed and whole replies agree."""
    names = ("zebra", "yak", "walrus")
    choice = _choice(ADD_TASK, names, r"\nresult()$")
    reply = model.generate(ask(ADD_TASK), name_choice=choice).content
    loaded = model._loaded
    scores = score_names(loaded.model, loaded.tokenizer, lambda m: model._render(m, False), ask(ADD_TASK), choice)
    assert set(scores) == set(names) and len(set(scores.values())) == 3
    best = max(scores, key=lambda n: scores[n])
    head = ADD_REPLY[: ADD_REPLY.index("\nresult") + len("\nresult")]
    assert reply.startswith(head + best)  # not the " = 2 + 3" the model learned: only a name may come there
    streamed = list(model.generate_stream(ask(ADD_TASK), name_choice=choice))
    assert "".join(d.content for d in streamed if d.content) == reply == streamed[-1].reply.content
    assert model.generate(ask(ADD_TASK)).content == ADD_REPLY  # without a choice, the learned reply


def test_the_token_after_a_guided_name_closes_its_quote(model):
    """The opener's group is the quote: the model's next token must start with it (its own choice of token)."""
    choice = _choice(HELLO_TASK, ("abc", "xyz"), r"final_answer\((')$")
    reply = model.generate(ask(HELLO_TASK), name_choice=choice).content
    head = "final_answer('"
    assert head in reply
    after = reply[reply.index(head) + len(head):]
    assert after[:3] in ("abc", "xyz") and after[3] == "'"


def test_name_scores_reuse_a_known_prompt_cache_without_changing_it(model):
    """Scoring from the reply's own prompt cache gives the same scores as computing the prompt anew."""
    import torch

    messages = [{"role": "system", "content": "You add small numbers for people. " * 4}, *ask(ADD_TASK)]
    choice = _choice(ADD_TASK, ("zebra", "yak", "walrus"), r"\nresult()$")
    loaded, render = model._loaded, (lambda m: model._render(m, False))
    fresh = score_names(loaded.model, loaded.tokenizer, render, messages, choice)
    ids = model._encode(messages)["input_ids"][0].tolist()
    with torch.inference_mode():
        cache = loaded.model(torch.tensor([ids]), use_cache=True).past_key_values
    reused = score_names(loaded.model, loaded.tokenizer, render, messages, choice, known=(ids, cache))
    assert set(reused) == set(fresh) == {"zebra", "yak", "walrus"}
    assert all(abs(reused[name] - fresh[name]) < 1e-3 for name in fresh)
    assert cache.get_seq_length() == len(ids)  # the caller's cache is left whole
