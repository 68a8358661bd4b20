"""User tool files (AGENTDECK_TOOLS_PATH) and the tool registry."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from agents.tooling.base import Tool
from tools.registry import BUILTIN_TOOL_NAMES, ToolSettings, all_tools, load_tool_catalog, make_builtin_tools
from tools.user_tools import load_tools_from_file, load_user_tools

GOOD = '''
from tools import Tool, tool

@tool
def shout(text: str) -> str:
    """Upper-cases text.

    Args:
        text: The text to shout.
    """
    return text.upper()


class Counter(Tool):
    name = "count_words"
    description = "Counts the words in a text."
    inputs = {"text": {"type": "string", "description": "The text."}}
    output_type = "integer"

    def forward(self, text):
        return len(text.split())


class NeedsArgs(Tool):
    name = "needs_args"
    description = "Built by hand below."
    inputs = {}
    output_type = "string"

    def __init__(self, greeting):
        super().__init__()
        self.greeting = greeting

    def forward(self):
        return self.greeting


hello = NeedsArgs("hi")
'''


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_loads_decorated_functions_subclasses_and_instances(tmp_path: Path) -> None:
    tools = {t.name: t for t in load_tools_from_file(_write(tmp_path, "mine.py", GOOD))}
    assert set(tools) == {"shout", "count_words", "needs_args"}
    assert tools["shout"](text="hey") == "HEY"
    assert tools["count_words"](text="a b c") == 3
    assert tools["needs_args"]() == "hi"


def test_broken_files_are_reported_with_file_and_line_and_others_still_load(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    _write(folder, "a_good.py", GOOD)
    _write(folder, "b_syntax.py", "x = 1\ndef broken(:\n    pass\n")
    _write(folder, "c_raises.py", "import os\n\nvalue = 1\nraise RuntimeError('needs FOO_API_KEY')\n")
    _write(folder, "d_bad_tool.py", "from tools import tool\n\n@tool\ndef nodoc(x: int) -> int:\n    return x\n")
    _write(folder, "_private.py", "raise SystemExit('never imported')\n")
    extra = _write(tmp_path, "extra.py", "from tools import tool\n\n@tool\ndef ping() -> str:\n    "
                                         "'''Answers pong.'''\n    return 'pong'\n")
    result = load_user_tools(os.pathsep.join([str(folder), str(extra), str(tmp_path / "missing.py")]))
    assert set(result.tools) == {"shout", "count_words", "needs_args", "ping"}
    assert result.sources["ping"] == str(extra)
    errors = "\n".join(result.errors)
    assert f"{folder / 'b_syntax.py'}, line 2: SyntaxError" in errors
    assert f"{folder / 'c_raises.py'}, line 4: RuntimeError: needs FOO_API_KEY" in errors
    assert f"{folder / 'd_bad_tool.py'}, line 3: ToolDefinitionError" in errors
    assert "missing.py: no such file or folder" in errors
    assert len(result.errors) == 4
    assert not any("agentdeck_user_tools.b_syntax" in name for name in sys.modules)


def test_all_tools_are_cheap_and_described(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AGENTDECK_TOOLS_PATH", "AGENTDECK_MCP_SERVERS", "AGENTDECK_DISABLED_TOOLS"):
        monkeypatch.delenv(name, raising=False)
    tools = all_tools()
    assert list(tools) == list(BUILTIN_TOOL_NAMES)
    assert all(isinstance(t, Tool) and t.description for t in tools.values())
    assert tools["speech_to_text"]._pipeline is None  # no model loaded
    assert tools["visit_webpage"].allow_private is False


def test_settings_from_env_mapping_and_object(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTDECK_ALLOW_PRIVATE_URLS", "1")
    monkeypatch.setenv("AGENTDECK_WIKIPEDIA_URL", "http://127.0.0.1:1/{lang}")
    monkeypatch.setenv("AGENTDECK_STT_MODEL", str(tmp_path))
    monkeypatch.setenv("AGENTDECK_DISABLED_TOOLS", "web_search, speech_to_text")
    s = ToolSettings.from_env()
    assert s.allow_private_urls and s.disabled_tools == {"web_search", "speech_to_text"}
    tools = make_builtin_tools(s)
    assert tools["visit_webpage"].allow_private is True
    assert tools["wikipedia_search"].base_url == "http://127.0.0.1:1/{lang}"
    assert tools["speech_to_text"].model_id == str(tmp_path)
    # a mapping or the app's settings object overrides the environment field by field
    assert make_builtin_tools({"allow_private_urls": False})["visit_webpage"].allow_private is False

    class AppSettings:
        stt_model = "org/model"

    assert make_builtin_tools(AppSettings())["speech_to_text"].model_id == "org/model"


def test_catalog_with_user_tools_disabled_flags_and_errors(tmp_path: Path) -> None:
    good = _write(tmp_path, "mine.py", GOOD)
    bad = _write(tmp_path, "bad.py", "import not_a_module_xyz\n")
    clash = _write(tmp_path, "clash.py", "from tools import tool\n\n@tool\ndef web_search(q: str) -> str:\n"
                                         "    '''My own search.\n\n    Args:\n        q: query\n    '''\n"
                                         "    return q\n")
    settings = ToolSettings(tools_path=os.pathsep.join(map(str, (good, bad, clash))),
                            disabled_tools=frozenset({"count_words"}))
    with load_tool_catalog(settings) as catalog:
        rows = {row["name"]: row for row in catalog.describe()}
        assert rows["shout"]["source"] == f"user:{good}" and rows["shout"]["enabled"]
        assert rows["count_words"]["enabled"] is False
        assert rows["web_search"]["description"].startswith("My own search")
        assert "count_words" not in catalog.enabled_tools() and "shout" in catalog.enabled_tools()
        catalog.set_enabled("count_words", True)
        assert "count_words" in catalog.enabled_tools()
        assert any("bad.py, line 1: ModuleNotFoundError" in e for e in catalog.errors)
        assert any("'web_search'" in e and "replaces" in e for e in catalog.errors)


@pytest.mark.slow
def test_catalog_with_mcp_servers(tmp_path: Path) -> None:
    server = Path(__file__).with_name("mcp_demo_server.py")
    config = f'[{{"command": {sys.executable!r}, "args": [{str(server)!r}], "prefix": "demo"}}]'.replace("'", '"')
    with load_tool_catalog(ToolSettings(mcp_servers=config)) as catalog:
        assert catalog.errors == []
        assert catalog.entries["demo_add"].source.startswith("mcp:")
        assert catalog.tools["demo_add"](a=1, b=1) == "2"
    assert catalog.toolsets == []


def test_importing_tools_modules_stays_light() -> None:
    import subprocess

    script = (
        "import sys\n"
        "import tools, tools.registry, tools.web_search, tools.visit_webpage, tools.wikipedia_search, "
        "tools.speech_to_text, agents.tooling.final_answer, tools.mcp_client, tools.user_tools\n"
        "tools.registry.make_builtin_tools({})\n"
        "heavy = ('transformers', 'torch', 'mcp', 'ddgs', 'primp', 'requests', 'numpy', 'markdownify', 'bs4')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_speech_to_text_is_offered_only_where_it_can_run(monkeypatch) -> None:
    """A lean install (a Space) has no torch: the tool that needs it is not offered at all."""
    import tools.registry as registry

    assert "speech_to_text" in registry.make_builtin_tools()  # this machine has the local-model packages
    monkeypatch.setattr(registry, "local_models_installed", lambda: False)
    monkeypatch.setattr(registry, "browser_installed", lambda: True)
    assert set(registry.make_builtin_tools()) == {"web_search", "visit_webpage", "web_browser", "wikipedia_search"}


def test_web_browser_is_offered_only_where_it_can_run(monkeypatch) -> None:
    """Without Playwright or the system's Chromium the browser tool is not offered (never a downloaded browser)."""
    import tools.registry as registry

    monkeypatch.setattr(registry, "browser_installed", lambda: False)
    assert "web_browser" not in registry.make_builtin_tools()
    assert registry.BUILTIN_TOOL_NAMES.index("web_browser") == 2  # listed with the other built-ins


