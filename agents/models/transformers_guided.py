"""Guided names with a local transformers model: the generation loop that writes a chosen name where one starts.

Why: name_choice.py says how the model's likelihood picks a name among known ones; this is how the reply
gets it. Generation stops where a name starts (`NameChoice.opener`), the preferred name is written, the
model's next token must close it, and generation goes on from the model's cache.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from agents.models.base import Message
from agents.models.name_choice import NameChoice, StageStreamer, score_names
from agents.models.transformers_loading import LoadedModel

logger = logging.getLogger("agents.models")

#: A reply chooses at most this many names (a model looping on `["` cannot make generation endless).
_MAX_NAMES_PER_REPLY = 4


class _AtPattern:
    """A stopping criterion: the reply so far (prefix included) ends where `pattern` matches (a name starts)."""

    def __init__(self, tokenizer: Any, prompt_length: int, prefix: str, pattern: re.Pattern[str]) -> None:
        self.tokenizer, self.prompt_length, self.prefix, self.pattern = tokenizer, prompt_length, prefix, pattern

    def match(self, row: Any) -> str | None:
        """The opener's group 1 (the quote that will close the name) when the reply ends at a name's start."""
        found = self.pattern.search(self.prefix + self.tokenizer.decode(row[self.prompt_length:],
                                                                        skip_special_tokens=True))
        return None if found is None else (found.group(1) if found.groups() else "")

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        return torch.tensor([self.match(row) is not None for row in input_ids], dtype=torch.bool,
                            device=input_ids.device)


class _OnlyAt:
    """A logits processor: at one position of the sequence, only the given tokens may come."""

    def __init__(self, position: int, allowed: Any) -> None:
        self.position, self.allowed = position, allowed

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if input_ids.shape[-1] != self.position or not len(self.allowed):
            return scores
        kept = scores.new_full(scores.shape, float("-inf"))
        allowed = self.allowed.to(scores.device)
        kept[:, allowed] = scores[:, allowed]
        return kept


def generate_guided(loaded: LoadedModel, params: dict[str, Any], choice: NameChoice, messages: list[Message],
                    prefix: str, render: Callable[[list[Message]], str]) -> Any:
    """Generate, stopping where a name starts (`choice.opener`); there write the name the model's likelihood
    prefers among `choice.names` (see name_choice.py, which scores prompts made by `render`), then let the
    model go on from its cache. Returns the token sequences, prompt included."""
    import torch
    from transformers import LogitsProcessorList, StoppingCriteriaList

    model, tokenizer = loaded.model, loaded.tokenizer
    prompt_length = int(params["input_ids"].shape[-1])
    at_name = _AtPattern(tokenizer, prompt_length, prefix, choice.pattern)
    params["stopping_criteria"] = StoppingCriteriaList([*(params.get("stopping_criteria") or []), at_name])
    streamer = StageStreamer(params.pop("streamer")) if params.get("streamer") is not None else None
    config = params["generation_config"]
    config.return_dict_in_generate = True  # the cache, to go on after a name
    budget, scores, sequences = int(config.max_new_tokens), None, params["input_ids"]
    try:
        for _ in range(_MAX_NAMES_PER_REPLY + 1):
            out = model.generate(**params, streamer=streamer)
            sequences = out.sequences
            used = int(sequences.shape[-1]) - prompt_length
            quote = at_name.match(sequences[0])
            if quote is None or used >= budget:
                break
            if scores is None:
                with loaded.tokenizer_lock:
                    covered = int(out.past_key_values.get_seq_length())  # the prompt, computed once
                    scores = score_names(model, tokenizer, render, messages, choice,
                                         known=(sequences[0][:covered].tolist(), out.past_key_values))
            if not scores:
                break
            name = max(scores, key=lambda n: scores[n])
            logger.debug("guided name %r among %s", name, scores)
            with loaded.tokenizer_lock:  # the name; the model's next token must close it (its own way)
                written = tokenizer(name, add_special_tokens=False)["input_ids"]
                closing = loaded.tokens_starting_with(quote)
            extra = torch.tensor([written], dtype=sequences.dtype, device=sequences.device)
            if streamer is not None:
                streamer.inner.put(extra)
                streamer.next_stage()
            sequences = torch.cat([sequences, extra], dim=-1)
            if used + len(written) >= budget:
                break
            config.max_new_tokens = budget - used - len(written)
            params.update(input_ids=sequences, attention_mask=torch.ones_like(sequences),
                          past_key_values=out.past_key_values,
                          logits_processor=LogitsProcessorList([_OnlyAt(int(sequences.shape[-1]), closing)]))
    finally:
        if streamer is not None:
            streamer.finish()
    return sequences
