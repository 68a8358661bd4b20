"""Cutting a streamed reply at stop sequences.

Why: some backends ignore or refuse the stop parameter, and stop strings can arrive split over
several pieces. The filter holds back just enough text to be sure no stop sequence is starting.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class StopFilter:
    """Feed it text pieces; it returns what is safe to show, and stops for good at a stop sequence."""
    stop_sequences: list[str] = field(default_factory=list)
    stopped: bool = False
    _pending: str = ""
    _emitted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stop_sequences = [s for s in (self.stop_sequences or []) if s]
        self._hold = max((len(s) for s in self.stop_sequences), default=1) - 1

    def feed(self, piece: str) -> str:
        """Return the part of the text so far that can be passed on now."""
        if self.stopped or not piece:
            return ""
        self._pending += piece
        if not self.stop_sequences:
            out, self._pending = self._pending, ""
            self._emitted.append(out)
            return out
        cut = min((i for i in (self._pending.find(s) for s in self.stop_sequences) if i != -1), default=-1)
        if cut != -1:
            out = self._pending[:cut]
            self._pending = ""
            self.stopped = True
        else:
            keep = self._longest_stop_prefix_suffix()
            out = self._pending[: len(self._pending) - keep]
            self._pending = self._pending[len(self._pending) - keep:]
        self._emitted.append(out)
        return out

    def _longest_stop_prefix_suffix(self) -> int:
        """Length of the longest end of the pending text that begins some stop sequence."""
        best = 0
        for stop in self.stop_sequences:
            for size in range(min(len(stop) - 1, len(self._pending)), best, -1):
                if self._pending.endswith(stop[:size]):
                    best = size
                    break
        return best

    def flush(self) -> str:
        """The held-back text at the end of the stream (it turned out not to be a stop sequence)."""
        if self.stopped:
            return ""
        out, self._pending = self._pending, ""
        self._emitted.append(out)
        return out

    @property
    def text(self) -> str:
        """Everything passed on so far."""
        return "".join(self._emitted)


@dataclass
class EndCutter:
    """Ends a reply right after the first match of an end pattern (e.g. a closed code block).

    Why: a tiny model rarely stops by itself once it has written its action; ending the reply at the
    pattern keeps the action and drops the made-up continuation.
    """
    patterns: list[re.Pattern[str]] = field(default_factory=list)
    done: bool = False
    _text: str = ""

    def feed(self, piece: str) -> str:
        if self.done or not piece:
            return ""
        start = len(self._text)
        self._text += piece
        for pattern in self.patterns:
            match = pattern.search(self._text)
            if match:
                self.done = True
                self._text = self._text[: max(match.end(), start)]
                return self._text[start:]
        return piece

    def cut(self, text: str) -> str:
        """The whole-text version of `feed`: `text` up to the end of the first match."""
        ends = [m.end() for m in (p.search(text) for p in self.patterns) if m]
        return text[: min(ends)] if ends else text
