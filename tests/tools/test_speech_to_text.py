"""speech_to_text: WAV decoding, and a tiny randomly initialised Whisper built offline and run through the tool."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from tools_testlib import write_wav

from agents.errors import ToolError
from tools.speech_to_text import SpeechToTextTool, load_audio, resample


def _tone(seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return 0.5 * np.sin(2 * np.pi * 440 * t)


def write_float_wav(path: Path, samples: np.ndarray, rate: int) -> Path:
    data = samples.astype("<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    path.write_bytes(b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE"
                     + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data)
    return path


# ---------------------------------------------------------------------- decoding (fast)
def test_decodes_16bit_stereo_and_8bit(tmp_path: Path) -> None:
    tone = _tone(0.5, 22050)
    samples, rate = load_audio(write_wav(tmp_path / "stereo.wav", tone, rate=22050, channels=2))
    assert rate == 22050 and samples.shape == tone.shape and samples.dtype == np.float32
    assert np.allclose(samples, tone, atol=1e-3)
    eight, _ = load_audio(str(write_wav(tmp_path / "8bit.wav", tone, rate=22050, width=1)))
    assert np.allclose(eight, tone, atol=2e-2)


def test_decodes_float_wav(tmp_path: Path) -> None:
    tone = _tone(0.25, 8000)
    samples, rate = load_audio(write_float_wav(tmp_path / "float.wav", tone, 8000))
    assert rate == 8000 and np.allclose(samples, tone, atol=1e-6)


def test_resample() -> None:
    out = resample(_tone(1.0, 44100).astype(np.float32), 44100, 16000)
    assert out.shape == (16000,) and out.dtype == np.float32


def test_gradio_tuple_input() -> None:
    samples, rate = load_audio((8000, (np.ones(800) * 16384).astype(np.int16)))
    assert rate == 8000 and np.allclose(samples, 0.5)


def test_bad_inputs(tmp_path: Path) -> None:
    tool = SpeechToTextTool(model_id=str(tmp_path / "never-loaded"))
    with pytest.raises(ToolError, match="No audio file named 'missing.wav'"):
        tool(audio=str(tmp_path / "missing.wav"))
    mp3 = tmp_path / "voice.mp3"
    mp3.write_bytes(b"ID3\x03\x00\x00\x00" + b"\x00" * 100)
    with pytest.raises(ToolError, match=r"not a WAV file \(format: mp3\).*ffmpeg -i voice.mp3"):
        tool(audio=str(mp3))
    empty = write_wav(tmp_path / "empty.wav", np.zeros(0))
    with pytest.raises(ToolError, match="no samples"):
        tool(audio=str(empty))
    assert tool._pipeline is None  # the model is never loaded for bad input


def test_a_session_s_tool_reads_only_its_workspace(tmp_path: Path) -> None:
    """The tool runs in the app process: a path the model chooses must not reach the app's or another
    session's files."""
    workspace, elsewhere = tmp_path / "ws", tmp_path / "other"
    workspace.mkdir()
    elsewhere.mkdir()
    write_wav(workspace / "note.wav", np.zeros(0))
    secret = write_wav(elsewhere / "secret.wav", _tone(0.1, 8000), rate=8000)
    (workspace / "link.wav").symlink_to(secret)
    tool = SpeechToTextTool(model_id=str(tmp_path / "never-loaded")).for_workspace(workspace)
    with pytest.raises(ToolError, match="no samples"):
        tool(audio="note.wav")  # relative to the workspace
    for outside in (str(secret), "../other/secret.wav", "link.wav"):
        with pytest.raises(ToolError, match="workspace only"):
            tool(audio=outside)
    assert tool._pipeline is None


def test_constructing_does_not_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_STT_MODEL", "someone/some-model")
    tool = SpeechToTextTool()
    assert tool.model_id == "someone/some-model" and tool._pipeline is None
    assert SpeechToTextTool(model_id="x/y").model_id == "x/y"


# ---------------------------------------------------------------------- the real pipeline (slow)
@pytest.mark.slow
def test_transcribes_with_a_local_pipeline(tiny_whisper: Path, tmp_path: Path) -> None:
    tool = SpeechToTextTool(model_id=str(tiny_whisper))
    wav = write_wav(tmp_path / "speech.wav", _tone(1.5, 22050), rate=22050, channels=2)
    text = tool(audio=str(wav))
    assert isinstance(text, str) and text  # random weights: gibberish, but a string
    assert tool._pipeline is not None
    pipe = tool._pipeline
    tool(audio=wav)  # a Path works too, and the pipeline is reused
    assert tool._pipeline is pipe


@pytest.mark.slow
def test_long_audio_is_chunked(tiny_whisper: Path, tmp_path: Path) -> None:
    tool = SpeechToTextTool(model_id=str(tiny_whisper))
    wav = write_wav(tmp_path / "long.wav", _tone(45, 8000), rate=8000)
    assert isinstance(tool(audio=str(wav)), str)
    with pytest.raises(ToolError, match="at most 30s"):
        SpeechToTextTool(model_id=str(tiny_whisper), max_seconds=30)(audio=str(wav))


@pytest.mark.slow
def test_missing_model_gives_clear_error(tmp_path: Path) -> None:
    tool = SpeechToTextTool(model_id=str(tmp_path / "no-such-model"))
    wav = write_wav(tmp_path / "a.wav", _tone(0.2, 16000))
    with pytest.raises(ToolError,
                       match=r"No speech-to-text model folder at .*no-such-model.*AGENTDECK_STT_MODEL.*hf download"):
        tool(audio=str(wav))
    # a folder that exists but holds no model
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(ToolError, match=r"Could not load the speech-to-text model .*empty-model"
                                        r".*hf download.*AGENTDECK_STT_MODEL"):
        SpeechToTextTool(model_id=str(tmp_path / "empty-model"))(audio=str(wav))


def test_a_file_swapped_for_a_link_during_the_call_is_never_read(tmp_path: Path) -> None:
    """Attack: the tool runs in the app while the worker's own threads keep running. A thread swapping
    `note.wav` between a WAV in the workspace and a link to a WAV elsewhere raced the tool's check (resolve)
    against its opens by name: the app read the other file (and a link to /dev/zero there reads without end)."""
    from tests.link_swapping import swapping

    workspace, elsewhere = tmp_path / "ws", tmp_path / "other"
    workspace.mkdir()
    elsewhere.mkdir()
    secret = write_wav(elsewhere / "secret.wav", np.full(4000, 0.5), rate=8000)
    inside = write_wav(workspace / "plain.wav", np.zeros(10), rate=8000)
    tool = SpeechToTextTool(model_id=str(tmp_path / "never-loaded")).for_workspace(workspace)
    leaked = 0
    # What code in the sandbox does with a thread while the tool call waits: it runs in a process of its own.
    with swapping(workspace, "note.wav", inside, secret):
        for _ in range(2000):
            try:
                samples, _rate = load_audio(tool._read_inside_root("note.wav"))
            except (ToolError, OSError, EOFError):
                continue  # refused (the link), or a file caught mid-swap: never the other file
            leaked += int(samples.size == 4000)
    assert leaked == 0, f"the tool read the file outside the workspace {leaked} times in 2000 calls"
