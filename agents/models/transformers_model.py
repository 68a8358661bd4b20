"""TransformersModel: a local chat model (hub id, local folder or GGUF file) run with transformers.

Why the care: several sessions may generate at once from one loaded model, so every call builds its
own streamer, stopping criteria and generation config; only the read-only weights are shared. Loading
never waits on the network when HF_HUB_OFFLINE is set or the model is already cached locally.
"""
from __future__ import annotations

import copy
import itertools
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.errors import ContextWindowExceededError, ModelError, ModelNotFoundError
from agents.models.base import Message, Model, ModelDelta, ModelReply, TokenUsage, apply_stop_sequences
from agents.models.chat_messages import plain_prompt, to_text_turns
from agents.models.name_choice import NameChoice, StageStreamer, score_names
from agents.models.streaming import EndCutter, StopFilter

logger = logging.getLogger("agents.models")

_LOADED: dict[tuple[str, str | None, str, str], _Loaded] = {}
_LOAD_LOCK = threading.Lock()


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class _Loaded:
    """A loaded tokenizer and model, shared read-only by every TransformersModel on the same weights."""
    tokenizer: Any
    model: Any
    tokenizer_lock: threading.Lock  # fast tokenizers must not encode from two threads at once
    #: text -> the ids of the tokens whose text starts with it (guided names close their quote with one)
    starting_with: dict[str, Any] = field(default_factory=dict)

    def tokens_starting_with(self, text: str) -> Any:
        import torch

        if text not in self.starting_with:
            pieces = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))])
            self.starting_with[text] = torch.tensor([i for i, piece in enumerate(pieces) if piece.startswith(text)],
                                                    dtype=torch.long)
        return self.starting_with[text]


def pick_device(requested: str | None = None) -> str:
    """AGENTDECK_DEVICE or the argument, else CUDA, then Apple MPS, then CPU."""
    import torch

    requested = requested or os.environ.get("AGENTDECK_DEVICE") or None
    if requested:
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(device: str, requested: Any = None) -> Any:
    """float32 on CPU (fast and exact there), bfloat16/float16 on accelerators."""
    import torch

    if requested is not None and requested != "auto":
        return getattr(torch, requested) if isinstance(requested, str) else requested
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.startswith("mps"):
        return torch.float16
    return torch.float32


def resolve_source(model_id: str, gguf_file: str | None = None) -> tuple[str, str | None, bool]:
    """(folder or repo id, gguf file name, is_local) for a hub id, a local folder or a .gguf path."""
    path = Path(model_id).expanduser()
    if path.is_file() and path.name.endswith(".gguf"):
        return str(path.parent), path.name, True
    if path.is_dir():
        return str(path), gguf_file, True
    if model_id.endswith(".gguf") and model_id.count("/") >= 2 and not model_id.startswith((".", "/", "~")):
        repo, name = model_id.rsplit("/", 1)  # "org/repo/file.gguf" on the hub
        return repo, name, False
    if model_id.startswith((".", "/", "~")) or os.sep in model_id.replace("/", "") or model_id.count("/") > 1:
        raise ModelNotFoundError(f"No model folder or .gguf file at '{model_id}'. Give an existing local path "
                                 f"or a Hugging Face repo id such as 'HuggingFaceTB/SmolLM2-1.7B-Instruct'.")
    return model_id, gguf_file, False


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


#: A reply chooses at most this many names (a model looping on `["` cannot make generation endless).
_MAX_NAMES_PER_REPLY = 4


