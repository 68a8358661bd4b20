"""One call's generation parameters for a local transformers model: its own config and stopping criteria.

Why: several sessions may generate at once from one loaded model, so every call gets a copy of the model's
generation config with the call's settings, and a stopping criterion of its own (stop strings, end
patterns, the caller's cancel flag); only the read-only weights are shared.
"""
from __future__ import annotations

import copy
import re
import threading
from dataclasses import dataclass
from typing import Any

from agents.models.transformers_loading import LoadedModel


@dataclass(frozen=True)
class GenerationDefaults:
    """The model's own settings, used where a call does not give its own."""
    max_new_tokens: int
    do_sample: bool
    temperature: float | None
    end_patterns: list[re.Pattern[str]]


class _StopOnText:
    """Stops generation once the new text holds a stop string or matches an end pattern (one per call)."""

    def __init__(self, tokenizer: Any, prompt_length: int, stop_sequences: list[str],
                 end_patterns: list[re.Pattern[str]], prefix: str = "",
                 cancel: threading.Event | None = None) -> None:
        self.tokenizer, self.prompt_length, self.prefix, self.cancel = tokenizer, prompt_length, prefix, cancel
        self.stop_sequences = [s for s in stop_sequences if s]
        self.end_patterns = end_patterns
        self.window = max((len(s) for s in self.stop_sequences), default=0) + 8

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        if self.cancel is not None and self.cancel.is_set():  # the caller stopped reading the stream
            return torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        done = []
        for row in input_ids:
            new = row[self.prompt_length:]
            tail = self.tokenizer.decode(new[-self.window:], skip_special_tokens=False) if self.stop_sequences else ""
            hit = any(stop in tail for stop in self.stop_sequences)
            if not hit and self.end_patterns:
                text = self.prefix + self.tokenizer.decode(new, skip_special_tokens=True)
                hit = any(pattern.search(text) for pattern in self.end_patterns)
            done.append(hit)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def generation_params(loaded: LoadedModel, defaults: GenerationDefaults, inputs: Any,
                      stop_sequences: list[str] | None, kwargs: dict[str, Any],
                      cancel: threading.Event | None = None, prefix: str = "") -> dict[str, Any]:
    """The keyword arguments of `generate` for the encoded prompt `inputs`; takes the settings out of `kwargs`."""
    from transformers import StoppingCriteriaList

    model, tokenizer = loaded.model, loaded.tokenizer
    config = copy.deepcopy(model.generation_config)  # per call: nothing shared between sessions
    config.max_new_tokens = int(kwargs.pop("max_new_tokens", kwargs.pop("max_tokens", defaults.max_new_tokens)))
    config.do_sample = bool(kwargs.pop("do_sample", defaults.do_sample))
    temperature = kwargs.pop("temperature", defaults.temperature)
    if config.do_sample:
        config.temperature = temperature if temperature is not None else config.temperature
    else:
        config.temperature, config.top_p, config.top_k = None, None, None
    if config.pad_token_id is None:
        pad = tokenizer.pad_token_id
        config.pad_token_id = pad if pad is not None else tokenizer.eos_token_id
    params = {key: value.to(model.device) for key, value in inputs.items()}
    params["generation_config"] = config
    if stop_sequences or defaults.end_patterns or cancel is not None:
        criterion = _StopOnText(tokenizer, params["input_ids"].shape[-1], list(stop_sequences or []),
                                defaults.end_patterns, prefix, cancel)
        params["stopping_criteria"] = StoppingCriteriaList([criterion])
    kwargs.pop("tools", None)
    params.update(kwargs)
    return params
