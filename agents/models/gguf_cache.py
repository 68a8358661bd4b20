"""Convert a GGUF file once into a cached safetensors folder that transformers loads in seconds.

Why: transformers de-quantizes GGUF tensors on every load (tens of seconds on CPU). The converted
folder is written to a temporary directory and renamed into place, so a process that is killed,
or two processes converting at once, can never leave a half-written model behind.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents.errors import ModelError, ModelNotFoundError

logger = logging.getLogger("agents.models")

MARKER = "agentdeck-converted.json"


def cache_root() -> Path:
    """`configure_host(cache_dir=...)` (agents/host_settings.py; the app's AGENTDECK_CACHE_DIR), else
    ~/.cache/agentdeck (XDG_CACHE_HOME respected)."""
    from agents.host_settings import host_settings

    configured = host_settings().cache_dir
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentdeck"


def _fingerprint(path: Path) -> str:
    """Cheap identity of a (large) file: size plus a hash of its first and last megabyte."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(1 << 20))
        if size > (2 << 20):
            handle.seek(-(1 << 20), os.SEEK_END)
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


def converted_folder_for(gguf_path: Path) -> Path:
    stem = gguf_path.name[: -len(".gguf")] if gguf_path.name.endswith(".gguf") else gguf_path.name
    return cache_root() / "gguf" / f"{stem}-{_fingerprint(gguf_path)}"


def is_converted(folder: Path) -> bool:
    return (folder / MARKER).is_file()


@contextlib.contextmanager
def _conversion_lock(folder: Path) -> Iterator[None]:
    """Let one process convert while others wait (the lock is released if its holder dies)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock_path = folder.parent / f".{folder.name}.lock"
    try:
        import fcntl
    except ImportError:
        yield
        return
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def convert_gguf(gguf_path: str | Path) -> Path:
    """Return the folder holding the converted model, converting on first use."""
    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {gguf_path}. Give the path of an existing .gguf file.")
    folder = converted_folder_for(gguf_path)
    if is_converted(folder):
        return folder
    with _conversion_lock(folder):
        if is_converted(folder):  # another process finished while we waited
            return folder
        started = time.monotonic()
        logger.warning("Converting %s once into %s (later loads take seconds)...", gguf_path.name, folder)
        temp = folder.parent / f".{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            _write_converted(gguf_path, temp)
            (temp / MARKER).write_text(json.dumps({"source": str(gguf_path), "seconds": time.monotonic() - started}))
            if folder.exists():  # an incomplete leftover (no marker) from outside this module
                shutil.rmtree(folder, ignore_errors=True)
            try:
                os.rename(temp, folder)
            except OSError:
                if not is_converted(folder):
                    raise
        except Exception as exc:
            if isinstance(exc, ModelError):
                raise
            raise ModelError(f"Could not convert {gguf_path} for transformers: {exc}. Check that the `gguf` and "
                             f"`accelerate` packages are installed and the cache folder {cache_root()} is writable "
                             f"(set AGENTDECK_CACHE_DIR to change it).") from exc
        finally:
            shutil.rmtree(temp, ignore_errors=True)
        logger.warning("Converted %s in %.1fs.", gguf_path.name, time.monotonic() - started)
    return folder


def _write_converted(gguf_path: Path, target: Path) -> None:
    """Load the GGUF with transformers (de-quantized to float32) and save it as safetensors."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    # Any: transformers types `hf_quantizer` as a tensor or module, but it is a quantizer that may be None.
    model: Any = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                      local_files_only=True)
    # The weights are plain dense tensors now; drop the GGUF quantizer so the model can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.mkdir(parents=True, exist_ok=False)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
