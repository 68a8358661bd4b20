"""Deploy AgentDeck to a Hugging Face Space: `python -m ui.deploy user/name` (or `make space SPACE=user/name`).

Needs only huggingface_hub (`make space` installs it alone in `.venv-deploy`). It uploads exactly the files the app
needs (never `data/`, the signing secret, a virtual environment, caches, tests or workspaces: the list is printed,
and `--dry-run` only prints it) and, as the Space's `requirements.txt`, `requirements-space.txt`: every package the
Space installs pinned to the versions the tests ran against. Files the project no longer has are deleted from the
Space in the same commit. The token's write access is checked before anything changes; each step says what it did
(ui/deploy_hub.py). The Space's secrets go through the API (`AGENTDECK_SECRET` generated when the Space has none;
the deployer's `HF_TOKEN` only with `--server-token`), `--private` and `--hardware` set its visibility and machine,
and `--bucket` mounts a Storage Bucket at /data so saved chats survive restarts.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from ui.deploy_hub import DATA_MOUNT, PROJECT_ROOT, DeployError, Deployment, DeployPlan
from ui.space_requirements import OUTPUT_NAME as PINNED_REQUIREMENTS
from ui.space_requirements import SpaceRequirementsError, check_current

# What the Space runs: the app, its three packages, and the files Spaces read. requirements.txt is replaced by the
# pinned requirements-space.txt (see REMAPPED).
TOP_LEVEL_FILES = ("app.py", "README.md", "LICENSE", "requirements.txt")
REMAPPED = {"requirements.txt": PINNED_REQUIREMENTS}  # path on the Space -> local file sent there
PACKAGES = ("agents", "tools", "ui")
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "data", ".venv", "node_modules"}
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".log", ".tmp")
# The Space hardware flavours huggingface_hub 2.4 knows (SpaceHardware); checked here so a typo fails before any
# request instead of after the Space was changed.
HARDWARE = ("cpu-basic", "cpu-upgrade", "zero-a10g", "t4-small", "t4-medium", "l4x1", "l4x4", "l40sx1", "l40sx4",
            "l40sx8", "a10g-small", "a10g-large", "a10g-largex2", "a10g-largex4", "a100-large", "a100x4", "a100x8",
            "rtx-pro-6000", "rtx-pro-6000x2", "rtx-pro-6000x4", "rtx-pro-6000x8")
DEFAULT_TIMEOUT = 60.0
__all__ = ["DATA_MOUNT", "DeployError", "DeployPlan", "files_to_publish", "main", "plan", "uncommitted"]


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


def plan(space: str, bucket: str | None = None, server_token: bool = False, root: Path | None = None,
         private: bool = False, hardware: str | None = None) -> DeployPlan:
    if space.count("/") != 1 or not all(part.strip() for part in space.split("/")):
        raise DeployError(f"'{space}' is not a Space id: use 'user/name' (or 'org/name').")
    if hardware is not None and hardware not in HARDWARE:
        raise DeployError(f"unknown hardware '{hardware}': use one of {', '.join(HARDWARE)}")
    if bucket == "auto":
        bucket = f"{space}-chats"
    root = PROJECT_ROOT if root is None else root
    files = files_to_publish(root)
    uploads = {rel: REMAPPED.get(rel, rel) for rel in files}
    if uploads.get("requirements.txt") == PINNED_REQUIREMENTS:
        try:
            check_current(root)  # made from this requirements.txt, every pin as in constraints.txt
        except SpaceRequirementsError as exc:
            raise DeployError(str(exc)) from exc
    return DeployPlan(space=space, files=files, bucket=bucket, server_token=server_token, root=root,
                      private=private, hardware=hardware, uploads=uploads)


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



def _timeout_client(timeout: float) -> None:
    """Give huggingface_hub's shared HTTP client a timeout (its default has none: a silent network would hang)."""
    import httpx2
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils._http import hf_request_event_hook

    set_client_factory(lambda: httpx2.Client(event_hooks={"request": [hf_request_event_hook]},
                                             follow_redirects=True, timeout=timeout))


def _default_client() -> None:
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils._http import default_client_factory

    set_client_factory(default_client_factory)


def deploy(deploy_plan: DeployPlan, token: str | None, endpoint: str | None = None, rerun: str = "",
           timeout: float = DEFAULT_TIMEOUT) -> str:
    """Check the token, then create or update the Space as planned; returns its URL. Raises DeployError."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    rerun = rerun or f"make space SPACE={deploy_plan.space}"
    _timeout_client(timeout)
    try:
        return Deployment(deploy_plan, api, token, rerun).run(api.endpoint, timeout)
    finally:
        _default_client()


def _rerun_command(args: argparse.Namespace) -> str:
    """The command that repeats this deployment, as `make space` takes it (the token left out: it is a secret)."""
    options: list[str] = []
    for flag, value in (("--bucket", args.bucket), ("--hardware", args.hardware), ("--endpoint", args.endpoint)):
        if value:
            options += [flag, value]
    options += [flag for flag, on in (("--private", args.private), ("--server-token", args.server_token)) if on]
    if args.timeout != DEFAULT_TIMEOUT:
        options += ["--timeout", f"{args.timeout:g}"]
    command = f"make space SPACE={shlex.quote(args.space)}"
    return command + (f" ARGS={shlex.quote(' '.join(shlex.quote(arg) for arg in options))}" if options else "")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m ui.deploy", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("space", help="the Space id, user/name")
    parser.add_argument("--dry-run", action="store_true", help="print what would be uploaded and set, change nothing")
    parser.add_argument("--bucket", help="a Storage Bucket for saved chats, mounted at /data ('auto': <space>-chats)")
    parser.add_argument("--server-token", action="store_true",
                        help="also set the Space's HF_TOKEN secret to your token (the server then pays for visitors)")
    parser.add_argument("--private", action="store_true",
                        help="create the Space private (an existing public Space is made private)")
    parser.add_argument("--hardware", help=f"request this hardware for the Space ({', '.join(HARDWARE[:3])}, ...)")
    parser.add_argument("--token", help="a Hugging Face token with write access (default: HF_TOKEN or your login)")
    parser.add_argument("--endpoint", help="the Hub's address (default: HF_ENDPOINT or the public Hub)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds to wait for each answer from the Hub (default {DEFAULT_TIMEOUT:g})")
    args = parser.parse_args(argv)
    try:
        deploy_plan = plan(args.space, args.bucket, args.server_token, private=args.private, hardware=args.hardware)
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Files for {deploy_plan.space} ({len(deploy_plan.files)}):")
    for rel in deploy_plan.files:
        local = deploy_plan.uploads.get(rel, rel)
        print(f"  {rel}" + (f"  (from {local}: versions pinned to constraints.txt)" if local != rel else ""))
    print("Files on the Space that are not in this list are deleted in the same commit (.gitattributes is kept).")
    changed = uncommitted(deploy_plan.root, sorted(set(deploy_plan.uploads.values())))
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
    print(f"Visibility: {'private' if deploy_plan.private else 'public when created, else unchanged'}; "
          f"hardware: {deploy_plan.hardware or 'unchanged (cpu-basic when created)'}")
    if args.dry_run:
        print("Dry run: nothing was changed.")
        return 0
    token = args.token or os.environ.get("HF_TOKEN") or None
    try:
        url = deploy(deploy_plan, token, args.endpoint, rerun=_rerun_command(args), timeout=args.timeout)
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Deployed: {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
