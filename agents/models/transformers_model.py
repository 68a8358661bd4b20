"""TransformersModel: a local chat model (hub id, local folder or GGUF file) run with transformers.

Why the care: several sessions may generate at once from one loaded model, so every call builds its
own streamer, stopping criteria and generation config (transformers_params.py); only the read-only weights
are shared (transformers_loading.py, which also never waits on the network for a cached model). Guided names
are written by transformers_guided.py.
"""
from __future__ import annotations

import itertools
import queue
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agents.errors import ContextWindowExceededError, ModelError
from agents.models.base import Message, Model, ModelDelta, ModelReply, TokenUsage, apply_stop_sequences
from agents.models.chat_messages import render_prompt
from agents.models.name_choice import NameChoice
from agents.models.streaming import EndCutter, StopFilter
from agents.models.transformers_guided import generate_guided
from agents.models.transformers_loading import LoadRequest, load_shared, pick_device, pick_dtype, resolve_source
from agents.models.transformers_params import GenerationDefaults, generation_params
from agents.models.transformers_structured import generate_structured, string_fields


class TransformersModel(Model):
    """A chat model run locally. `model_id` is a hub repo id, a local folder, or a .gguf file path
    (GGUF files are converted once into a cached folder, see gguf_cache.py).

    `response_prefix` is written at the start of every reply (the model continues from it; a call may pass
    its own), and `end_patterns` end a reply right after their first match; both help very small models.
    """

    supports_response_prefix = True
    #: A JSON-schema `response_format` of string fields is written by guided decoding (transformers_structured.py).
    supports_structured_output = True

    def __init__(self, model_id: str, *, gguf_file: str | None = None, device: str | None = None,
                 dtype: Any = None, max_new_tokens: int = 1024, do_sample: bool = False,
                 temperature: float | None = None, local_files_only: bool | None = None,
                 trust_remote_code: bool = False, revision: str | None = None, response_prefix: str = "",
                 end_patterns: list[str | re.Pattern[str]] | None = None) -> None:
        if model_id.startswith("transformers:"):
            model_id = model_id[len("transformers:"):]
        self.model_id = model_id
        self.max_new_tokens = max_new_tokens
        self.do_sample = do_sample
        self.temperature = temperature
        self.response_prefix = response_prefix
        self.end_patterns = [re.compile(p, re.DOTALL) if isinstance(p, str) else p for p in end_patterns or []]
        self.device = pick_device(device)
        self.dtype = pick_dtype(self.device, dtype)
        source, gguf_name, is_local = resolve_source(model_id, gguf_file)
        self._loaded = load_shared(LoadRequest(source, gguf_name, is_local, self.device, self.dtype,
                                               local_files_only, trust_remote_code, revision))
        config = self._loaded.model.config
        text_config = getattr(config, "text_config", None) or config
        self.context_size = getattr(text_config, "max_position_embeddings", None) or None

    # --- prompting ---------------------------------------------------------------------------
    def _encode(self, messages: list[Message], prefix: str | None = None) -> Any:
        prefix = self.response_prefix if prefix is None else prefix
        tokenizer = self._loaded.tokenizer
        with self._loaded.tokenizer_lock:
            if not getattr(tokenizer, "chat_template", None):
                return tokenizer(self._render(messages) + prefix, return_tensors="pt")
            # The template already holds any special tokens it wants.
            return tokenizer(self._render(messages) + prefix, return_tensors="pt", add_special_tokens=False)

    def _render(self, messages: list[Message], generation_prompt: bool = True) -> str:
        """The prompt as text: the tokenizer's chat template, or plain turns for a model without one."""
        return render_prompt(self._loaded.tokenizer, messages, generation_prompt)

    def count_tokens(self, messages: list[Message]) -> int:
        return int(self._encode(messages)["input_ids"].shape[-1])

    def _generation_kwargs(self, inputs: Any, stop_sequences: list[str] | None, kwargs: dict[str, Any],
                           cancel: threading.Event | None = None, prefix: str = "") -> dict[str, Any]:
        defaults = GenerationDefaults(self.max_new_tokens, self.do_sample, self.temperature, self.end_patterns)
        return generation_params(self._loaded, defaults, inputs, stop_sequences, kwargs, cancel, prefix)

    def _run(self, params: dict[str, Any], choice: NameChoice | None = None, messages: list[Message] | None = None,
             prefix: str = "") -> Any:
        import torch

        with torch.inference_mode():
            if choice is None or not choice.names:
                return self._loaded.model.generate(**params)
            return generate_guided(self._loaded, params, choice, messages or [], prefix,
                                   lambda m: self._render(m, False))

    # --- generation --------------------------------------------------------------------------
    def generate(self, messages: list[Message], stop_sequences: list[str] | None = None,
                 tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> ModelReply:
        kwargs = dict(kwargs)
        response_format = kwargs.pop("response_format", None)
        if response_format is not None:
            return self._structured(messages, response_format, kwargs, lambda piece: None, None)
        prefix = str(kwargs.pop("response_prefix", None) or self.response_prefix)
        choice = kwargs.pop("name_choice", None)
        inputs = self._encode(messages, prefix)
        params = self._generation_kwargs(inputs, stop_sequences, kwargs, prefix=prefix)
        prompt_length = int(params["input_ids"].shape[-1])
        self._check_context(prompt_length)
        output = self._run(params, choice, messages, prefix)
        new_tokens = output[0][prompt_length:]
        text = prefix + self._loaded.tokenizer.decode(new_tokens, skip_special_tokens=True)
        text = EndCutter(self.end_patterns).cut(apply_stop_sequences(text, stop_sequences))
        return ModelReply(content=text,
                          token_usage=TokenUsage(prompt_length, int(new_tokens.shape[-1])))

    def generate_stream(self, messages: list[Message], stop_sequences: list[str] | None = None,
                        tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> Iterator[ModelDelta]:
        from transformers import TextIteratorStreamer

        kwargs = dict(kwargs)
        response_format = kwargs.pop("response_format", None)
        if response_format is not None:
            yield from self._structured_stream(messages, response_format, kwargs)
            return
        prefix = str(kwargs.pop("response_prefix", None) or self.response_prefix)
        choice = kwargs.pop("name_choice", None)
        inputs = self._encode(messages, prefix)
        cancel = threading.Event()
        params = self._generation_kwargs(inputs, stop_sequences, kwargs, cancel, prefix=prefix)
        prompt_length = int(params["input_ids"].shape[-1])
        self._check_context(prompt_length)
        streamer = TextIteratorStreamer(self._loaded.tokenizer, skip_prompt=True, skip_special_tokens=True)
        params["streamer"] = streamer
        result: dict[str, Any] = {}

        def work() -> None:
            try:
                result["output"] = self._run(params, choice, messages, prefix)
            except BaseException as exc:
                result["error"] = exc
                streamer.end()

        worker = threading.Thread(target=work, name="agentdeck-generate", daemon=True)
        worker.start()
        stop_filter, cutter = StopFilter(list(stop_sequences or [])), EndCutter(self.end_patterns)
        shown_parts: list[str] = []
        try:
            for piece in itertools.chain([prefix], streamer):
                shown = cutter.feed(stop_filter.feed(piece))
                if shown:
                    shown_parts.append(shown)
                    yield ModelDelta(content=shown)
        finally:
            cancel.set()  # ends generation soon if the caller stopped early (e.g. the run was interrupted)
            worker.join()
        if "error" in result:
            raise ModelError(f"Local generation with '{self.model_id}' failed: {result['error']}") from result["error"]
        tail = cutter.feed(stop_filter.flush())
        if tail:
            shown_parts.append(tail)
            yield ModelDelta(content=tail)
        output_tokens = int(result["output"][0].shape[-1]) - prompt_length
        yield ModelDelta(reply=ModelReply(content="".join(shown_parts),
                                          token_usage=TokenUsage(prompt_length, output_tokens)))

    # --- structured output ---------------------------------------------------------------------
    def _structured(self, messages: list[Message], response_format: Any, kwargs: dict[str, Any],
                    on_text: Callable[[str], None], cancel: threading.Event | None) -> ModelReply:
        """A reply that is the response format's JSON object, by guided decoding (no prefix, no stop strings)."""
        fields = string_fields(response_format)
        kwargs.pop("response_prefix", None)
        kwargs.pop("name_choice", None)
        params = self._generation_kwargs(self._encode(messages, ""), None, kwargs)
        prompt_length = int(params["input_ids"].shape[-1])
        self._check_context(prompt_length)
        text, used = generate_structured(self._loaded, params, fields, on_text, cancel)
        return ModelReply(content=text, token_usage=TokenUsage(prompt_length, used))

    def _structured_stream(self, messages: list[Message], response_format: Any,
                           kwargs: dict[str, Any]) -> Iterator[ModelDelta]:
        """The structured reply in pieces (each fixed part, each field's body), generated in a helper thread."""
        pieces: queue.Queue[str | None] = queue.Queue()
        cancel = threading.Event()
        result: dict[str, Any] = {}

        def work() -> None:
            try:
                result["reply"] = self._structured(messages, response_format, kwargs, pieces.put, cancel)
            except BaseException as exc:
                result["error"] = exc
            finally:
                pieces.put(None)

        worker = threading.Thread(target=work, name="agentdeck-generate-structured", daemon=True)
        worker.start()
        try:
            while (piece := pieces.get()) is not None:
                if piece:
                    yield ModelDelta(content=piece)
        finally:
            cancel.set()
            worker.join()
        if "error" in result:
            error = result["error"]
            if isinstance(error, ModelError):
                raise error
            raise ModelError(f"Local generation with '{self.model_id}' failed: {error}") from error
        yield ModelDelta(reply=result["reply"])

    def _check_context(self, prompt_length: int) -> None:
        if self.context_size and prompt_length >= self.context_size:
            raise ContextWindowExceededError(
                f"The prompt has {prompt_length} tokens and '{self.model_id}' accepts {self.context_size}. "
                "Lower max_steps, shorten the task or tool outputs, or pick a model with a larger context."
            )


__all__ = ["TransformersModel"]
