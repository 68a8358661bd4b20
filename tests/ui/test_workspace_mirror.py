"""A chat's workspace copied into a shared chat store and brought back on another replica (workspace_mirror.py).

Each test uses two workspaces standing for two replicas' disks over one store (fsspec's memory file system, and
S3 on moto's server for the real conditional-write backend). The manifest is written as an attacker who can
write the bucket would: every bad entry is refused before a byte is written."""
from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

import pytest
from shared_servers import s3_client, s3_endpoint  # noqa: F401 (fixture)

from ui.saved.workspace_mirror import MANIFEST, MirrorError, WorkspaceMirror
from ui.session.workspace_access import DiskFiles
from ui.shared.blobs import BlobStore
from ui.shared.blobs_fsspec import FsspecBlobs
from ui.shared.blobs_s3 import S3Blobs

KEY = "owners/" + "a" * 64 + "/" + "b" * 32


@pytest.fixture(params=["fsspec", "s3"])
def blobs(request: pytest.FixtureRequest) -> BlobStore:
    if request.param == "fsspec":
        return FsspecBlobs(f"memory://mirror-{secrets.token_hex(6)}/chats")
    client = s3_client(request.getfixturevalue("s3_endpoint"))
    bucket = f"mirror-{secrets.token_hex(6)}"
    client.create_bucket(Bucket=bucket)
    return S3Blobs(f"s3://{bucket}/agentdeck", client=client)


def replica(tmp_path: Path, name: str) -> DiskFiles:
    folder = tmp_path / name / "workspace"
    folder.mkdir(parents=True)
    return DiskFiles(folder)


def test_files_pushed_on_one_replica_come_back_byte_for_byte_on_the_other(blobs: BlobStore, tmp_path: Path) -> None:
    first, second = replica(tmp_path, "one"), replica(tmp_path, "two")
    first.write("sales (1).csv", b"region,amount\nnorth,3\n")
    first.write("out/chart.png", b"\x89PNG" + bytes(range(256)))
    report = WorkspaceMirror(blobs, KEY, 10_000).push(first, first=["sales (1).csv"])
    assert sorted(report.moved) == ["out/chart.png", "sales (1).csv"] and not report.left_out

    back = WorkspaceMirror(blobs, KEY, 10_000).pull(second)
    assert sorted(back.moved) == ["out/chart.png", "sales (1).csv"] and not back.left_out
    assert second.read("sales (1).csv") == b"region,amount\nnorth,3\n"
    assert second.read("out/chart.png") == b"\x89PNG" + bytes(range(256))


def test_an_unchanged_file_is_not_sent_again_and_a_removed_one_leaves_the_store(blobs: BlobStore,
                                                                                 tmp_path: Path) -> None:
    files = replica(tmp_path, "one")
    files.write("a.csv", b"1\n")
    files.write("b.txt", b"two")
    mirror = WorkspaceMirror(blobs, KEY, 10_000)
    mirror.push(files)
    assert mirror.push(files).moved == []  # nothing changed: nothing sent
    files.remove("b.txt")
    mirror.push(files)
    assert sorted(WorkspaceMirror(blobs, KEY, 10_000).manifest()) == ["a.csv"]
    gone = hashlib.sha256(b"two").hexdigest()
    assert blobs.get(f"{KEY}/files/{gone}") is None  # its content left with it
    kept = hashlib.sha256(b"1\n").hexdigest()
    assert blobs.get(f"{KEY}/files/{kept}") is not None


def test_past_the_cap_the_uploads_are_kept_first_and_the_rest_is_named(blobs: BlobStore, tmp_path: Path) -> None:
    files = replica(tmp_path, "one")
    files.write("agent_output.bin", b"x" * 600)
    files.write("upload.csv", b"y" * 600)
    report = WorkspaceMirror(blobs, KEY, 1000).push(files, first=["upload.csv"])
    assert report.moved == ["upload.csv"] and list(report.left_out) == ["agent_output.bin"]


def test_a_file_changed_in_the_store_is_not_written_back(blobs: BlobStore, tmp_path: Path) -> None:
    files, other = replica(tmp_path, "one"), replica(tmp_path, "two")
    files.write("data.csv", b"the real data\n")
    WorkspaceMirror(blobs, KEY, 10_000).push(files)
    digest = hashlib.sha256(b"the real data\n").hexdigest()
    blobs.put(f"{KEY}/files/{digest}", b"tampered data\n")
    report = WorkspaceMirror(blobs, KEY, 10_000).pull(other)
    assert "data.csv" in report.left_out and not other.taken("data.csv")


@pytest.mark.parametrize("entry", [
    {"../escape.py": {"sha256": "0" * 64, "size": 1}},
    {"/etc/cron.d/x": {"sha256": "0" * 64, "size": 1}},
    {".bashrc": {"sha256": "0" * 64, "size": 1}},
    {"ok.csv": {"sha256": "../../owners/x/memory.json", "size": 1}},
    {"ok.csv": {"sha256": "0" * 64, "size": -1}},
    {"ok.csv": {"sha256": "0" * 64, "size": 10**12}},
    {"ok.csv": {"sha256": "0" * 64, "size": True}},
    {"ok.csv": "not an entry"},
])
def test_a_hostile_manifest_is_refused_before_anything_is_written(blobs: BlobStore, tmp_path: Path,
                                                                  entry: dict) -> None:
    blobs.put(f"{KEY}/{MANIFEST}", json.dumps({"files": entry}).encode())
    files = replica(tmp_path, "two")
    with pytest.raises(MirrorError):
        WorkspaceMirror(blobs, KEY, 10_000).pull(files)
    assert files.list() == {}
    assert not (tmp_path / "two" / "escape.py").exists()


def test_a_manifest_too_large_or_not_json_is_refused(blobs: BlobStore, tmp_path: Path) -> None:
    files = replica(tmp_path, "two")
    blobs.put(f"{KEY}/{MANIFEST}", b"{not json")
    with pytest.raises(MirrorError, match="not JSON"):
        WorkspaceMirror(blobs, KEY, 10_000).pull(files)
    blobs.put(f"{KEY}/{MANIFEST}", b" " * (3 * 1024 * 1024))
    with pytest.raises(MirrorError, match="over"):
        WorkspaceMirror(blobs, KEY, 10_000).pull(files)


def test_a_local_file_of_the_same_size_is_left_alone(blobs: BlobStore, tmp_path: Path) -> None:
    files, other = replica(tmp_path, "one"), replica(tmp_path, "two")
    files.write("notes.txt", b"from one")
    WorkspaceMirror(blobs, KEY, 10_000).push(files)
    other.write("notes.txt", b"here two")  # the same size, edited here since: this replica's copy stands
    assert WorkspaceMirror(blobs, KEY, 10_000).pull(other).moved == []
    assert other.read("notes.txt") == b"here two"
