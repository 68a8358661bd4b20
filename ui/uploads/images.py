"""Uploaded pictures (PNG, JPEG, WebP, GIF): checked when they arrive, and offered to a vision model with the
message that brought them.

Why the header only: the upload is a visitor's and hostile. `agents.models.images` reads just the header (no
decoding), so a decompression bomb or a file that is not the picture its name says is refused with a clear
message before anything else reads it; the bytes go to the provider as they are.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.errors import ImageRefusedError
from agents.executor.backend import FileTooLarge
from agents.models.images import (
    IMAGE_SUFFIXES,
    MAX_IMAGE_BYTES,
    MAX_MEMORY_IMAGE_BYTES,
    ImageData,
    ImageLimits,
    inspect_image,
    read_image_file,
)
from ui.session.workspace_access import WorkspaceFiles

IMAGE_KIND = "image"


def is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def image_preview(path: str | Path, max_bytes: int) -> str:
    """The preview of an uploaded picture (its format and size), or ImageRefusedError saying why it is refused."""
    image = read_image_file(path, ImageLimits(max_bytes=min(max_bytes, MAX_IMAGE_BYTES)))
    return f"{image.mime.split('/')[1].upper()} image, {image.width} x {image.height} pixels."


def images_for_model(results: Sequence[Any], agent: Any, files: WorkspaceFiles) -> tuple[list[ImageData], list[str]]:
    """The message's pictures for the agent's model (read again from the workspace copy, through `files`:
    ui/session/workspace_access.py, no link at any depth, capped), and notes for the
    person: a model that reads no images is given none (its code can still open the files), nor is a chat that
    holds as many images as it may."""
    model = getattr(agent, "model", None)
    pictures = [r for r in results if getattr(r, "ok", False) and r.kind == IMAGE_KIND and r.path is not None]
    if not pictures:
        return [], []
    if not getattr(model, "supports_images", False):
        names = ", ".join(r.safe_name or r.original_name for r in pictures)
        return [], [f"The model '{getattr(model, 'model_id', 'model')}' cannot see images: {names} is only in the "
                    "workspace, for its code. Pick a vision model to show it the picture."]
    images, notes = [], []
    room = agent.image_room() if hasattr(agent, "image_room") else MAX_MEMORY_IMAGE_BYTES
    for result in pictures:
        name = result.safe_name or Path(result.path).name
        try:
            data = files.read(name, MAX_IMAGE_BYTES)
            image = inspect_image(data, name)
        except ImageRefusedError as exc:
            notes.append(f"Not shown to the model: {exc}")
            continue
        except FileTooLarge:
            notes.append(f"Not shown to the model: {name} is over {MAX_IMAGE_BYTES:,} bytes, the most an image for "
                         "the model may be. Save it smaller (fewer pixels, or JPEG).")
            continue
        except OSError as exc:
            notes.append(f"Not shown to the model: {name} cannot be read from the workspace "
                         f"({exc.strerror or exc}).")
            continue
        size = len(image.data_url())
        if size > room:
            notes.append(f"Not shown to the model: {result.safe_name} (this chat holds as many images as it may; "
                         "start a new chat to show it more).")
            continue
        room -= size
        images.append(image)
    return images, notes
