"""Cutting a streamed reply at stop sequences.

Why: some backends ignore or refuse the stop parameter, and stop strings can arrive split over
several pieces. The filter holds back just enough text to be sure no stop sequence is starting.
"""
from __future__ import annotations

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
