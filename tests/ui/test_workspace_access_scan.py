"""No ui/ module but the one adapter (ui/session/workspace_access.py) opens workspace files itself (issue 27).

A module counts as touching the workspace when its code (not its docstrings) names a workspace (an identifier or
attribute with "workspace" in it) and also calls something that reaches files by path (open, os.open/stat/walk,
shutil, Path.read_bytes/write_bytes/unlink/iterdir, os.path.isfile/lexists, the descriptor helpers of
agents/executor/local/workspace_files.py). Such modules must go through `WorkspaceFiles`; the ones not moved
yet are listed below, each with why, so the list can only shrink."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = "ui/session/workspace_access.py"
NOT_MOVED_YET = {  # not moved yet (issue 27): each still reads the app's folder, kept in step by pull_workspace
    "ui/api/chats.py",  # not moved yet: the API's file list stats paths of the session's folder
    "ui/panels/bundles.py",  # moved (reads through WorkspaceFiles); still flagged: a `workspace` parameter and
    # the unlink of its own temporary zip beside the chat
    "ui/panels/exports.py",  # the export itself is written beside the chat; notebook export reads images by path
    "ui/saved/store.py",  # the saved chat's own folders (meta.json, the workspace folder made empty)
    "ui/uploads/intake.py",  # uploads are copied in by O_EXCL|O_NOFOLLOW (WorkspaceFiles.write(exclusive) is ready)
    "ui/uploads/batch.py",  # the upload quota counts the folder's bytes
    "ui/session/chat_record.py",  # creates and clears the session's folder (remove_tree), no file reads
    "ui/mcp/chats.py",  # the MCP upload staging folder (not the workspace); workspace reads are moved
}
PATH_CALLS = {"open", "lstat", "stat", "walk", "scandir", "unlink", "remove", "read_bytes", "write_bytes",
              "read_text", "write_text", "iterdir", "isfile", "lexists", "open_regular", "copyfile",
              "copyfileobj", "rmtree"}


def _touches_workspace(tree: ast.AST) -> bool:
    names_workspace, reaches_files = False, False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and "workspace" in node.id.lower():
            names_workspace = True
        elif isinstance(node, ast.Attribute) and "workspace" in node.attr.lower():
            names_workspace = True
        elif isinstance(node, ast.ImportFrom) and node.module and "local.workspace_files" in node.module:
            return True
        elif isinstance(node, ast.ImportFrom) and node.module == "agents.executor.local" \
                and any(a.name == "workspace_files" for a in node.names):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in PATH_CALLS:
                reaches_files = True
    return names_workspace and reaches_files


def offenders() -> set[str]:
    found = set()
    for path in sorted([*(ROOT / "ui").rglob("*.py"), ROOT / "app.py"]):
        rel = path.relative_to(ROOT).as_posix()
        if rel != ADAPTER and _touches_workspace(ast.parse(path.read_text(encoding="utf-8"))):
            found.add(rel)
    return found


def test_only_the_adapter_and_the_listed_modules_open_workspace_paths() -> None:
    found = offenders()
    assert found <= NOT_MOVED_YET, f"use ui/session/workspace_access.py in: {found - NOT_MOVED_YET}"


def test_the_not_moved_list_is_honest() -> None:
    stale = NOT_MOVED_YET - offenders()
    assert not stale, f"these no longer touch workspace paths: take them off NOT_MOVED_YET: {stale}"


def test_the_scan_sees_a_direct_read() -> None:
    assert _touches_workspace(ast.parse("def f(workspace):\n    return (workspace / 'a').read_bytes()\n"))
    assert not _touches_workspace(ast.parse("def f(files):\n    return files.read('a')\n"))
