"""Deploy AgentDeck to a Hugging Face Space: `python -m ui.deploy user/name` (or `make space SPACE=user/name`).

It creates or updates the Space with huggingface_hub: exactly the files the app needs (never `data/`, the
signing secret, a virtual environment, caches, tests or workspaces: the list is printed, and `--dry-run`
only prints it), the Space's secrets through the API (`AGENTDECK_SECRET` generated when the Space has none;
the deployer's `HF_TOKEN` only with `--server-token`, since visitors sign in and spend their own), and, with
`--bucket`, a Storage Bucket mounted at /data so saved chats survive restarts. It prints the Space's URL.
"""
from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# What the Space runs: the app, its three packages, and the files Spaces read.
TOP_LEVEL_FILES = ("app.py", "README.md", "LICENSE", "requirements.txt")
PACKAGES = ("agents", "tools", "ui")
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "data", ".venv", "node_modules"}
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".log", ".tmp")
DATA_MOUNT = "/data"


class DeployError(Exception):
    """The deployment cannot go ahead; the message says why and what to do."""


@dataclass(frozen=True)
class DeployPlan:
    space: str
    files: list[str]  # paths relative to the project root, POSIX separators
    bucket: str | None
    server_token: bool
    root: Path = PROJECT_ROOT  # the folder the files are read from


def files_to_publish(root: Path | None = None) -> list[str]:
    """Exactly the files the Space needs, sorted; nothing generated, secret or private."""
    root = PROJECT_ROOT if root is None else root
    found = [name for name in TOP_LEVEL_FILES if (root / name).is_file()]
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or path.is_symlink():
                continue
            if SKIPPED_PARTS & set(rel.parts) or path.name.startswith(".") or path.name.endswith(SKIPPED_SUFFIXES):
                continue
            found.append(rel.as_posix())
    return sorted(found)


def plan(space: str, bucket: str | None = None, server_token: bool = False, root: Path | None = None) -> DeployPlan:
    if space.count("/") != 1 or not all(part.strip() for part in space.split("/")):
        raise DeployError(f"'{space}' is not a Space id: use 'user/name' (or 'org/name').")
    if bucket == "auto":
        bucket = f"{space}-chats"
    root = PROJECT_ROOT if root is None else root
    return DeployPlan(space=space, files=files_to_publish(root), bucket=bucket, server_token=server_token, root=root)


def uncommitted(root: Path, files: list[str]) -> list[str]:
    """Which of `files` differ from the last commit (changed, added or untracked): the upload takes the working
    tree as it is. Empty when `root` is not a git checkout or git is not installed (nothing to compare with)."""
    try:
        result = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"], cwd=root,
                                capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if result.returncode != 0:
        return []
    prefix = _git_prefix(root)
    changed: set[str] = set()
    entries = result.stdout.decode("utf-8", "replace").split("\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            index += 1  # a rename's or copy's source path follows: the new path is the one uploaded
        if path.startswith(prefix):
            changed.add(path[len(prefix):])
    return [rel for rel in files if rel in changed]


def _git_prefix(root: Path) -> str:
    """`root`'s path inside its git checkout ("" at the top), as `git status` paths start with it."""
    try:
        result = subprocess.run(["git", "rev-parse", "--show-prefix"], cwd=root, capture_output=True, timeout=30,
                                check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return result.stdout.decode("utf-8", "replace").strip() if result.returncode == 0 else ""


def deploy(deploy_plan: DeployPlan, token: str | None, endpoint: str | None = None) -> str:
    """Create or update the Space as planned; returns its URL."""
    from huggingface_hub import CommitOperationAdd, HfApi, Volume

    api = HfApi(endpoint=endpoint, token=token)
    space = deploy_plan.space
    api.create_repo(space, repo_type="space", space_sdk="gradio", exist_ok=True)
    existing = set(api.get_space_secrets(space) or {})
    if "AGENTDECK_SECRET" not in existing:
        api.add_space_secret(space, "AGENTDECK_SECRET", secrets.token_hex(32),
                             description="Signs saved chats (generated by ui.deploy; keep it to keep saved chats)")
    if deploy_plan.server_token:
        if not token:
            raise DeployError("--server-token needs a token: set HF_TOKEN or log in with `hf auth login`.")
        api.add_space_secret(space, "HF_TOKEN", token, description="The server's own Hugging Face token")
    if deploy_plan.bucket:
        api.create_bucket(deploy_plan.bucket, private=True, exist_ok=True)
        api.set_space_volumes(space, [Volume(type="bucket", source=deploy_plan.bucket, mount_path=DATA_MOUNT)])
        api.add_space_variable(space, "AGENTDECK_DATA_DIR", f"{DATA_MOUNT}/agentdeck",
                               description="Saved chats and workspaces on the mounted Storage Bucket")
    operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(deploy_plan.root / rel))
                  for rel in deploy_plan.files]
    api.create_commit(space, operations, repo_type="space", commit_message="Deploy AgentDeck with ui.deploy")
    base = (endpoint or api.endpoint).rstrip("/")
    return f"{base}/spaces/{space}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.deploy", description=__doc__.split("\n\n")[0])
    parser.add_argument("space", help="the Space id, user/name")
    parser.add_argument("--dry-run", action="store_true", help="print what would be uploaded and set, change nothing")
    parser.add_argument("--bucket", help="a Storage Bucket for saved chats, mounted at /data ('auto': <space>-chats)")
    parser.add_argument("--server-token", action="store_true",
                        help="also set the Space's HF_TOKEN secret to your token (the server then pays for visitors)")
    parser.add_argument("--token", help="a Hugging Face token with write access (default: HF_TOKEN or your login)")
    parser.add_argument("--endpoint", help="the Hub's address (default: HF_ENDPOINT or the public Hub)")
    args = parser.parse_args(argv)
    try:
        deploy_plan = plan(args.space, args.bucket, args.server_token)
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Files for {deploy_plan.space} ({len(deploy_plan.files)}):")
    for rel in deploy_plan.files:
        print(f"  {rel}")
    changed = uncommitted(deploy_plan.root, deploy_plan.files)
    if changed:
        print(f"Warning: {len(changed)} of these files are not committed (the upload takes them as they are now):")
        for rel in changed:
            print(f"  {rel}")
    print("Secrets: AGENTDECK_SECRET (generated if the Space has none)"
          + (", HF_TOKEN (yours)" if deploy_plan.server_token else ""))
    if deploy_plan.bucket:
        print(f"Storage: bucket {deploy_plan.bucket} mounted at {DATA_MOUNT}; "
              f"AGENTDECK_DATA_DIR={DATA_MOUNT}/agentdeck")
    else:
        print("Storage: none (saved chats are lost when the Space restarts; add --bucket auto to keep them)")
    if args.dry_run:
        print("Dry run: nothing was changed.")
        return 0
    import os

    token = args.token or os.environ.get("HF_TOKEN") or None
    try:
        url = deploy(deploy_plan, token, args.endpoint)
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"error: the Hub refused the deployment: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"Deployed: {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
