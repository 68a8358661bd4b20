"""Images an action step produced (charts the code saved or showed, images a tool returned), given to a vision
model with the next step, within a budget.

Why at prompt time: the memory keeps every observation's images (its prompt stays append-only, and a saved chat
keeps what the model saw), while each prompt sends only those the agent's `observation_images` setting picks:
"latest" (the newest step's), "all" (newest first), or "none". The others are replaced by a one-line note. A
prompt without images is returned as it is, so runs without images pay nothing for this.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.errors import ConfigurationError, ImageRefusedError
from agents.models.base import Message
from agents.models.images import (
    IMAGE_SUFFIXES,
    OBSERVATION_IMAGES_KEY,
    ImageData,
    ImageLimits,
    image_parts,
    part_bytes,
    read_image_file,
)

OBSERVATION_IMAGE_MODES = ("none", "latest", "all")
LEFT_OUT_NOTE = "[An image from this step is no longer shown, to keep the prompt small.]"


@dataclass(frozen=True)
class ObservationImageBudget:
    """At most `max_images` observation images in one prompt, `max_bytes` of image data (base64) in all; each
    image held to `limits`."""
    max_images: int = 4
    max_bytes: int = 8 * 1024 * 1024
    limits: ImageLimits = ImageLimits()


def check_mode(mode: str) -> str:
    if mode not in OBSERVATION_IMAGE_MODES:
        raise ConfigurationError(f"observation_images must be one of {', '.join(OBSERVATION_IMAGE_MODES)}, "
                                 f"not {mode!r}.")
    return mode


def images_for_prompt(messages: list[Message], marked: int, mode: str,
                      budget: ObservationImageBudget) -> list[Message]:
    """`messages` with the observation images the mode and budget keep; `marked` is how many observation
    messages carry images (the memory counts them as steps are recorded): none, and the list is returned as is."""
    if not marked:
        return messages
    keep: set[int] = set()
    count, size = 0, 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not message.get(OBSERVATION_IMAGES_KEY):
            continue
        parts = image_parts(message)
        cost = sum(part_bytes(p) for p in parts)
        fits = mode != "none" and count + len(parts) <= budget.max_images and size + cost <= budget.max_bytes
        if fits and (mode == "all" or not keep):
            keep.add(index)
            count, size = count + len(parts), size + cost
        if mode == "latest":
            break
    out = list(messages)
    for index, message in enumerate(messages):
        if message.get(OBSERVATION_IMAGES_KEY) and index not in keep:
            out[index] = _without_images(message)
    return out


def _without_images(message: Message) -> Message:
    content = message.get("content")
    texts = [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"] \
        if isinstance(content, list) else [str(content or "")]
    return {**message, "content": "\n".join([*texts, LEFT_OUT_NOTE])}


def observation_message(text: str, images: list[ImageData]) -> Message:
    """The user message of an observation: its text, then its images (marked for `images_for_prompt`)."""
    if not images:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text}, *(i.part() for i in images)],
            OBSERVATION_IMAGES_KEY: True}


def image_names(workdir: Path, artifacts: list[Any]) -> list[str]:
    """The workspace names of the image files among a step's artifacts (charts saved or shown)."""
    paths = (str(getattr(artifact, "path", artifact)) for artifact in artifacts)
    return [os.path.relpath(path, workdir) if os.path.isabs(path) else path
            for path in paths if path.lower().endswith(IMAGE_SUFFIXES)]


def artifact_images(workdir: Path, artifacts: list[Any], budget: ObservationImageBudget,
                    room: int) -> tuple[list[ImageData], list[str]]:
    """The image files among a step's artifacts (PNG, JPEG, WebP, GIF), read safely from the workspace (the
    worker may have made them links or bombs), at most `budget.max_images` and `room` bytes (base64) in all; and
    a note for each one refused."""
    images: list[ImageData] = []
    notes: list[str] = []
    for artifact in artifacts:
        path = str(getattr(artifact, "path", artifact))
        if not path.lower().endswith(IMAGE_SUFFIXES):
            continue
        name = os.path.relpath(path, workdir) if os.path.isabs(path) else path
        if len(images) >= budget.max_images:
            notes.append(f"{name}: not shown to you (at most {budget.max_images} images per step).")
            continue
        try:
            image = read_image_file(workdir / name, budget.limits, inside=workdir)
        except ImageRefusedError as exc:
            notes.append(f"{name}: not shown to you ({exc})")
            continue
        size = len(image.data_url())
        if size > room:
            notes.append(f"{name}: not shown to you (this conversation holds as many images as it may).")
            continue
        room -= size
        images.append(ImageData(image.data, image.mime, image.width, image.height, name))
    return images, notes
