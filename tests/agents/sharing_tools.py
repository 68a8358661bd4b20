"""Tools defined at a module's top level, as a team would write them to share (tests/agents/test_sharing_*.py)."""
from __future__ import annotations

import math

from agents import Tool, tool

#: A constant the shared file carries with it (a test changes it here after saving).
SCALE = 2.5


@tool
def scale(x: float, digits: int = 2) -> float:
    """Multiply a number by the scale.

    Args:
        x: The number.
        digits: Decimals to round to.
    """
    return round(x * SCALE * math.floor(1.5), digits)


class Greeter(Tool):
    """A Tool subclass: shared as its class, made again without arguments."""

    name = "greet"
    description = "Greets someone by name."
    inputs = {"who": {"type": "string", "description": "Whom to greet."}}
    output_type = "string"

    def forward(self, who: str) -> str:
        return f"Hello, {who}!"


def _helper(text: str) -> str:
    return text.upper()


@tool
def shout(text: str) -> str:
    """Say it loudly.

    Args:
        text: What to say.
    """
    return _helper(text)  # a helper next to the tool: not shareable as it is


class NeedsArguments(Tool):
    name = "needs_arguments"
    description = "Made with an argument."
    inputs = {}
    output_type = "string"

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        super().__init__()

    def forward(self) -> str:
        return self.prefix
