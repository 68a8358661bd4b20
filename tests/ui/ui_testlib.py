"""Helpers for driving the real app: scripted transcripts and `python app.py` in a subprocess."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents.memory import ActionStep, AgentMemory, FinalAnswerStep, TaskStep
from tests.waiting import wait_until


def see_the_pages_events() -> None:
    """Let gradio_client call the page's own events by name with keyword arguments, as these tests drive the page.
    The API page shows only the API's endpoints (ui/api/: the page's events are undocumented there), and the client
    learns parameter names only from the endpoints the info route lists: this asks it for all of them."""
    import gradio_client.utils

    gradio_client.utils.RAW_API_INFO_URL = "info?serialize=False&all_endpoints=True"


see_the_pages_events()

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: Where browser tests save screenshots: docs/ when refreshing the README's pictures (`make screenshots` sets
#: AGENTDECK_SCREENSHOT_DIR), else a temporary folder, so a test run leaves the tracked files alone.
SCREENSHOT_DIR = Path(os.environ.get("AGENTDECK_SCREENSHOT_DIR")
                      or Path(tempfile.gettempdir()) / "agentdeck-screenshots")

PENGUINS = PROJECT_ROOT / ".." / "shared" / "data" / "penguins.csv"
if not PENGUINS.exists():  # outside the workplace the bundled copy is the same file
    PENGUINS = PROJECT_ROOT / "ui" / "assets" / "penguins.csv"


def form(model: str, /, **settings: Any) -> dict[str, Any]:
    """The settings form's values as a page sends them to its handlers (by name: `app.run(message, request,
    **form(model))`), with `settings` changed. A setting no test names here is sent as None (nothing chosen, as
    an API client may send it), so a setting added to the form (ui/settings_form.py) changes no test."""
    from ui.settings_form import field_names

    names = field_names()
    unknown = set(settings) - set(names)
    if unknown:
        raise TypeError(f"not settings of the form: {sorted(unknown)}")
    usual = {"model": model, "agent_type": "code", "max_steps": 6, "planning_interval": 0, "tools": [], "imports": ""}
    return {name: settings[name] if name in settings else usual.get(name) for name in names}


def sample_memory() -> AgentMemory:
    """A saved conversation of one run: a task, a code step that set a variable and wrote files, its answer."""
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Compute the answer", run_id="r1"))
    memory.add_step(ActionStep(step_number=1, run_id="r1", model_output="Thought: compute it.\n```python\nx\n```",
                               code="answer_value = 6 * 7\nprint('set', answer_value)", logs="set 42\n",
                               artifacts=["note.txt", "chart.png"]))
    memory.add_step(FinalAnswerStep(output="The value is 42", run_id="r1"))
    return memory


def code_reply(thought: str, code: str) -> str:
    return f"Thought: {thought}\n```python\n{code.strip()}\n```"


ANALYSIS_SCRIPT = [
    code_reply("Load the uploaded table and look at it.",
               "import pandas as pd\ndf = pd.read_csv('penguins.csv')\nprint('shape', df.shape)\n"
               "print(df['species'].value_counts())"),
    code_reply("Plot flipper length against body mass and save a summary.",
               "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
               "fig, ax = plt.subplots(figsize=(6, 4))\n"
               "for name, group in df.groupby('species'):\n"
               "    ax.scatter(group['flipper_length_mm'], group['body_mass_g'], label=name, s=12)\n"
               "ax.set_xlabel('flipper length (mm)')\nax.set_ylabel('body mass (g)')\nax.legend()\n"
               "fig.savefig('flipper_vs_mass.png', dpi=80)\nplt.close(fig)\n"
               "summary = df.groupby('species')['body_mass_g'].mean().round(1)\n"
               "summary.to_csv('species_summary.csv')\nprint(summary)"),
    code_reply("I have what I need.",
               "final_answer(f'{len(df)} penguins. Mean body mass (g): {summary.to_dict()}')"),
    # The follow-up ("now split it by island") uses `df` from the same sandbox.
    code_reply("Split by island using the table already loaded.",
               "by_island = df.groupby('island').size().to_dict()\nprint('islands', by_island)"),
    code_reply("Done.", "final_answer(f'By island: {by_island}')"),
]

WARM_UP = code_reply("Check the sandbox first.", "print('ready')")

SLOW_SCRIPT = [
    code_reply("This takes a while.", "import time\nprint('sleeping', flush=True)\ntime.sleep(30)\nprint('woke up')"),
    code_reply("Still here after the stop.", "final_answer('still usable')"),
]


def write_transcript(path: Path, replies: list[str]) -> Path:
    path.write_text(json.dumps(replies, indent=1), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: The app processes run_app started, by URL (a test may kill one mid-run).
RUNNING: dict[str, subprocess.Popen] = {}


@contextmanager
def run_app(transcript: Path, data_dir: Path, extra_env: dict[str, str] | None = None,
            timeout: float = 90.0, port: int | None = None) -> Iterator[str]:
    """Start `python app.py` on a loopback port (a free one unless given: a restarted app must keep the
    browser's origin) and yield its URL; stop it afterwards."""
    port = port or free_port()
    env = {**os.environ, "AGENTDECK_MODEL": f"replay:{transcript}", "AGENTDECK_DATA_DIR": str(data_dir),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "MPLBACKEND": "Agg",
           "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    log_path = data_dir / f"server-{port}-{time.time():.0f}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, str(PROJECT_ROOT / "app.py")], cwd=PROJECT_ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    def serving() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited early:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "config", timeout=2):
                return True
        except urllib.error.HTTPError:  # it answers (401: a password-protected app)
            return True
        except OSError:
            return False

    try:
        try:
            wait_until(serving, timeout=timeout, what="app.py to serve its page", poll_s=0.1)
        except AssertionError:
            raise RuntimeError(f"app.py did not start:\n{log_path.read_text()[-3000:]}") from None
        RUNNING[url] = proc
        yield url
    finally:
        RUNNING.pop(url, None)
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# ----- reading a chat's messages (Gradio's "messages" format) -----------------------------------------
def text_of(message: dict) -> str:
    """A message's text, whether its content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def chat_text(messages: list[dict]) -> str:
    return "\n".join(((m.get("metadata") or {}).get("title") or "") + "\n" + text_of(m) for m in messages)


class Req:
    """What the handlers read from a gr.Request: the tab's session hash and the signed-in user."""

    def __init__(self, key: str, username: str | None = None) -> None:
        self.session_hash = key
        self.username = username


#: A tool that needs approval, as a file for AGENTDECK_TOOLS_PATH: the decision tests' email sender. Each mail it
#: sends is a line of outbox.txt beside the file, so a test sees what was (not) sent.
MAIL_TOOLS = '''
from pathlib import Path
from tools import tool


@tool(requires_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email (a demo: it is written to outbox.txt beside this file).

    Args:
        to: Recipient address.
        body: Message text.
    """
    with Path(__file__).with_name("outbox.txt").open("a") as handle:
        handle.write(f"{to}: {body}\\n")
    return f"sent to {to}: {body}"
'''


@contextmanager
def run_mail_app(base: Path, script: list[str], max_steps: int,
                 extra_env: dict[str, str] | None = None) -> Iterator[tuple[str, Path]]:
    """The app on `script` with the demo `send_email` tool (MAIL_TOOLS, which needs approval) loaded from
    `base`/tools: yields its address and the outbox file each sent mail is written to."""
    transcript = write_transcript(base / "script.json", script)
    (base / "tools").mkdir()
    (base / "tools" / "mail_tools.py").write_text(MAIL_TOOLS)
    (base / "data").mkdir()
    env = {"AGENTDECK_TOOLS_PATH": str(base / "tools" / "mail_tools.py"), "AGENTDECK_MAX_STEPS": str(max_steps),
           **(extra_env or {})}
    with run_app(transcript, base / "data", extra_env=env) as url:
        yield url, base / "tools" / "outbox.txt"
