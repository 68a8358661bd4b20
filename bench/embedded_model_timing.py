"""Time the embedded model: first load (GGUF conversion), a later load, and one agent-style generation.

Usage: python bench/embedded_model_timing.py [--fresh]
--fresh converts into a temporary AGENTDECK_CACHE_DIR to time the one-off conversion.
Each load runs in its own process so import and load costs are measured as a user meets them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, time
started = time.perf_counter()
from agents.models import load_model
from agents.prompts import load_prompt_templates, render
from agents.prompts.profiles import example_messages
model = load_model("embedded")
loaded = time.perf_counter() - started
templates = load_prompt_templates("code_agent_tiny")
system = render(templates, "system_prompt", tools=[], managed_agents=[], authorized_imports=["math"],
                custom_instructions="")
messages = [{"role": "system", "content": system}, *example_messages(templates, ["math"]),
            {"role": "user", "content": "New task:\nWhat is 17 * 23?"}]
started = time.perf_counter()
reply = model.generate(messages, stop_sequences=["Observation:", "Calling tools:"],
                       response_prefix=templates["response_prefix"])
generation = time.perf_counter() - started
print(json.dumps({"load_s": round(loaded, 1), "generate_s": round(generation, 1),
                  "output_tokens": reply.token_usage.output_tokens, "reply": reply.content}))
"""


def run_once(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as cache:
        if "--fresh" in sys.argv:
            env["AGENTDECK_CACHE_DIR"] = cache
            print("first load (with conversion):", run_once(env))
        print("later load:", run_once(env))
        print("later load:", run_once(env))


if __name__ == "__main__":
    main()
