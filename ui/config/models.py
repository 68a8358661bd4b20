"""The model settings: which model, which ones visitors may pick, retries, compaction, local model hardware."""
from __future__ import annotations

from pydantic import SecretStr

from ui.config.base import CommaList, SettingsPart, setting


class ModelSettings(SettingsPart):
    model: str = setting(
        "", "the model string (see Choosing a model)",
        default_text="from the keys found, else `embedded` (on a Space without local models: the Hugging Face "
                     "default visitors run with their own account)")
    models: CommaList | None = setting(
        None, "the model strings visitors may pick; `replay:`, `transformers:`, paths and custom endpoints only "
              "when listed here or set as the model",
        default_text="the configured model, the embedded one and the hosted defaults")
    allow_any_model: bool = setting(False, "a single-user install: visitors may choose any model string, tool and "
                                           "import (the picker says so)")
    record: str = setting("", "record every model exchange to this YAML/JSON transcript (`replay:` plays it back)",
                          accepts="a file path")
    model_max_retries: int = setting(4, "retries of a model call on rate limits, server errors and dropped "
                                        "connections (exponential with jitter)", ge=0, le=20)
    model_retry_delay: float = setting(1.0, "seconds before the first retry (then doubling)", ge=0, le=600)
    model_max_retry_after: float = setting(60.0, "the longest `Retry-After` of a provider's 429/503 that is "
                                                 "obeyed, in seconds (longer ones are cut to this)", ge=0, le=3600)
    context_budget: int | None = setting(
        None, "prompt tokens before older steps are summarised", ge=1000, le=10_000_000,
        default_text="from the model's context size, else 32_000")
    structured_code: bool = setting(False, "the code agent's steps are `{\"thought\", \"code\"}` JSON objects asked "
                                           "for through the model's structured output, not fenced code")
    answer_agreement: bool = setting(True, "confirm the embedded model's plain answers that passed the app's checks "
                                           "by a second, independent attempt (one model call more)")
    cache_dir: str = setting("", "where the embedded model is converted once (about 520 MB)",
                             accepts="a folder path", default_text="~/.cache/agentdeck")
    device: str = setting("", "device of local (transformers) models", accepts="cpu, cuda, cuda:N or mps",
                          default_text="CUDA, then MPS, then CPU", pattern=r"^(cpu|mps|cuda(:\d+)?)$")
    torch_threads: int = setting(1, "torch threads of the embedded model (0: torch's own default; process-wide)",
                                 ge=0, le=1024)
    openai_base_url: str = setting(
        "", "an OpenAI-compatible server's API root (vLLM, llama.cpp's server, LM Studio, a gateway): its models are "
            "offered as `openai-compatible:<name>`", accepts="an http(s) URL such as http://127.0.0.1:8000/v1",
        default_text="`OPENAI_BASE_URL` with `OPENAI_API_KEY`, when set")
    openai_api_key: SecretStr | None = setting(None, "that server's key, if it wants one (sent only to it)")
    openai_models: CommaList | None = setting(
        None, "the model names that server serves (offered in the picker; the first is the default model when "
              "`AGENTDECK_MODEL` is unset)")
