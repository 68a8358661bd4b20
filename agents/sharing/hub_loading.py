"""Agents and tools loaded from the Hugging Face Hub: downloaded (nothing runs), the code they would run listed
and refused without `trust_remote_code=True`, their tools marked as needing approval unless the caller says
otherwise."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agents.sharing.agent_folder import agent_code_to_run
from agents.sharing.agent_loading import load_agent
from agents.sharing.hub import HubOptions, download, require_trust
from agents.sharing.tool_folder import TOOL_MANIFEST, code_to_run
from agents.sharing.tool_loading import load_tool_folder
from agents.tooling.base import Tool


def agent_from_hub(cls: type[Any], repo_id: str, options: HubOptions, trust_remote_code: bool,
                   tools_require_approval: bool | None, overrides: dict[str, Any]) -> Any:
    folder = download(repo_id, options)
    require_trust(f"the agent {repo_id!r}", agent_code_to_run(folder), trust_remote_code)
    approval = True if tools_require_approval is None else tools_require_approval
    return load_agent(cls, folder, tools_require_approval=approval, **overrides)


def load_tool(repo_id_or_folder: str | os.PathLike[str], *, trust_remote_code: bool = False,
              requires_approval: bool | None = None, endpoint: str | None = None, token: str | None = None,
              revision: str | None = None, cache_dir: str | os.PathLike[str] | None = None) -> Tool:
    """A tool from a saved folder (your own: it runs as any code you import) or a Hub repo id (it runs only with
    `trust_remote_code=True`, and its calls pause for approval unless `requires_approval=False`)."""
    local = Path(repo_id_or_folder)
    if local.is_dir() and (local / TOOL_MANIFEST).is_file():
        return load_tool_folder(local, requires_approval)
    return tool_from_hub(str(repo_id_or_folder), trust_remote_code=trust_remote_code,
                         requires_approval=requires_approval,
                         options=HubOptions(endpoint=endpoint, token=token, revision=revision, cache_dir=cache_dir))


def tool_from_hub(repo_id: str, *, trust_remote_code: bool, requires_approval: bool | None = None,
                  options: HubOptions | None = None) -> Tool:
    """A tool from a Hub repo, never a local folder of the same name (the workbench's AGENTDECK_HUB_TOOLS)."""
    folder = download(repo_id, options or HubOptions())
    require_trust(f"the tool {repo_id!r}", code_to_run(folder), trust_remote_code)
    return load_tool_folder(folder, True if requires_approval is None else requires_approval)
