"""The `agents` library reads no AGENTDECK_* variable: a program using it gets the behaviour it asks for, whatever
its process's environment holds (the app passes its settings as parameters: ui/agent_factory.py, ui/config/).

Checked by running the same library program twice in a child process, once with a clean environment and once with
every one of the app's variables set to a value that would change something if it were read, and comparing what
the program saw; and by reading agents/ for an environment read of such a name."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from ui.config import variable_names

ROOT = Path(__file__).resolve().parents[2]

#: Values that would change the library's behaviour if it read them (a valid value where one exists).
ODD = {
    "AGENTDECK_SANDBOX": "docker", "AGENTDECK_SANDBOX_POOL": "7", "AGENTDECK_SANDBOX_UIDS": "100-101",
    "AGENTDECK_MODEL": "openai/gpt-4.1", "AGENTDECK_MODEL_MAX_RETRIES": "0", "AGENTDECK_MODEL_RETRY_DELAY": "9",
    "AGENTDECK_MODEL_MAX_RETRY_AFTER": "1", "AGENTDECK_CONTEXT_BUDGET": "1000", "AGENTDECK_TORCH_THREADS": "3",
    "AGENTDECK_DEVICE": "cuda:7", "AGENTDECK_DOCKER_HOST": "unix:///no/such.sock", "AGENTDECK_DOCKER_CPUS": "9",
    "AGENTDECK_DOCKER_IMAGE": "no-such:image", "AGENTDECK_DOCKERD_DIR": "/no/such/dir",
    "AGENTDECK_SECRET": "s" * 40, "AGENTDECK_STRUCTURED_CODE": "1", "AGENTDECK_MAX_STEPS": "1",
    "AGENTDECK_EXEC_TIMEOUT_S": "1",
}

PROGRAM = r"""
import json, sys
from pathlib import Path
from agents import CodeAgent, ReplayModel
from agents.executor import backends, pool
from agents.host_settings import host_settings
from agents.memory.compaction import default_budget
from agents.models import RetryPolicy, default_model_string, load_model
from agents.models.gguf_cache import cache_root
from agents.models.recorder import RecordingModel
from agents.executor.docker import daemon

work = Path(sys.argv[1])
reply = "Thought: compute\n```py\nx = 6 * 7\nfinal_answer(x)\n```"
with CodeAgent(tools=[], model=ReplayModel([reply]), workdir=work / "ws", verbosity=0) as agent:
    result = agent.run("Compute.", return_result=True)
    seen = {
        "output": result.output, "state": result.state.value, "max_steps": agent.max_steps,
        "structured": agent.structured, "timeout": agent.executor_timeout_s,
        "backend": agent.sandbox.backend.name, "budget": agent.compactor.budget(agent.model),
    }
policy = RetryPolicy()
seen.update(
    retry=[policy.max_retries, policy.initial_delay, policy.max_retry_after], default_backend=backends.default_name(),
    pool_size=pool.WarmPool(backends.get("local")).size, host=repr(host_settings()), cache=str(cache_root()),
    default_budget=default_budget(None), model=default_model_string({}), docker=daemon.docker_host(),
    recording=isinstance(load_model("replay:" + sys.argv[2]), RecordingModel),
)
print(json.dumps(seen, sort_keys=True))
"""


def _run(tmp_path: Path, env: dict[str, str]) -> dict[str, object]:
    transcript = tmp_path / "t.yaml"
    transcript.write_text("replies:\n  - hello\n")
    work = tmp_path / ("odd" if any(k.startswith("AGENTDECK_") for k in env) else "clean")
    work.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTDECK_") and k != "DOCKER_HOST"}
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(work), str(transcript)], env={**base, **env},
                         capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_app_setting_in_the_environment_changes_nothing_for_a_library_user(tmp_path):
    odd = {name: ODD.get(name, "abc") for name in variable_names()}
    odd["AGENTDECK_RECORD"] = str(tmp_path / "recorded.json")
    odd["AGENTDECK_CACHE_DIR"] = str(tmp_path / "cache")
    clean = _run(tmp_path, {})
    assert clean["output"] == 42 and clean["backend"] == "local" and clean["recording"] is False
    assert _run(tmp_path, odd) == clean
    assert not (tmp_path / "recorded.json").exists()


def _reads_agentdeck_variable(node: ast.AST, constants: set[str]) -> bool:
    """`os.environ.get("AGENTDECK_...")`, `os.getenv(...)`, `os.environ["AGENTDECK_..."]`, `setdefault`, or a
    module constant holding such a name (`constants`) passed to them."""
    target: ast.AST | None = None
    if isinstance(node, ast.Call) and node.args:
        func = ast.unparse(node.func)
        if func.endswith(("environ.get", "getenv", "environ.setdefault", "environ.pop")):
            target = node.args[0]
    elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
        target = node.slice
    if target is None:
        return False
    text = ast.unparse(target)
    return "AGENTDECK_" in text or text in constants


def test_no_module_of_agents_reads_an_agentdeck_variable():
    found = []
    for path in sorted((ROOT / "agents").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {target.id for node in tree.body if isinstance(node, ast.Assign)
                     and isinstance(node.value, ast.Constant) and str(node.value.value).startswith("AGENTDECK_")
                     for target in node.targets if isinstance(target, ast.Name)}
        found += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                  if _reads_agentdeck_variable(node, constants)]
    assert not found, f"these read an environment variable by a name the library must not read: {found}"
