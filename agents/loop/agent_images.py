"""The images a MultiStepAgent takes and gives its model: a task's images checked against the model and the
memory's room, and a step's observation images picked per prompt (agents/loop/observation_images.py).

A part of `MultiStepAgent` (agents/loop/base.py) kept apart by concept; it reads the agent's model, memory and
image settings.
"""
from __future__ import annotations

from typing import Any

from agents.errors import ImageRefusedError
from agents.loop.context import RunContext
from agents.loop.observation_images import ObservationImageBudget, images_for_prompt
from agents.memory import AgentMemory
from agents.models.base import Message, Model
from agents.models.images import MAX_MEMORY_IMAGE_BYTES, ImageData, to_image


class AgentImages:
    model: Model
    memory: AgentMemory
    observation_images: str
    observation_image_budget: ObservationImageBudget

    def images_in_prompt(self, messages: list[Message]) -> list[Message]:
        """The prompt with the observation images `observation_images` keeps (none in the memory: unchanged)."""
        return images_for_prompt(messages, self.memory.image_messages, self.observation_images,
                                 self.observation_image_budget)

    def sends_observation_images(self) -> bool:
        """Whether a step's images are given to the model at all: a vision model, and a mode other than none."""
        return self.observation_images != "none" and bool(getattr(self.model, "supports_images", False))

    def image_room(self, context: RunContext | None = None) -> int:
        """How many more bytes of images (base64) the memory may take: a saved chat holds them all."""
        pending = sum(len(image.data_url()) for image in context.observation_images) if context else 0
        return max(0, MAX_MEMORY_IMAGE_BYTES - self.memory.image_bytes - pending)

    def check_images(self, images: Any, fresh: bool = False) -> list[ImageData]:
        """The task's images, checked; refused with a clear message when the model reads no images, or when the
        memory (`fresh`: about to be reset) has no room left for them."""
        if images is None:
            return []
        if not isinstance(images, (list, tuple)):
            images = [images]
        checked = [to_image(image) for image in images]
        if checked and not getattr(self.model, "supports_images", False):
            raise ImageRefusedError(
                f"The model '{getattr(self.model, 'model_id', 'model')}' does not read images, and this task has "
                f"{len(checked)}. Choose a vision model (e.g. openai/gpt-4.1-mini, anthropic/claude-sonnet-4-5), "
                "or describe the image in words.")
        size = sum(len(image.data_url()) for image in checked)
        room = MAX_MEMORY_IMAGE_BYTES if fresh else self.image_room()
        if size > room:
            raise ImageRefusedError(
                f"These images take {size:,} bytes and this conversation may hold {room:,} more "
                f"({MAX_MEMORY_IMAGE_BYTES:,} in all, so a saved chat stays loadable). Send fewer or smaller "
                "images, or start a new chat.")
        return checked
