"""Agents and tools on the Hugging Face Hub: a saved folder pushed as a repo, a repo downloaded as a folder (made
into an agent or a tool by hub_loading.py).

Why: the Hub is where teams share them. Downloading runs nothing; what a folder would run (tool files, prompt
templates, which Jinja2 renders in the app) is listed and refused unless the caller passes
`trust_remote_code=True`, and tools loaded from the Hub pause for approval unless the caller says otherwise.
`endpoint=` (or `HF_ENDPOINT`) points at another Hub; `token=` (or the logged-in token) authenticates.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.errors import SharingError, UntrustedCodeError
from agents.sharing.agent_folder import save_agent
from agents.sharing.tool_folder import save_tool

#: The files of a saved agent or tool (agent_folder.py, tool_folder.py), at any depth.
SHARED_FILES = ("*.json", "*.py", "*.yaml", "*.md")


@dataclass(frozen=True)
class HubOptions:
    """Where and as whom to reach the Hub: None means huggingface_hub's own defaults (HF_ENDPOINT, the saved
    token, its cache folder)."""

    endpoint: str | None = None
    token: str | None = None
    revision: str | None = None
    cache_dir: str | os.PathLike[str] | None = None
    repo_type: str = "model"


def push_folder(folder: Path, repo_id: str, options: HubOptions, commit_message: str,
                private: bool | None = None) -> str:
    """Create the repo if needed and upload the folder as one commit; returns the commit's URL."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=options.endpoint, token=options.token)
    api.create_repo(repo_id, private=private, exist_ok=True, repo_type=options.repo_type)
    info = api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message,
                             repo_type=options.repo_type, revision=options.revision)
    return str(getattr(info, "commit_url", info))


def push_saved(save: Callable[[Path], Any], repo_id: str, options: HubOptions, commit_message: str,
               private: bool | None = None) -> str:
    with tempfile.TemporaryDirectory(prefix="agentdeck-push-") as folder:
        save(Path(folder))
        return push_folder(Path(folder), repo_id, options, commit_message, private)


def download(repo_id: str, options: HubOptions) -> Path:
    """The repo's files in a local folder (huggingface_hub's cache); nothing in them runs."""
    from huggingface_hub import snapshot_download

    # Only the files a saved agent or tool has: a repo that also holds weights or data is not downloaded whole.

    try:
        return Path(snapshot_download(repo_id, repo_type=options.repo_type, revision=options.revision,
                                      allow_patterns=list(SHARED_FILES),
                                      endpoint=options.endpoint, token=options.token,
                                      cache_dir=None if options.cache_dir is None else Path(options.cache_dir)))
    except Exception as exc:
        raise SharingError(f"Cannot download {repo_id!r} from the Hub: {type(exc).__name__}: {exc}") from exc


def require_trust(what: str, code: list[str], trust_remote_code: bool) -> None:
    """Refuse, saying what would run, unless the caller trusts the code."""
    if trust_remote_code:
        return
    listed = "\n".join(f"  - {line}" for line in code)
    raise UntrustedCodeError(
        f"Loading {what} would run code from the Hub in this process:\n{listed}\n"
        "Read it, then pass trust_remote_code=True if you trust its author.")


def push_agent(agent: Any, repo_id: str, options: HubOptions, commit_message: str,
               private: bool | None = None) -> str:
    return push_saved(lambda folder: save_agent(agent, folder), repo_id, options, commit_message, private)


def push_tool(tool: Any, repo_id: str, options: HubOptions, commit_message: str, private: bool | None = None) -> str:
    return push_saved(lambda folder: save_tool(tool, folder), repo_id, options, commit_message, private)
