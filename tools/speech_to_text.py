"""speech_to_text: transcribe a WAV file with a transformers automatic-speech-recognition pipeline.

Why: users upload voice notes or recordings and the agent needs the words. The model (a Whisper
checkpoint by default, `openai/whisper-tiny`; AGENTDECK_STT_MODEL or `model_id` to change it) is
loaded lazily on first use, so constructing the tool is free and the app starts fast. WAV files are
decoded here with the stdlib `wave` module and numpy (plus a small RIFF reader for float and
WAVE_FORMAT_EXTENSIBLE files that `wave` rejects), so ffmpeg is not needed; other formats are refused
with a message saying how to convert them.
"""
from __future__ import annotations

import copy
import io
import os
import struct
import threading
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.errors import ToolError
from agents.executor.backend import FileTooLarge
from agents.executor.local import workspace_files
from agents.tooling.base import Tool

STT_MODEL_ENV = "AGENTDECK_STT_MODEL"
DEFAULT_STT_MODEL = "openai/whisper-tiny"
_CHUNK_SECONDS = 30
#: The largest WAV file read (into the app's memory): 30 minutes of 48 kHz 16-bit stereo is 330 MB.
MAX_AUDIO_BYTES = 384 * 2**20


class SpeechToTextTool(Tool):
    """Transcribe an audio file (WAV) to text with a speech-recognition model (Whisper by default)."""

    name = "speech_to_text"
    description = (
        "Transcribes speech in an audio file to text. Give the path of a WAV file (for example an uploaded file); "
        "returns the transcript."
    )
    inputs = {"audio": {"type": "audio", "description": "Path to the WAV audio file to transcribe."}}
    output_type = "string"
    # Reads a file by a path the model chose (anywhere, unless bound to a workspace) and may download its model.
    requires_approval = True
    approval_reason = "reads an audio file and may download a speech model"

    def __init__(self, model_id: str | None = None, device: str | int | None = None,
                 max_seconds: float = 1800.0) -> None:
        super().__init__()
        self.model_id = model_id or os.environ.get(STT_MODEL_ENV, "").strip() or DEFAULT_STT_MODEL
        self.device = device
        self.max_seconds = max_seconds
        self._pipeline: Any = None
        self._lock = threading.Lock()
        self.root: Path | None = None  # when set, only files inside it can be read (a session's workspace)
        self._given_root: Path | None = None  # the same folder as named (the worker may name it so)
        self._read: Callable[[str, int], bytes] | None = None  # how a bound tool reads the workspace

    def for_workspace(self, root: str | Path,
                      read: Callable[[str, int], bytes] | None = None) -> SpeechToTextTool:
        """This tool for one session: relative paths are read from `root` and nothing outside it is opened;
        `read(relative, max_bytes)` reads them (the app's way to the session's files, whatever runs its sandbox:
        ui/session/workspace_access.py), by default by descriptor below `root`.

        Why: the tool runs in the app process, not in the sandbox, so a path chosen by the model must not
        reach the app's own files or another session's workspace."""
        bound = copy.copy(self)
        bound.root = Path(root).resolve()
        bound._given_root = Path(os.path.abspath(root))
        bound._read = read
        return bound

    def forward(self, audio: Any) -> str:
        samples, rate = load_audio(self._read_inside_root(audio))
        if samples.size == 0:
            raise ToolError("The audio file holds no samples; nothing to transcribe.")
        duration = samples.size / rate
        if duration > self.max_seconds:
            raise ToolError(f"The audio is {duration:.0f}s long; speech_to_text handles at most "
                            f"{self.max_seconds:.0f}s. Split it into shorter files.")
        pipe = self.load_pipeline()
        target_rate = int(getattr(getattr(pipe, "feature_extractor", None), "sampling_rate", 16000) or 16000)
        samples = resample(samples, rate, target_rate)
        kwargs: dict[str, Any] = {}
        if duration > _CHUNK_SECONDS:
            kwargs["chunk_length_s"] = _CHUNK_SECONDS
        try:
            result = pipe({"raw": samples, "sampling_rate": target_rate}, **kwargs)
        except Exception as exc:  # the model failing on this input is a tool failure the model can report
            raise ToolError(f"Transcription failed: {type(exc).__name__}: {exc}") from exc
        text = (result.get("text", "") if isinstance(result, dict) else str(result)).strip()
        return text or "(no speech recognized)"

    def _read_inside_root(self, audio: Any) -> Any:
        """The file's bytes, read from the workspace by descriptor: every folder and the file opened without
        following a link, a regular file only, at most MAX_AUDIO_BYTES, read once.

        Why not resolve the path, check it and open it by name: the worker's threads run during a tool call and
        can swap a checked file for a link between the check and the open (the app then read any file of the
        host it named, `/dev/zero` without end), and a second open (the WAV reader's) saw a third file."""
        if self.root is None or not isinstance(audio, (str, os.PathLike)):
            return audio
        given = Path(os.path.normpath(os.fspath(audio)))
        relative = given
        if given.is_absolute():
            base = next((root for root in (self.root, self._given_root)
                         if root is not None and given.is_relative_to(root)), None)
            if base is None:
                raise ToolError(f"speech_to_text reads files in the workspace only; {given.name!r} is outside it. "
                                "Upload the audio file to the chat first.")
            relative = given.relative_to(base)
        try:
            if self._read is not None:
                data = self._read(relative.as_posix(), MAX_AUDIO_BYTES)
                if len(data) > MAX_AUDIO_BYTES:  # the reader's word is not taken for it
                    raise FileTooLarge(f"{given.name} is over {MAX_AUDIO_BYTES:,} bytes")
            else:
                data = workspace_files.read(str(self.root), str(relative), MAX_AUDIO_BYTES)
        except FileNotFoundError:
            raise ToolError(f"No audio file named {given.name!r}; pass the path of an existing WAV file.") from None
        except FileTooLarge:
            raise ToolError(f"{given.name} is larger than {MAX_AUDIO_BYTES >> 20} MB; split it into shorter "
                            "files.") from None
        except OSError as exc:  # a link, a folder, a FIFO, a path leaving the workspace
            raise ToolError(f"speech_to_text reads regular files in the workspace only; {given.name!r} cannot be "
                            f"read ({exc.strerror or exc}). Upload the audio file to the chat first.") from None
        return WavBytes(given.name, data, given.suffix)

    def load_pipeline(self) -> Any:
        """Build the ASR pipeline on first use (thread-safe); later calls reuse it."""
        with self._lock:
            if self._pipeline is None:
                self._pipeline = self._build_pipeline()
            return self._pipeline

    def _build_pipeline(self) -> Any:
        try:
            import torch
            from transformers import pipeline
        except ImportError as exc:
            raise ToolError("speech_to_text is not available on this server (it needs the local-model packages, "
                            "requirements-local.txt, which this install does not have).") from exc
        local = Path(self.model_id).expanduser()
        if (local.is_absolute() or self.model_id.startswith((".", "~"))) and not local.is_dir():
            raise ToolError(f"No speech-to-text model folder at {str(local)!r}. Set {STT_MODEL_ENV} to a folder "
                            f"holding a Whisper checkpoint saved with save_pretrained(), or to a Hugging Face model id "
                            f"such as {DEFAULT_STT_MODEL!r} (downloaded once while online with "
                            f"`hf download {DEFAULT_STT_MODEL}`).")
        device = self.device
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            return pipeline("automatic-speech-recognition", model=self.model_id, device=device)
        except Exception as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ToolError(
                f"Could not load the speech-to-text model {self.model_id!r} ({type(exc).__name__}: {reason}). "
                f"If this machine is offline, download the model once while online, e.g. `hf download {self.model_id}` "
                f"(it is cached under ~/.cache/huggingface), or set {STT_MODEL_ENV} to a local folder holding a "
                "Whisper checkpoint saved with save_pretrained()."
            ) from exc


