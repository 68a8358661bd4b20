"""Test-wide settings: everything offline, nothing from the developer's environment leaks in."""
from __future__ import annotations

import os
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"

if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["MPLBACKEND"] = "Agg"
for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "AGENTDECK_MODEL"):
    os.environ.pop(key, None)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _sandbox_holds_of_the_test() -> object:
    """An app built with Redis hands its state to the process's remote sandboxes (`sandbox_holds`, ui/services.py):
    one app per process in production, many in a test run, whose Redis servers end with their test."""
    yield
    from agents.host_settings import configure_host

    configure_host(sandbox_holds=None)
