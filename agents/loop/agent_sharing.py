"""A MultiStepAgent saved to a folder or a Hub repo and made again from one (the work is in agents/sharing/).

A part of `MultiStepAgent` (agents/loop/base.py) kept apart by concept: these methods only hand the agent to
agents/sharing, which the loop imports when they are called.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Self


class AgentSharing:
    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the agent to `folder`: its tools' source, managed agents, prompt templates, model string (never
        a key) and settings. `from_folder(folder)` makes it again."""
        from agents.sharing.agent_folder import save_agent

        return save_agent(self, folder)

    @classmethod
    def from_folder(cls, folder: str | os.PathLike[str], **overrides: Any) -> Self:
        """The agent saved in `folder` (your own: its tools' code runs as any code you import). Keyword
        arguments replace what was saved (`model=` also for its managed agents); `tools_require_approval=`
        overrides what its tools declare."""
        from agents.sharing.agent_loading import load_agent

        agent: Self = load_agent(cls, folder, **overrides)
        return agent

    def push_to_hub(self, repo_id: str, *, commit_message: str = "Upload agent", private: bool | None = None,
                    token: str | None = None, endpoint: str | None = None) -> str:
        """Save the agent to a Hugging Face Hub repo (created if needed); returns the commit's URL."""
        from agents.sharing.hub import HubOptions, push_agent

        return push_agent(self, repo_id, HubOptions(endpoint=endpoint, token=token), commit_message, private)

    @classmethod
    def from_hub(cls, repo_id: str, *, trust_remote_code: bool = False, tools_require_approval: bool = True,
                 revision: str | None = None, token: str | None = None, endpoint: str | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, **overrides: Any) -> Self:
        """The agent in a Hub repo. Its tools' code and prompt templates run here, so this refuses, listing them,
        unless `trust_remote_code=True`; its tools pause for approval unless `tools_require_approval=False`."""
        from agents.sharing.hub import HubOptions
        from agents.sharing.hub_loading import agent_from_hub

        options = HubOptions(endpoint=endpoint, token=token, revision=revision, cache_dir=cache_dir)
        agent: Self = agent_from_hub(cls, repo_id, options, trust_remote_code, tools_require_approval,
                                               overrides)
        return agent