# ---------------------------------------------------------------------- audio decoding
class WavBytes:
    """A WAV file's bytes as read once, with its name for messages."""

    def __init__(self, name: str, data: bytes, suffix: str = "") -> None:
        self.name, self.data, self.suffix = name, data, suffix


def load_audio(audio: Any) -> tuple[Any, int]:
    """Return (mono float32 samples in [-1, 1], sampling rate) from a WAV path or a (rate, array) pair."""
    import numpy as np

    if isinstance(audio, tuple) and len(audio) == 2 and isinstance(audio[0], int):  # gradio's (rate, data)
        rate, data = audio
        return _to_mono_float(np.asarray(data)), rate
    if isinstance(audio, dict) and "raw" in audio and "sampling_rate" in audio:
        return _to_mono_float(np.asarray(audio["raw"])), int(audio["sampling_rate"])
    if not isinstance(audio, (str, os.PathLike, WavBytes)):
        raise ToolError(f"speech_to_text expects the path of a WAV file, got {type(audio).__name__}.")
    if not isinstance(audio, WavBytes):  # a path of the caller's own (not a workspace's: see _read_inside_root)
        path = Path(audio).expanduser()
        if not path.is_file():
            raise ToolError(f"No audio file named {path.name!r}; pass the path of an existing WAV file.")
        audio = WavBytes(path.name, path.read_bytes(), path.suffix)
    name, data = audio.name, audio.data
    if not (data[:4] == b"RIFF" and data[8:12] == b"WAVE"):
        kind = audio.suffix.lower().lstrip(".") or "unknown"
        stem = Path(name).stem
        raise ToolError(
            f"{name} is not a WAV file (format: {kind}); speech_to_text reads WAV only. Convert it first, e.g. "
            f"`ffmpeg -i {name} -ar 16000 -ac 1 {stem}.wav`."
        )
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            channels, width, rate = reader.getnchannels(), reader.getsampwidth(), reader.getframerate()
            frames = reader.readframes(reader.getnframes())
        return _pcm_to_float(frames, width, channels), rate
    except (wave.Error, EOFError):
        return _read_riff(name, data)  # float or WAVE_FORMAT_EXTENSIBLE files, which `wave` refuses


