"""The window's pixels for a video without stalling the frame loop: two pixel buffer objects in turn.

Frame N's read is started into one buffer (`glReadPixels` into a bound pixel-pack buffer returns at
once on a GPU) and that buffer is mapped at frame N+1, after N+1's read has been started into the
other one: by then the GPU has long finished frame N, so mapping it does not wait.
"""

import numpy as np


class PixelReader:
    """`read(size, tag)` starts this frame's read and returns the previous frame's `(pixels, tag)`
    (None on the first frame); `finish()` returns the frame still in a buffer. Pixels are RGB [H, W, 3],
    top row first (a view: the caller copies off the frame loop)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.buffers, self.size = [], None
        self.next = 0
        self.pending = None  # (buffer index, size, tag) of the frame whose read was started last

    def read(self, size: tuple[int, int], tag=None):
        size = (int(size[0]), int(size[1]))
        if size != self.size:  # a resized window: the frame still in a buffer is taken out first
            earlier = self.finish()
            self._allocate(size)
            self._start(size, tag)
            return earlier
        older = self.pending
        self._start(size, tag)
        return self._map(*older) if older is not None else None

    def _start(self, size, tag) -> None:
        width, height = size
        self.ctx.screen.read_into(self.buffers[self.next], viewport=(0, 0, width, height), components=3,
                                  alignment=1)
        # headless EGL surfaces reject the read-buffer selection yet return the right pixels; clear the
        # stale error so PyOpenGL (the panel's renderer) does not report it later
        _ = self.ctx.error
        self.pending = (self.next, size, tag)
        self.next ^= 1

    def finish(self):
        """The last frame read (its `(pixels, tag)`), or None."""
        pending, self.pending = self.pending, None
        return self._map(*pending) if pending is not None else None

    def release(self) -> None:
        for buffer in self.buffers:
            buffer.release()
        self.buffers, self.size, self.pending = [], None, None

    def _allocate(self, size) -> None:
        for buffer in self.buffers:
            buffer.release()
        self.buffers = [self.ctx.buffer(reserve=size[0] * size[1] * 3) for _ in range(2)]
        self.size, self.next = size, 0

    def _map(self, index: int, size, tag):
        width, height = size
        data = self.buffers[index].read()
        return np.frombuffer(data, np.uint8).reshape(height, width, 3)[::-1], tag
