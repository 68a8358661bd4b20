"""Loading a local transformers model: where its files are, which device and dtype, one copy per weights.

Why: several sessions may use one model at once, so a loaded tokenizer and model are shared read-only (keyed
by source, revision, device and dtype). Loading never waits on the network when HF_HUB_OFFLINE is set or the
model is already cached locally; a missing model fails fast with the command that fetches it.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.errors import ModelError, ModelNotFoundError

_LOADED: dict[tuple[str, str | None, str, str], LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class LoadedModel:
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
    """The argument, else `configure_host(device=...)` (agents/host_settings.py), else CUDA, then Apple MPS, then
    CPU."""
    import torch

    from agents.host_settings import host_settings

    requested = requested or host_settings().device or None
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


@dataclass(frozen=True)
class LoadRequest:
    """What to load (as `resolve_source` found it) and how: the constructor's loading options."""
    source: str
    gguf_name: str | None
    is_local: bool
    device: str
    dtype: Any
    local_files_only: bool | None = None
    trust_remote_code: bool = False
    revision: str | None = None


def load_shared(request: LoadRequest) -> LoadedModel:
    """The loaded model for `request`, loaded once per source, revision, device and dtype."""
    source, is_local = request.source, request.is_local
    if request.gguf_name:
        source = _gguf_folder(source, request.gguf_name, is_local, request.local_files_only)
        is_local = True
    key = (source, request.revision, request.device, str(request.dtype))
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = _load_uncached(source, is_local, request)
        return _LOADED[key]


def _gguf_folder(source: str, gguf_name: str, is_local: bool, local_files_only: bool | None) -> str:
    from agents.models.gguf_cache import convert_gguf

    if is_local:
        return str(convert_gguf(Path(source) / gguf_name))
    from huggingface_hub import hf_hub_download

    offline = hub_offline() if local_files_only is None else local_files_only
    try:
        path = hf_hub_download(source, gguf_name, local_files_only=True)
    except Exception:
        if offline:
            raise _missing(source, gguf_name) from None
        try:
            path = hf_hub_download(source, gguf_name)
        except Exception as exc:
            raise _missing(source, gguf_name, exc) from exc
    return str(convert_gguf(path))


def _missing(repo: str, filename: str | None = None, exc: BaseException | None = None) -> ModelNotFoundError:
    why = f" ({type(exc).__name__}: {str(exc)[:200]})" if exc else ""
    command = f"hf download {repo}" + (f" {filename}" if filename else "")
    return ModelNotFoundError(
        f"Model '{repo}' is not in the local cache and could not be downloaded{why}. Offline "
        f"(HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}) only cached models load: run `{command}` "
        f"on a connected machine, or give a local folder or .gguf path."
    )


def _load_uncached(source: str, is_local: bool, request: LoadRequest) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    common = {"trust_remote_code": request.trust_remote_code, "revision": request.revision}
    local_files_only = request.local_files_only
    offline = (is_local or hub_offline()) if local_files_only is None else local_files_only
    attempts = [True] if offline else [True, False]  # the local cache first: no network if cached
    last_error: BaseException | None = None
    model: Any  # transformers' own hints for a loaded model's methods are wrong (`.to` takes a device)
    for only_local in attempts:
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=only_local, **common)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=request.dtype, local_files_only=only_local,
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
        raise _missing(source, exc=last_error) from last_error
    model.to(request.device)
    model.eval()
    return LoadedModel(tokenizer=tokenizer, model=model, tokenizer_lock=threading.Lock())


def _has_weights(folder: Path) -> bool:
    if not (folder / "config.json").is_file():
        return False
    patterns = ("*.safetensors", "*.bin", "*.safetensors.index.json")
    return any(any(folder.glob(pattern)) for pattern in patterns)


def clear_loaded_models() -> None:
    """Forget the shared loaded models (tests, or to free memory)."""
    with _LOAD_LOCK:
        _LOADED.clear()


__all__ = ["LoadRequest", "LoadedModel", "clear_loaded_models", "hub_offline", "load_shared", "pick_device",
           "pick_dtype", "resolve_source"]
