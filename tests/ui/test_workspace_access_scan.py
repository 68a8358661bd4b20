"""No ui/ module (nor a tool acting for the app) reaches a session's workspace files but through the one adapter,
ui/session/workspace_access.py (issue 27).

The scan is two-tiered, so a module cannot slip past by not naming the workspace:
- every module that reaches any file by path (open(), os.* and os.path.* file calls, shutil, Path's file
  methods, the descriptor helpers of agents/executor/local/workspace_files.py, the project's own path readers
  such as `read_image_file` or `usage`) must be listed in ON_DISK with the folder it legitimately uses (the
  saved chats' store, the published copies, Gradio's upload temp files, the session's own folder outside the
  workspace...), or be the adapter;
- a listed module that also names a workspace (an identifier or attribute with "workspace" or "workdir") must
  be in WORKSPACE_FOLDER too, saying why it handles the workspace *folder* (made, cleared, moved) and never its
  files.
Nothing is "not moved yet": each entry is a reason."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = "ui/session/workspace_access.py"

ON_DISK = {  # module -> the folder it reaches by path, and why that is not the workspace
    "ui/api/chats.py": "a file an API caller uploaded (Gradio's upload folder) and the size of a published copy",
    "ui/chat/published_files.py": "the published copies' folder, and files of the session's folder outside the "
                                  "workspace (exports); workspace files come in as streams from WorkspaceFiles",
    "ui/chat/formatting.py": "file_digest: a file shown by a transcript without a publisher (tests, no session)",
    "ui/chat/tree.py": "file_digest for a transcript without a publisher (tests only: a session's transcript "
                       "publishes through WorkspaceFiles)",
    "ui/uploads/images.py": "image_preview reads the upload as Gradio received it; the model's copy is read "
                            "through WorkspaceFiles",
    "ui/config/table.py": "the settings file",
    "ui/deploy.py": "the project's own files, copied for a deployment",
    "ui/mcp/chats.py": "the MCP upload staging folder (a client's file before it is taken in)",
    "ui/panels/bundles.py": "the zip is written beside the chat (the session's folder), never in the workspace",
    "ui/panels/exports.py": "the export is written beside the chat (its exports folder)",
    "ui/panels/files.py": "the folder of the zip beside the chat",
    "ui/saved/data_folder.py": "the data folder's own checks",
    "ui/saved/key_change.py": "the saved chats' key file",
    "ui/saved/storage_probe.py": "a probe file in the data folder",
    "ui/saved/store.py": "the saved chats: meta.json, memory, exports, owner folders",
    "ui/saved/meta_blobs.py": "a local saved chat's meta.json (its modification time)",
    "ui/session/chat_record.py": "the session's own folder (made, moved, removed)",
    "ui/session/registry.py": "the sessions' root folder",
    "ui/shared/blobs.py": "the shared blob store's folder",
    "ui/space_requirements.py": "the Space's requirements file",
    "ui/uploads/batch.py": "the size of each file Gradio received (its upload temp folder)",
    "ui/uploads/intake.py": "the uploaded file as Gradio received it (its upload temp folder); the copy into the "
                            "workspace is WorkspaceFiles.write(exclusive=True)",
    "ui/uploads/parsing.py": "the preview child's own copy of an upload (never the workspace)",
    "ui/uploads/preview_confinement.py": "the preview child's own folder",
    "ui/uploads/preview_worker.py": "the upload copied into the preview child's private folder",
    "ui/web/gradio_compat.py": "Gradio's upload temp files and folder",
    "ui/web/run_gate.py": "a visitor's chats' folders as the app's disk holds them (their share of that disk; a "
                          "sandbox elsewhere has its own limit)",
    "tools/registry.py": "a user tools folder",
    "tools/speech_to_text.py": "a path of the caller's own when not bound to a session (bound: WorkspaceFiles)",
    "tools/user_tools.py": "the user tools folder",
}
WORKSPACE_FOLDER = {  # listed modules that name a workspace: why they touch the folder and not its files
    "ui/session/chat_record.py": "makes the session's workspace folder, empties it for a new chat (no sandbox "
                                 "then), and moves the record into a saved chat's folder",
    "ui/saved/store.py": "makes a saved chat's workspace folder and removes it with the chat",
    "ui/panels/bundles.py": "takes a WorkspaceFiles (the `workspace` parameter) and reads through it",
    "ui/mcp/chats.py": "names the workspace for relative names; files go through WorkspaceFiles (the open "
                       "session's, else DiskFiles of a saved chat no sandbox holds)",
    "ui/api/chats.py": "names the workspace for relative names; files go through WorkspaceFiles",
    "ui/uploads/intake.py": "the upload's target is a WorkspaceFiles",
    "ui/uploads/batch.py": "the quota counts the WorkspaceFiles' bytes",
    "ui/panels/files.py": "names the workspace for relative names and makes the zip's folder beside the chat; "
                          "files go through WorkspaceFiles",
}

#: Called as `os.X`, `os.path.X`, `shutil.X` (or a module alias of the descriptor helpers): any of these reach
#: files (the few pure ones, like os.path.join, are left out).
_PURE = {"join", "basename", "dirname", "splitext", "split", "normpath", "relpath", "abspath", "commonpath",
         "isabs", "getenv", "environ", "fspath", "cpu_count", "getpid", "strerror", "get_terminal_size", "urandom",
         "fsencode", "fsdecode", "expanduser", "getuid", "geteuid", "getgid", "kill", "close", "dup", "write",
         "read", "pipe", "set_blocking", "waitpid", "killpg", "getpgid", "sched_getaffinity", "times", "uname",
         "devnull", "sep", "which", "disk_usage", "terminal_size", "fchown", "fstat", "is_inside", "check_relpath"}
_MODULES = {"os", "shutil"}
_HELPERS = {"by_descriptor", "workspace_files"}  # agents/executor/local/workspace_files.py, as ui/ names it
#: Methods of pathlib.Path that reach the disk (unambiguous names).
_PATH_METHODS = {"read_bytes", "write_bytes", "read_text", "write_text", "iterdir", "glob", "rglob", "is_file",
                 "is_dir", "exists", "mkdir", "rmdir", "unlink", "symlink_to", "lstat", "samefile", "hardlink_to",
                 "is_symlink"}
#: The project's own functions that read or walk files by path.
_PATH_FUNCTIONS = {"open", "usage", "remove_tree", "give_tree", "read_image_file", "file_digest", "open_regular",
                   "TreeWalk", "snapshot", "scandir", "listdir", "rmtree", "copyfile", "copyfileobj", "to_notebook",
                   "save_notebook"}


def _reaches(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _PATH_FUNCTIONS
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    os_path = isinstance(owner, ast.Attribute) and owner.attr == "path" and isinstance(owner.value, ast.Name) \
        and owner.value.id == "os"
    if os_path or (isinstance(owner, ast.Name) and owner.id in _MODULES):
        return func.attr not in _PURE
    if isinstance(owner, ast.Name) and owner.id in _HELPERS:
        return func.attr not in ("is_inside", "check_relpath")
    if func.attr in _PATH_METHODS:
        return True
    if func.attr in ("stat", "open") and not call.args:  # Path.stat(), Path.open()
        return not (isinstance(owner, ast.Name) and owner.id in ("files", "self"))
    if func.attr == "open" and call.args and isinstance(call.args[0], ast.Constant) \
            and isinstance(call.args[0].value, str) and set(call.args[0].value) <= set("rwabx+t"):
        return True  # Path.open("rb")
    return func.attr in _PATH_FUNCTIONS - {"open"}


#: Names of the adapter itself (its type, its module, the record's listing through it): not a workspace path.
_ADAPTER_NAMES = {"WorkspaceFiles", "workspace_access", "workspace_files"}


def _names_workspace(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
            node.arg if isinstance(node, ast.arg) else ""
        if name not in _ADAPTER_NAMES and ("workspace" in name.lower() or "workdir" in name.lower()):
            return True
    return False


def reaches_files(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and _reaches(node) for node in ast.walk(tree))


def scanned(root: Path) -> dict[str, ast.AST]:
    paths = [*(root / "ui").rglob("*.py"), *(root / "tools").rglob("*.py"), root / "app.py"]
    return {p.relative_to(root).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(paths)
            if p.exists()}


def offenders(root: Path = ROOT) -> tuple[set[str], set[str]]:
    """(modules reaching files by path that ON_DISK does not list, listed ones naming a workspace that
    WORKSPACE_FOLDER does not list)."""
    unlisted, naming = set(), set()
    for rel, tree in scanned(root).items():
        if rel == ADAPTER or not reaches_files(tree):
            continue
        if rel not in ON_DISK:
            unlisted.add(rel)
        elif _names_workspace(tree) and rel not in WORKSPACE_FOLDER:
            naming.add(rel)
    return unlisted, naming


def test_every_module_reaching_files_by_path_says_which_folder_and_why() -> None:
    unlisted, naming = offenders()
    assert not unlisted, f"use ui/session/workspace_access.py (or list the folder and why in ON_DISK): {unlisted}"
    assert not naming, f"these name a workspace and reach files by path: use WorkspaceFiles: {naming}"


def test_the_lists_are_honest() -> None:
    reaching = {rel for rel, tree in scanned(ROOT).items() if reaches_files(tree)}
    stale = {rel for rel in ON_DISK if rel not in reaching and "none" not in ON_DISK[rel]}
    assert not stale, f"these no longer reach files by path: take them off ON_DISK: {stale}"
    assert set(WORKSPACE_FOLDER) <= set(ON_DISK)
    trees = scanned(ROOT)
    not_naming = {rel for rel in WORKSPACE_FOLDER if not _names_workspace(trees[rel])}
    assert not not_naming, f"these name no workspace: take them off WORKSPACE_FOLDER: {not_naming}"
    assert not any("not moved" in why for why in [*ON_DISK.values(), *WORKSPACE_FOLDER.values()])


def test_the_scan_sees_a_planted_direct_read(tmp_path: Path) -> None:
    for source in ("def f(workspace):\n    return (workspace / 'a').read_bytes()\n",
                   "import os\ndef f(path):\n    return os.path.isfile(path)\n",
                   "def f(path):\n    with open(path, 'rb') as h:\n        return h.read()\n",
                   "import os\ndef f(path):\n    return os.open(path, os.O_RDONLY)\n",
                   "import shutil\ndef f(a, b):\n    shutil.copyfile(a, b)\n",
                   "from pathlib import Path\ndef f(p):\n    return Path(p).stat().st_size\n",
                   "def f(p):\n    return read_image_file(p)\n",
                   "from agents.executor.local import workspace_files\n"
                   "def f(r, p):\n    return workspace_files.read(r, p, 9)\n"):
        assert reaches_files(ast.parse(source)), source
    assert not reaches_files(ast.parse("def f(files):\n    return files.read('a'), files.stat('a')\n"))
    assert not reaches_files(ast.parse("import os\ndef f(a):\n    return os.path.join(a, 'b').replace('/', '-')\n"))
    # planted in a copy of the tree, the whole scan fails on it
    (tmp_path / "ui" / "chat").mkdir(parents=True)
    (tmp_path / "ui" / "chat" / "planted.py").write_text(
        "import os\ndef shown(path):\n    return os.path.getsize(path)\n", encoding="utf-8")
    assert offenders(tmp_path)[0] == {"ui/chat/planted.py"}