def test_settings_from_a_mapping_read_flags_as_the_tools_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mapping given is read, not the process's environment, with the tools' own flag words."""
    monkeypatch.setenv("AGENTDECK_ALLOW_PRIVATE_URLS", "1")
    assert not ToolSettings.from_env({}).allow_private_urls
    assert ToolSettings.from_env({"AGENTDECK_ALLOW_PRIVATE_URLS": " On "}).allow_private_urls
    assert not ToolSettings.from_env({"AGENTDECK_ALLOW_PRIVATE_URLS": "0"}).allow_private_urls


def test_mcp_tools_pause_under_approve_sensitive_tool_calls_unless_the_operator_says_they_only_read() -> None:
    """The app cannot see what an MCP server's tool does, so the mode that approves sensitive tool calls covers
    it (it used to let every MCP call through); a server entry can say `"requires_approval": false`."""
    from types import SimpleNamespace

    from agents.decisions.policy import ApprovalPolicy
    from agents.errors import ConfigurationError
    from tools.mcp_client import MCPToolset

    remote = SimpleNamespace(name="send", description="Sends a message.",
                             input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
    policy = ApprovalPolicy.from_mode("approve_tools")
    unknown = MCPToolset({"command": "server", "name": "mail"}, connect=False)._make_tool(remote)
    assert unknown.requires_approval and "mail" in unknown.approval_reason
    assert policy.covered_tools([unknown]) == [unknown]
    reader = MCPToolset({"command": "server", "requires_approval": False}, connect=False)._make_tool(remote)
    assert not reader.requires_approval and policy.covered_tools([reader]) == []
    with pytest.raises(ConfigurationError, match="requires_approval"):
        MCPToolset({"command": "server", "requires_approval": "no"}, connect=False)


def test_a_missing_browser_says_what_is_missing_where_tools_are_chosen(monkeypatch, tmp_path) -> None:
    """web_browser is listed in the README with the other built-ins: where it cannot run, the settings form's
    tool list and the command line say it is off here, why, and what would add it (not just "unknown tool")."""
    import importlib.util

    import gradio as gr

    import tools.browser_host as browser_host
    import tools.registry as registry
    from agents.__main__ import _chosen_tools
    from agents.errors import ConfigurationError
    from ui.settings import AppConfig
    from ui.settings_form import build

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "playwright" else real_find_spec(name, *a))
    monkeypatch.setattr(browser_host, "CHROMIUM", str(tmp_path / "no-chromium"))
    assert "web_browser" not in registry.make_builtin_tools()
    why = registry.unavailable_builtin_tools()["web_browser"]
    assert "playwright" in why and "requirements-local.txt" in why and "apt-get install chromium" in why
    assert "Space" in why

    with gr.Blocks():
        form = build(AppConfig.from_env(tmp_path), gr.Textbox(value="replay:none"))
    assert f"Not on this server: web_browser {why}" in (form.tools.info or "")

    with pytest.raises(ConfigurationError) as refused:
        _chosen_tools("web_search,web_browser")
    assert f"Not available here: web_browser {why}" in str(refused.value)

    monkeypatch.setattr(importlib.util, "find_spec", real_find_spec)  # Playwright back: only Chromium is missing
    why = registry.unavailable_builtin_tools()["web_browser"]
    assert "playwright" not in why and str(tmp_path / "no-chromium") in why


def test_playwright_comes_with_a_local_install_and_never_with_the_space() -> None:
    """`make run` (requirements-local.txt) installs the browser tool's driver; the Space's pinned requirements do
    not carry it (a Space has no Chromium, so the tool is off there and the install stays lean)."""
    root = Path(__file__).resolve().parents[2]
    local = (root / "requirements-local.txt").read_text(encoding="utf-8")
    assert "\nplaywright==" in local
    space = (root / "requirements-space.txt").read_text(encoding="utf-8").lower()
    assert "playwright" not in space and "playwright" not in (root / "requirements.txt").read_text().lower()
