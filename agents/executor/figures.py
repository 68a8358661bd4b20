"""Matplotlib figures a step leaves: which were saved by the code itself (so they are not saved twice) and which
show anything at all (a blank one is not a chart). Runs in the worker, on the code's own matplotlib.
"""

from __future__ import annotations

import sys
from typing import Any

SAVED_MARK = "_agentdeck_saved_explicitly"


def drawn(figure: Any) -> bool:
    """Whether a figure shows something: an axes with content, or an image, text or patch of its own."""
    for axes in figure.get_axes():
        if axes.has_data() or axes.texts or axes.images or axes.patches or axes.get_title():
            return True
    return bool(figure.images or figure.texts or figure.patches or figure.lines or getattr(figure, "subfigs", None))


def track_explicit_figure_saves() -> None:
    """Wrap Figure.savefig (once, before user code runs) so figures the code saved are not saved again."""
    figure_module = sys.modules.get("matplotlib.figure")
    if figure_module is None or getattr(figure_module.Figure.savefig, "_agentdeck_wrapped", False):
        return
    original = figure_module.Figure.savefig

    def savefig(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        object.__setattr__(self, SAVED_MARK, True)
        return result

    savefig._agentdeck_wrapped = True  # type: ignore[attr-defined]  # a mark on the function object
    savefig.__doc__ = original.__doc__
    figure_module.Figure.savefig = savefig
