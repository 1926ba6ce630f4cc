"""The window's pixels for a video without stalling the frame loop: two pixel buffer objects in turn.

Frame N's read is started into one buffer (`glReadPixels` into a bound pixel-pack buffer returns at
once on a GPU) and that buffer is mapped at frame N+1, after N+1's read has been started into the
other one: by then the GPU has long finished frame N, so mapping it does not wait.

What is read depends on the GL. On a GPU the picture is first converted to the encoder's yuv420p by a
shader pass (`yuv_conversion.py`): half the bytes of RGB to read, no colour conversion left for the
encoder's CPU. A software rasteriser would pay more for that pass (10-28 ms of CPU per 1280x720
frame with llvmpipe, on the frame loop) than ffmpeg pays for the conversion (about 6 ms, on idle
CPU), so there the pixels are read as RGBA, the GL's own layout: a plain copy, about half the cost
of packing RGB.
"""

import numpy as np

from app.jobs.video_file import Yuv420Frame
from app.render.programs import is_software_renderer


def convert_on_gpu_by_default(ctx) -> bool:
    """The colour conversion on the GPU unless the GL is a software rasteriser (see the module's words)."""
    return not is_software_renderer(ctx)


class PixelReader:
    """`read(size, tag)` starts this frame's read and returns the previous frame's `(frame, tag)` (None
    on the first frame); `finish()` returns the frame still in a buffer. A frame is a `Yuv420Frame` of
    the video's size (the even part of the first size read; later pictures are cropped or padded with
    black) when `convert_on_gpu`, else RGBA pixels [H, W, 4], top row first (a view: the caller copies
    off the frame loop). `source`: the framebuffer read (the window's by default)."""

    def __init__(self, ctx, convert_on_gpu: bool | None = None, source=None):
        self.ctx, self.source = ctx, source
        if convert_on_gpu is None:
            convert_on_gpu = convert_on_gpu_by_default(ctx)
        self.conversion = None
        if convert_on_gpu:
            from app.jobs.yuv_conversion import Yuv420Pass

            self.conversion = Yuv420Pass(ctx)
        self.video_size = None  # (width, height) of a converted frame, fixed by the first read
        self.buffers, self.size = [], None
        self.next = 0
        self.pending = None  # (buffer index, size, tag) of the frame whose read was started last

    def read(self, size: tuple[int, int], tag=None):
        size = (int(size[0]), int(size[1]))
        if self.video_size is None:
            self.video_size = (size[0] - size[0] % 2, size[1] - size[1] % 2)
        if self._bytes(size) != self._bytes(self.size):  # a resized window: the frame still in a buffer first
            earlier = self.finish()
            self._allocate(size)
            self._start(size, tag)
            return earlier
        older = self.pending
        self._start(size, tag)
        return self._map(*older) if older is not None else None

    def _bytes(self, size) -> int:
        if size is None:
            return 0
        if self.conversion is not None:
            return self.video_size[0] * self.video_size[1] * 3 // 2
        return size[0] * size[1] * 4

    def _start(self, size, tag) -> None:
        width, height = size
        source = self.source or self.ctx.screen
        buffer = self.buffers[self.next]
        if self.conversion is not None:
            planes = self.conversion.draw(source, size, self.video_size)
            _ = self.ctx.error  # see below: the blit from the window's buffer, as the read
            planes.read_into(buffer, viewport=planes.viewport, components=1, alignment=1)
        else:
            source.read_into(buffer, viewport=(0, 0, width, height), components=4, alignment=1)
        # headless EGL surfaces reject the read-buffer selection yet return the right pixels; clear the
        # stale error so PyOpenGL (the panel's renderer) does not report it later
        _ = self.ctx.error
        self.pending = (self.next, size, tag)
        self.next ^= 1

    def finish(self):
        """The last frame read (its `(frame, tag)`), or None."""
        pending, self.pending = self.pending, None
        return self._map(*pending) if pending is not None else None

    def release(self) -> None:
        for buffer in self.buffers:
            buffer.release()
        self.buffers, self.size, self.pending = [], None, None
        if self.conversion is not None:
            self.conversion.release()
            self.conversion = None

    def _allocate(self, size) -> None:
        for buffer in self.buffers:
            buffer.release()
        self.buffers = [self.ctx.buffer(reserve=self._bytes(size)) for _ in range(2)]
        self.size, self.next = size, 0

    def _map(self, index: int, size, tag):
        data = np.frombuffer(self.buffers[index].read(), np.uint8)
        if self.conversion is not None:
            return Yuv420Frame(data, *self.video_size), tag
        width, height = size
        return data.reshape(height, width, 4)[::-1], tag
