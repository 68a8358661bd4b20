"""Uploaded pictures: checked on arrival (header only; bombs and fakes refused) and offered to a vision model."""
from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from agents import CodeAgent, ReplayModel
from agents.models.images import image_parts
from ui.session.session import Session
from ui.settings import RunSettings
from ui.uploads.intake import ingest_upload

SETTINGS = RunSettings(model="replay:none")


def png(size=(6, 4)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, "red").save(buffer, format="PNG")
    return buffer.getvalue()


def bomb(width: int = 60_000, height: int = 60_000) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + chunk(b"IEND", b"")


def test_a_picture_upload_is_previewed_and_a_bomb_refused(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    good = tmp_path / "in" / "photo.png"
    good.write_bytes(png())
    result = ingest_upload(good, tmp_path / "ws")
    assert result.ok and result.kind == "image" and result.preview == "PNG image, 6 x 4 pixels."
    assert (tmp_path / "ws" / "photo.png").read_bytes() == png()
    bad = tmp_path / "in" / "huge.png"
    bad.write_bytes(bomb())
    refused = ingest_upload(bad, tmp_path / "ws")
    assert not refused.ok and "refused before decoding" in (refused.error or "")
    assert not (tmp_path / "ws" / "huge.png").exists()
    fake = tmp_path / "in" / "fake.jpg"
    fake.write_bytes(b"MZ\x90\x00 a program, not a picture")
    assert "not a PNG, JPEG, WebP or GIF" in (ingest_upload(fake, tmp_path / "ws").error or "")
    large = tmp_path / "in" / "large.png"
    large.write_bytes(png((300, 300)))
    assert "too large" in (ingest_upload(large, tmp_path / "ws", max_bytes=100).error or "")


def _session(tmp_path: Path, model: ReplayModel) -> tuple[Session, list[CodeAgent]]:
    made: list[CodeAgent] = []

    def factory(settings: RunSettings, workspace: Path) -> CodeAgent:
        made.append(CodeAgent(model=model, workdir=workspace, verbosity=0))
        return made[-1]

    return Session("tab", tmp_path / "s", agent_factory=factory, max_upload_bytes=10**6), made


def test_an_uploaded_picture_goes_to_a_vision_model_with_the_message(tmp_path: Path) -> None:
    upload = tmp_path / "photo.png"
    upload.write_bytes(png())
    model = ReplayModel(["```python\nfinal_answer('red')\n```"])
    session, made = _session(tmp_path, model)
    try:
        assert session.start_run("What colour is it?", [(str(upload), "photo.png")], SETTINGS)
        for _ in session.drain():
            pass
        task = model.calls[0][-1]
        assert len(image_parts(task)) == 1 and "photo.png" in task["content"][0]["text"]
    finally:
        session.close()
        for agent in made:
            agent.close()


def test_a_text_only_model_gets_the_file_and_the_person_a_note(tmp_path: Path) -> None:
    upload = tmp_path / "photo.png"
    upload.write_bytes(png())
    model = ReplayModel(["```python\nfinal_answer('no idea')\n```"], model_id="text-model", supports_images=False)
    session, made = _session(tmp_path, model)
    try:
        assert session.start_run("What colour is it?", [(str(upload), "photo.png")], SETTINGS)
        for _ in session.drain():
            pass
        assert isinstance(model.calls[0][-1]["content"], str)
        assert any("'text-model' cannot see images" in str(root.parts) for root in session.record.transcript.roots)
    finally:
        session.close()
        for agent in made:
            agent.close()


def _picture(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (6, 4), "blue").save(buffer, format=fmt)
    return buffer.getvalue()


def gif_bomb(width: int = 65_535, height: int = 65_535) -> bytes:
    """A GIF whose screen and one frame claim 65535 x 65535 pixels, with almost no data."""
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0) + frame + b"\x3b"


@pytest.mark.parametrize(("fmt", "name", "mime"), [("GIF", "picture.gif", "image/gif"),
                                                   ("WEBP", "photo.webp", "image/webp"),
                                                   ("JPEG", "photo.jpeg", "image/jpeg")])
def test_gif_webp_and_jpeg_uploads_reach_a_vision_model_as_they_came(tmp_path: Path, fmt: str, name: str,
                                                                     mime: str) -> None:
    data = _picture(fmt)
    upload = tmp_path / name
    upload.write_bytes(data)
    preview = ingest_upload(upload, tmp_path / "ws")
    kind = mime.split("/")[1].upper()
    assert preview.ok and preview.kind == "image" and preview.preview == f"{kind} image, 6 x 4 pixels."
    model = ReplayModel(["```python\nfinal_answer('blue')\n```"])
    session, made = _session(tmp_path, model)
    try:
        assert session.start_run("What colour is it?", [(str(upload), name)], SETTINGS)
        for _ in session.drain():
            pass
        parts = image_parts(model.calls[0][-1])
        assert [p["image_url"]["url"] for p in parts] == [f"data:{mime};base64,{base64.b64encode(data).decode()}"]
    finally:
        session.close()
        for agent in made:
            agent.close()


def test_a_gif_bomb_upload_is_refused_before_decoding(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    bad = tmp_path / "in" / "huge.gif"
    bad.write_bytes(gif_bomb())
    refused = ingest_upload(bad, tmp_path / "ws")
    assert not refused.ok and "refused before decoding" in (refused.error or "")
    assert not (tmp_path / "ws" / "huge.gif").exists()