def _pcm_to_float(frames: bytes, width: int, channels: int) -> Any:
    import numpy as np

    if width == 1:
        data = (np.frombuffer(frames, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        data = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 3:
        raw = np.frombuffer(frames[: len(frames) // 3 * 3], dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        ints = raw[:, 0] | (raw[:, 1] << 8) | (raw[:, 2] << 16)
        ints = np.where(ints >= 1 << 23, ints - (1 << 24), ints)
        data = ints.astype(np.float32) / float(1 << 23)
    elif width == 4:
        data = np.frombuffer(frames, dtype="<i4").astype(np.float32) / float(1 << 31)
    else:
        raise ToolError(f"Unsupported WAV sample width of {width} bytes; save the file as 16-bit PCM WAV.")
    return _to_mono_float(data.reshape(-1, channels) if channels > 1 else data)


def _read_riff(name: str, data: bytes) -> tuple[Any, int]:
    """Minimal RIFF/WAVE reader for IEEE-float and WAVE_FORMAT_EXTENSIBLE files."""
    import numpy as np

    pos, fmt, samples = 12, None, None
    while pos + 8 <= len(data):
        chunk_id, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if chunk_id == b"fmt " and len(body) >= 16:
            fmt = struct.unpack("<HHIIHH", body[:16])
            if fmt[0] == 0xFFFE and len(body) >= 26:  # extensible: the real format is in the sub-format GUID
                fmt = (struct.unpack("<H", body[24:26])[0],) + fmt[1:]
        elif chunk_id == b"data":
            samples = body
        pos += 8 + size + (size & 1)
    if fmt is None or samples is None:
        raise ToolError(f"{name} is not a readable WAV file (missing fmt or data chunk).")
    tag, channels, rate, _, _, bits = fmt
    if tag == 1:
        return _pcm_to_float(samples, bits // 8, channels), rate
    if tag == 3 and bits in (32, 64):
        array = np.frombuffer(samples[: len(samples) // (bits // 8) * (bits // 8)],
                              dtype="<f4" if bits == 32 else "<f8").astype(np.float32)
        return _to_mono_float(array.reshape(-1, channels) if channels > 1 else array), rate
    raise ToolError(f"{name} uses WAV encoding {tag} ({bits}-bit), which is not supported; save it as "
                    "16-bit PCM WAV (e.g. `ffmpeg -i in.wav -acodec pcm_s16le out.wav`).")


def _to_mono_float(data: Any) -> Any:
    import numpy as np

    array = np.asarray(data)
    if array.dtype.kind in "iu":
        info = np.iinfo(array.dtype)
        array = (array.astype(np.float32) - (info.min + info.max + 1) / 2) / ((info.max - info.min + 1) / 2)
    array = array.astype(np.float32)
    if array.ndim == 2:
        # (frames, channels) as decoded here; gradio also uses (frames, channels)
        array = array.mean(axis=1)
    return np.clip(array, -1.0, 1.0)


def resample(samples: Any, rate: int, target: int) -> Any:
    """Linear-interpolation resampling: good enough for speech recognition, and needs only numpy."""
    import numpy as np

    if rate == target or samples.size == 0:
        return samples.astype(np.float32)
    duration = samples.size / rate
    count = max(1, int(round(duration * target)))
    positions = np.linspace(0.0, samples.size - 1, count)
    return np.interp(positions, np.arange(samples.size), samples).astype(np.float32)
