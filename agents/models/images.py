"""Images for a model: checked, held to size and pixel limits, and written as a message's `image_url` parts.

Why only the header is read: images come from people (uploads, `run(images=...)`) and from the sandbox's worker
(charts, screenshots), which is hostile. Pillow's lazy `open` reads the header alone, so the format and the
pixel count are known before anything is decoded: a decompression bomb (a small file that claims a huge
picture) is refused there, and the bytes go to the provider as they are (the app never decodes them).
"""
from __future__ import annotations

import base64
import io
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.errors import ImageRefusedError
from agents.models.base import Message

#: The formats every vision provider reads, by Pillow's name, with their MIME type.
IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")
#: Per image. 5 MB is the smallest cap among the big providers (Anthropic's).
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: All the images one memory may hold (base64 characters): a saved chat holds them (its document's cap is 64 MB).
MAX_MEMORY_IMAGE_BYTES = 24 * 1024 * 1024
#: Per image: about 8192 x 4096. A header claiming more is refused before decoding (decompression bombs).
MAX_IMAGE_PIXELS = 33_554_432


@dataclass(frozen=True)
class ImageLimits:
    max_bytes: int = MAX_IMAGE_BYTES
    max_pixels: int = MAX_IMAGE_PIXELS


@dataclass(frozen=True)
class ImageData:
    """A checked image: its bytes as they came, their MIME type and the size its header declares."""
    data: bytes
    mime: str
    width: int
    height: int
    name: str = ""

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def part(self) -> dict[str, Any]:
        """The OpenAI-style content part (litellm and huggingface_hub both read it)."""
        return {"type": "image_url", "image_url": {"url": self.data_url()}}


@dataclass(frozen=True)
class TextAndImage:
    """A tool's output that is text for the model and an image it may be shown with it (a browser's page and its
    screenshot). Where only text can go (events, sandboxed code) it is its text."""
    text: str
    image: ImageData

    def __str__(self) -> str:
        return self.text


def _label(name: str) -> str:
    return f"image {name!r}" if name else "the image"


def inspect_image(data: bytes, name: str = "", limits: ImageLimits = ImageLimits()) -> ImageData:
    """Check `data` without decoding it: size, format (from the content, not the name), declared pixels."""
    if len(data) > limits.max_bytes:
        raise ImageRefusedError(f"{_label(name)} is {len(data):,} bytes; images for the model may be at most "
                                f"{limits.max_bytes:,} bytes. Save it smaller (fewer pixels, or JPEG).")
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's own bomb warning: the check below says it clearly
            with Image.open(io.BytesIO(data)) as image:  # lazy: the header only
                fmt, (width, height) = str(image.format or ""), image.size
    except Image.DecompressionBombError:
        raise ImageRefusedError(f"{_label(name)} claims more pixels than an image may have "
                                f"({limits.max_pixels:,} at most): refused before decoding.") from None
    except UnidentifiedImageError:
        raise ImageRefusedError(f"{_label(name)} is not a PNG, JPEG, WebP or GIF image.") from None
    except (OSError, ValueError, SyntaxError) as exc:  # a damaged header
        raise ImageRefusedError(f"{_label(name)} is not a PNG, JPEG, WebP or GIF image ({exc}).") from None
    mime = IMAGE_FORMATS.get(fmt)
    if mime is None:
        raise ImageRefusedError(f"{_label(name)} is a {fmt or 'unknown'} image; the model is given PNG, JPEG, "
                                "WebP or GIF only. Convert it first.")
    if width <= 0 or height <= 0 or width * height > limits.max_pixels:
        raise ImageRefusedError(f"{_label(name)} declares {width} x {height} pixels, more than the "
                                f"{limits.max_pixels:,} an image may have: refused before decoding "
                                "(a decompression bomb, or a picture to scale down first).")
    return ImageData(data, mime, int(width), int(height), name)


def read_image_file(path: str | os.PathLike[str], limits: ImageLimits = ImageLimits(),
                    inside: str | os.PathLike[str] | None = None) -> ImageData:
    """Read and check an image file: a regular file (never through a symbolic link at its last step), its size
    checked on the open file before reading; with `inside`, a file that is not under that folder is refused
    (the worker may swap a folder of the workspace for a link)."""
    name = Path(path).name
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ImageRefusedError(f"{_label(name)} cannot be read: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as stream:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise ImageRefusedError(f"{_label(name)} is not a regular file.")
        if inside is not None:
            real = os.path.realpath(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else \
                os.path.realpath(path)
            root = os.path.realpath(inside)
            if os.path.commonpath([real, root]) != root:
                raise ImageRefusedError(f"{_label(name)} is outside the workspace.")
        if status.st_size > limits.max_bytes:
            raise ImageRefusedError(f"{_label(name)} is {status.st_size:,} bytes; images for the model may be at "
                                    f"most {limits.max_bytes:,} bytes. Save it smaller (fewer pixels, or JPEG).")
        data = stream.read(limits.max_bytes + 1)
    return inspect_image(data, name, limits)


def to_image(value: Any, limits: ImageLimits = ImageLimits()) -> ImageData:
    """An image given by a caller: a PIL image (written as PNG), a path, bytes, or an already checked one."""
    if isinstance(value, ImageData):
        return inspect_image(value.data, value.name, limits)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return inspect_image(bytes(value), "", limits)
    if isinstance(value, (str, os.PathLike)):
        return read_image_file(value, limits)
    size = getattr(value, "size", None)
    if hasattr(value, "save") and isinstance(size, tuple) and len(size) == 2:  # a PIL image, in memory
        width, height = (int(v) for v in size)
        if width * height > limits.max_pixels:
            raise ImageRefusedError(f"the image of {width} x {height} pixels has more than the "
                                    f"{limits.max_pixels:,} an image may have. Scale it down first.")
        buffer = io.BytesIO()
        image = value if getattr(value, "mode", "RGB") in ("RGB", "RGBA", "L", "LA", "P") else value.convert("RGBA")
        image.save(buffer, format="PNG")
        return inspect_image(buffer.getvalue(), "", limits)
    raise ImageRefusedError(f"{type(value).__name__} is not an image: give a PIL image, a file path or bytes.")


def is_image(value: Any) -> bool:
    """A PIL image or a checked image (a tool's return value the model may be shown)."""
    if isinstance(value, ImageData):
        return True
    size = getattr(value, "size", None)
    return hasattr(value, "save") and hasattr(value, "mode") and isinstance(size, tuple) and len(size) == 2


def with_images(text: str, images: list[ImageData]) -> str | list[dict[str, Any]]:
    """A message's content: `text` alone without images, else a text part followed by the image parts."""
    if not images:
        return text
    return [{"type": "text", "text": text}, *(image.part() for image in images)]


def image_parts(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") == "image_url"]


def images_size(messages: list[Message]) -> int:
    """The size of the image data `messages` carry (base64 characters)."""
    return sum(part_bytes(part) for message in messages for part in image_parts(message))


def part_bytes(part: dict[str, Any]) -> int:
    """The size of an image part's data (its base64 text, which is what the prompt carries)."""
    url = (part.get("image_url") or {}).get("url", "") if isinstance(part.get("image_url"), dict) else ""
    return len(str(url))


#: The message key that marks an observation message carrying images (the prompt keeps them within a budget;
#: adapters send only the known message keys, so providers never see it).
OBSERVATION_IMAGES_KEY = "observation_images"
