"""Someone who writes the shared bucket names a file in the chat's manifest with a backslash or a `.`/empty step
(`dir\\.agentdeck`, `./x`, `a//b`): the name passes a check of its `/`-separated steps, but the app writes it as
another path (a backslash is a folder step there), e.g. the hidden `dir/.agentdeck` the mirror never keeps. The
blob is real and its hash matches, so only the name check stands in the way."""
from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

import pytest

from ui.saved.workspace_mirror import MANIFEST, MirrorError, WorkspaceMirror
from ui.session.workspace_access import DiskFiles
from ui.shared.blobs_fsspec import FsspecBlobs

KEY = "owners/" + "a" * 64 + "/" + "b" * 32


@pytest.mark.parametrize("name", ["dir\\.agentdeck", "dir\\x.py", "./x.py", "dir//x.py", "dir/x.py/"])
def test_attack_a_manifest_alias_name_writes_nothing(tmp_path: Path, name: str) -> None:
    blobs = FsspecBlobs(f"memory://mirror-{secrets.token_hex(6)}/chats")
    data = b"print('planted')\n"
    digest = hashlib.sha256(data).hexdigest()
    blobs.put(f"{KEY}/files/{digest}", data)
    blobs.put(f"{KEY}/{MANIFEST}", json.dumps({"files": {name: {"sha256": digest, "size": len(data)}}}).encode())
    folder = tmp_path / "workspace"
    folder.mkdir()
    with pytest.raises(MirrorError, match="bad entry"):
        WorkspaceMirror(blobs, KEY, 10_000).pull(DiskFiles(folder))
    assert list(folder.rglob("*")) == []