class TransformersModel(Model):
    """A chat model run locally. `model_id` is a hub repo id, a local folder, or a .gguf file path
    (GGUF files are converted once into a cached folder, see gguf_cache.py).

    `response_prefix` is written at the start of every reply (the model continues from it; a call may pass
    its own), and `end_patterns` end a reply right after their first match; both help very small models.
    """

    supports_response_prefix = True

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
        self._loaded = self._load(source, gguf_name, is_local, local_files_only, trust_remote_code, revision)
        config = self._loaded.model.config
        text_config = getattr(config, "text_config", None) or config
        self.context_size = getattr(text_config, "max_position_embeddings", None) or None

    # --- loading -----------------------------------------------------------------------------
    def _load(self, source: str, gguf_name: str | None, is_local: bool, local_files_only: bool | None,
              trust_remote_code: bool, revision: str | None) -> _Loaded:
        if gguf_name:
            source = self._gguf_folder(source, gguf_name, is_local, local_files_only)
            is_local = True
        key = (source, revision, self.device, str(self.dtype))
        with _LOAD_LOCK:
            if key not in _LOADED:
                _LOADED[key] = self._load_uncached(source, is_local, local_files_only, trust_remote_code, revision)
            return _LOADED[key]

    def _gguf_folder(self, source: str, gguf_name: str, is_local: bool, local_files_only: bool | None) -> str:
        from agents.models.gguf_cache import convert_gguf

        if is_local:
            return str(convert_gguf(Path(source) / gguf_name))
        from huggingface_hub import hf_hub_download

        offline = hub_offline() if local_files_only is None else local_files_only
        try:
            path = hf_hub_download(source, gguf_name, local_files_only=True)
        except Exception:
            if offline:
                raise self._missing(source, gguf_name) from None
            try:
                path = hf_hub_download(source, gguf_name)
            except Exception as exc:
                raise self._missing(source, gguf_name, exc) from exc
        return str(convert_gguf(path))

    def _missing(self, repo: str, filename: str | None = None, exc: BaseException | None = None) -> ModelNotFoundError:
        why = f" ({type(exc).__name__}: {str(exc)[:200]})" if exc else ""
        command = f"hf download {repo}" + (f" {filename}" if filename else "")
        return ModelNotFoundError(
            f"Model '{repo}' is not in the local cache and could not be downloaded{why}. Offline "
            f"(HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}) only cached models load: run `{command}` "
            f"on a connected machine, or give a local folder or .gguf path."
        )

    def _load_uncached(self, source: str, is_local: bool, local_files_only: bool | None,
                       trust_remote_code: bool, revision: str | None) -> _Loaded:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        common = {"trust_remote_code": trust_remote_code, "revision": revision}
        offline = (is_local or hub_offline()) if local_files_only is None else local_files_only
        attempts = [True] if offline else [True, False]  # the local cache first: no network if cached
        last_error: BaseException | None = None
        model: Any  # transformers' own hints for a loaded model's methods are wrong (`.to` takes a device)
        for only_local in attempts:
            try:
                tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=only_local, **common)
                model = AutoModelForCausalLM.from_pretrained(source, dtype=self.dtype, local_files_only=only_local,
                                                             **common)
                break
            except (OSError, ValueError) as exc:
                last_error = exc
                if is_local and not _has_weights(Path(source)):
                    raise ModelNotFoundError(f"The folder '{source}' holds no model weights (*.safetensors or "
                                             f"*.bin) or no config.json; point to a complete model folder.") from exc
        else:
            if is_local:
                raise ModelError(f"Could not load the local model '{source}': {last_error}") from last_error
            raise self._missing(source, exc=last_error) from last_error
        model.to(self.device)
        model.eval()
        return _Loaded(tokenizer=tokenizer, model=model, tokenizer_lock=threading.Lock())

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
        tokenizer = self._loaded.tokenizer
        turns = to_text_turns(messages)
        if not getattr(tokenizer, "chat_template", None):
            return plain_prompt(turns)
        try:  # with tokenize=False the template gives the text
            text: str = tokenizer.apply_chat_template(turns, add_generation_prompt=generation_prompt, tokenize=False)
        except Exception:
            turns = to_text_turns(messages, merge_system=True)
            text = tokenizer.apply_chat_template(turns, add_generation_prompt=generation_prompt, tokenize=False)
        return text

    def count_tokens(self, messages: list[Message]) -> int:
        return int(self._encode(messages)["input_ids"].shape[-1])

    def _generation_kwargs(self, inputs: Any, stop_sequences: list[str] | None, kwargs: dict[str, Any],
                           cancel: threading.Event | None = None, prefix: str = "") -> dict[str, Any]:
        from transformers import StoppingCriteriaList

        model, tokenizer = self._loaded.model, self._loaded.tokenizer
        config = copy.deepcopy(model.generation_config)  # per call: nothing shared between sessions
        config.max_new_tokens = int(kwargs.pop("max_new_tokens", kwargs.pop("max_tokens", self.max_new_tokens)))
        config.do_sample = bool(kwargs.pop("do_sample", self.do_sample))
        temperature = kwargs.pop("temperature", self.temperature)
        if config.do_sample:
            config.temperature = temperature if temperature is not None else config.temperature
        else:
            config.temperature, config.top_p, config.top_k = None, None, None
        if config.pad_token_id is None:
            pad = tokenizer.pad_token_id
            config.pad_token_id = pad if pad is not None else tokenizer.eos_token_id
        params = {key: value.to(model.device) for key, value in inputs.items()}
        params["generation_config"] = config
        if stop_sequences or self.end_patterns or cancel is not None:
            criterion = _StopOnText(tokenizer, params["input_ids"].shape[-1], list(stop_sequences or []),
                                    self.end_patterns, prefix, cancel)
            params["stopping_criteria"] = StoppingCriteriaList([criterion])
        kwargs.pop("tools", None)
        params.update(kwargs)
        return params

    def _run(self, params: dict[str, Any], choice: NameChoice | None = None, messages: list[Message] | None = None,
             prefix: str = "") -> Any:
        import torch

        with torch.inference_mode():
            if choice is None or not choice.names:
                return self._loaded.model.generate(**params)
            return self._run_guided(params, choice, messages or [], prefix)

    def _run_guided(self, params: dict[str, Any], choice: NameChoice, messages: list[Message], prefix: str) -> Any:
        """Generate, stopping where a name starts (`choice.opener`); there write the name the model's likelihood
        prefers among `choice.names` (see name_choice.py), then let the model go on from its cache."""
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        model, tokenizer = self._loaded.model, self._loaded.tokenizer
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
                    with self._loaded.tokenizer_lock:
                        covered = int(out.past_key_values.get_seq_length())  # the prompt, computed once
                        scores = score_names(model, tokenizer, lambda m: self._render(m, False), messages, choice,
                                             known=(sequences[0][:covered].tolist(), out.past_key_values))
                if not scores:
                    break
                name = max(scores, key=lambda n: scores[n])
                logger.debug("guided name %r among %s", name, scores)
                with self._loaded.tokenizer_lock:  # the name; the model's next token must close it (its own way)
                    written = tokenizer(name, add_special_tokens=False)["input_ids"]
                    closing = self._loaded.tokens_starting_with(quote)
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

    # --- generation --------------------------------------------------------------------------
    def generate(self, messages: list[Message], stop_sequences: list[str] | None = None,
                 tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> ModelReply:
        kwargs = dict(kwargs)
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

    def _check_context(self, prompt_length: int) -> None:
        if self.context_size and prompt_length >= self.context_size:
            raise ContextWindowExceededError(
                f"The prompt has {prompt_length} tokens and '{self.model_id}' accepts {self.context_size}. "
                "Lower max_steps, shorten the task or tool outputs, or pick a model with a larger context."
            )


def _has_weights(folder: Path) -> bool:
    if not (folder / "config.json").is_file():
        return False
    patterns = ("*.safetensors", "*.bin", "*.safetensors.index.json")
    return any(any(folder.glob(pattern)) for pattern in patterns)


def clear_loaded_models() -> None:
    """Forget the shared loaded models (tests, or to free memory)."""
    with _LOAD_LOCK:
        _LOADED.clear()


__all__ = ["TransformersModel", "clear_loaded_models", "pick_device", "pick_dtype", "resolve_source"]
