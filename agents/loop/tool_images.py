"""Images a tool returned (web_browser's screenshot), saved in the agent's workdir so the chat shows them.

The chat learns of a file only through the typed events (the UI never reaches into the agent): a tool's image is
written as a new file in the workdir and announced as an ArtifactCreated, the step recording it in `artifacts`
like a chart the code saved. A reopened chat replays it from that record by the one mapping (agents/step_events/),
so the live and the replayed chat show the same picture at the same place: after the step's tool calls.
"""
from __future__ import annotations

import os
from pathlib import Path

from agents import step_events
from agents.loop.context import RunContext
from agents.memory import ActionStep
from agents.models.images import ImageData

#: How the saved images are named: the run, the step and the image's number within the step.
NAME_PREFIX = "tool-image-"


def save_tool_image(workdir: Path, image: ImageData, number: int, step: ActionStep, context: RunContext) -> bool:
    """Write `image` as a new file in `workdir` and emit its ArtifactCreated; False when the name is taken.

    The workdir is shared with code the agent runs (a CodeAgent's sandbox), which may have put anything at that
    name (a link, a file): the file is only ever created new, never through a link."""
    suffix = ".jpg" if image.mime == "image/jpeg" else "." + image.mime.split("/")[-1]
    relative = f"{NAME_PREFIX}{context.run_id[:8]}-{context.step}-{number}{suffix}"
    try:
        fd = os.open(Path(workdir) / relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return False  # the model may still see the image; the chat does not show it
    with os.fdopen(fd, "wb") as stream:
        stream.write(image.data)
    record_artifact(workdir, relative, len(image.data), step, context)
    return True


def record_artifact(workdir: Path, relative: str, size: int, step: ActionStep, context: RunContext) -> None:
    """Keep a file of the step (`relative` to `workdir`) in its record and emit its ArtifactCreated."""
    step.artifacts.append(relative)
    step.artifact_sizes.append(int(size or 0))
    context.emit(step_events.artifact_created(step, len(step.artifacts) - 1, Path(workdir), context.event_fields()))
