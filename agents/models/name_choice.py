"""Guided names for local models: where the model starts writing a name from a known list (a column of an
uploaded table, right after `["`), it writes one of those names, and the model's own likelihood chooses which.

Why: a 135M model picks a column from what it knows of similar data (`species` for every penguins question) or
the first plausible one (`temp_max` for "the mean of wind"), even with the question's own word in the prompt;
letting it write the name freely also lets it invent one that does not exist. How the model chooses: for each
name, the prompt is rewritten as if the upload listed that name alone, and the model scores how likely the
person's question is after it (log p(question | name), the "noisy channel" direction). The name under which the
model finds the question most likely wins. Nothing here reads the question: the model's probabilities decide,
and the code it writes around the name, and its answer, are its own. bench/first_message_eval.py measures it.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.models.base import Message


@dataclass(frozen=True)
class NameChoice:
    """What a reply may choose among, and how the model's likelihood is asked.

    `task` is the task text as it stands in the prompt's last message holding it; `variants[name]` is that
    text as if only `name` were listed; `evidence` is the part of the task whose likelihood is measured (the
    person's message). `opener` matches the end of a reply at the point where a name starts (its group 1 is
    the quote that closes it: the model's next token after the name must start with it).
    """
    names: tuple[str, ...]
    task: str
    variants: dict[str, str]
    evidence: str
    opener: str = r"\[\s*([\"'])$"
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", re.compile(self.opener))


def with_variant(messages: list[Message], choice: NameChoice, name: str) -> list[Message] | None:
    """The messages with the last one holding the task rewritten for `name`; None when no message holds it."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        if isinstance(content, str) and choice.task in content:
            changed = dict(messages[index])
            head, _, tail = content.rpartition(choice.task)
            changed["content"] = head + choice.variants[name] + tail
            return [*messages[:index], changed, *messages[index + 1:]]
    return None


def score_names(model: Any, tokenizer: Any, render: Callable[[list[Message]], str], messages: list[Message],
                choice: NameChoice, known: tuple[list[int], Any] | None = None) -> dict[str, float]:
    """log p(evidence | the prompt listing only that name), per name.

    The prompt before the first difference between the variants is computed once; `known` (token ids and a
    model cache over them, such as the reply's own prompt) saves computing what it shares with that prefix.
    Names whose variant prompt cannot be built (the task is not in the messages) are left out."""
    import torch

    texts: dict[str, tuple[str, int]] = {}  # name -> (rendered prompt, where the evidence starts)
    for name in choice.names:
        variant = with_variant(messages, choice, name)
        if variant is None:
            continue
        rendered = render(variant)
        end = rendered.rfind(choice.variants[name]) + len(choice.variants[name])
        start = rendered.rfind(choice.evidence, 0, end)
        if start < 0:
            continue
        texts[name] = (rendered, start)
    if not texts:
        return {}
    shared_text = _common_prefix([rendered[:start] for rendered, start in texts.values()])
    shared_ids, cache = _shared_cache(model, tokenizer, shared_text, known)
    shared = tokenizer.decode(shared_ids[:-1]) if len(shared_ids) > 1 else ""
    if not shared_text.startswith(shared):  # a token cut a character: score every prompt whole
        shared, cache = "", None
    # Each name's input starts with the last shared token, so its own logits score the first evidence token.
    scores: dict[str, float] = {}
    for name, (rendered, start) in texts.items():
        middle = rendered[len(shared):start]
        before = tokenizer(middle, add_special_tokens=False)["input_ids"]
        both = tokenizer(middle + choice.evidence, add_special_tokens=False)["input_ids"]
        if both[:len(before)] != before:  # the boundary merged tokens: score the evidence on its own
            both = before + tokenizer(choice.evidence, add_special_tokens=False)["input_ids"]
        if len(both) == len(before) or not before:
            continue
        with torch.inference_mode():
            logits = model(torch.tensor([both], device=model.device),
                           past_key_values=copy.deepcopy(cache) if cache is not None else None,
                           use_cache=True).logits[0].float().log_softmax(-1)
        scores[name] = sum(float(logits[position - 1, both[position]]) for position in range(len(before), len(both)))
    return scores


def _shared_cache(model: Any, tokenizer: Any, text: str, known: tuple[list[int], Any] | None) -> tuple[list[int], Any]:
    """Token ids of (a prefix of) `text` and a cache over all but their last token, taken from `known` when it
    covers them (a copy cut to length: the caller's cache is not changed), else computed."""
    import torch

    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if known is not None:
        known_ids, known_cache = known
        same = 0
        while same < min(len(ids), len(known_ids)) and ids[same] == known_ids[same]:
            same += 1
        same -= 1  # the last common token may be merged differently once the text goes on
        if same > 1 and text.startswith(tokenizer.decode(known_ids[:same])):
            cache = copy.deepcopy(known_cache)
            cache.crop(same - 1 - cache.get_seq_length())  # negative: tokens removed from the end
            return list(known_ids[:same]), cache
    if len(ids) < 2:
        return ids, None
    with torch.inference_mode():
        cache = model(torch.tensor([ids[:-1]], device=model.device), use_cache=True).past_key_values
    return ids, cache


def _common_prefix(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


class StageStreamer:
    """Relays one reply made of several `generate` calls to one streamer: every call after the first sends its
    whole input again (skipped here) and ends the stream (held until `finish`)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self._skip_next = inner, False

    def next_stage(self) -> None:
        self._skip_next = True

    def put(self, value: Any) -> None:
        if self._skip_next:
            self._skip_next = False
            return
        self.inner.put(value)

    def end(self) -> None:
        """A stage ended; the reply goes on (`finish` ends it)."""

    def finish(self) -> None:
        self.inner.end()


__all__ = ["NameChoice", "StageStreamer", "score_names", "with_variant"]
