"""`History`: the last N samples of a per-tick signal of B characters, shared between successive states.

The runtime keeps the root trajectory of the last second and the drift-correction sums this way: a
tick writes one row instead of copying the whole window, and earlier states keep their windows.
"""
from __future__ import annotations

import numpy as np


class History:
    """The last `length` samples of a per-tick signal, `window` [B, length, C] newest last.

    The window is a view into a longer buffer; `append` writes the next row and returns a new History
    on the same buffer, so earlier Histories (earlier states) keep their windows unchanged. A buffer
    row is written once: appending to a History that is not the newest on its buffer (a state stepped
    twice), or to a full buffer, copies the window into a new buffer instead.
    """

    __slots__ = ("buffer", "end", "length", "_written")

    def __init__(self, buffer: np.ndarray, end: int, length: int, written: list):
        self.buffer, self.end, self.length, self._written = buffer, end, length, written

    @classmethod
    def filled(cls, values, length: int, spare: int | None = None) -> "History":
        """A window of `length` copies of `values` [B, C]."""
        values = np.asarray(values, dtype=float)
        spare = length if spare is None else spare
        buffer = np.empty((values.shape[0], length + spare, values.shape[1]))
        buffer[:, :length] = values[:, None]
        return cls(buffer, length, length, [length])

    @classmethod
    def from_window(cls, window, spare: int | None = None) -> "History":
        """A History whose window is `window` [B, length, C]."""
        window = np.asarray(window, dtype=float)
        length = window.shape[1]
        buffer = np.empty((window.shape[0], length + (length if spare is None else spare), window.shape[2]))
        buffer[:, :length] = window
        return cls(buffer, length, length, [length])

    @property
    def window(self) -> np.ndarray:
        return self.buffer[:, self.end - self.length:self.end]

    def rows(self, back) -> np.ndarray:
        """Samples `back` ticks before the newest (0 = newest): [B, len(back), C] or [B, C]."""
        return self.buffer[:, self.end - 1 - np.asarray(back)]

    def append(self, values) -> "History":
        if self.end < self.buffer.shape[1] and self._written[0] == self.end:
            self.buffer[:, self.end] = values
            self._written[0] = self.end + 1
            return History(self.buffer, self.end + 1, self.length, self._written)
        buffer = np.empty_like(self.buffer)
        buffer[:, :self.length - 1] = self.buffer[:, self.end - self.length + 1:self.end]
        buffer[:, self.length - 1] = values
        return History(buffer, self.length, self.length, [self.length])

    def replace(self, index, other: "History") -> "History":
        """A copy of this window whose characters `index` take `other`'s window."""
        window = np.array(self.window, copy=True)
        window[index] = other.window
        return History.from_window(window, self.buffer.shape[1] - self.length)
