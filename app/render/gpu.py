"""GPU helpers of the renderer: a growable instance buffer with the vertex arrays that read it, and the
per-pass clock the benchmarks use."""

import moderngl
import numpy as np


class InstanceStream:
    """A growable dynamic instance buffer and the vertex arrays (by name) that read it. `counts` may
    limit a pass to the first instances (capsules: the shadow pass skips the joint spheres)."""

    def __init__(self, ctx, make_vaos, stride: int):
        self._ctx, self._make_vaos, self._stride = ctx, make_vaos, stride
        self._capacity, self.buffer, self.vaos, self.count, self.counts = 0, None, {}, 0, {}

    @property
    def vao(self):
        return next(iter(self.vaos.values()))

    def upload(self, data: np.ndarray) -> int:
        data = np.ascontiguousarray(data, np.float32)
        count = len(data)
        if count > self._capacity:
            for old in [*self.vaos.values(), self.buffer]:
                if old is not None:
                    old.release()
            self._capacity = max(64, 2 * count)
            self.buffer = self._ctx.buffer(reserve=self._capacity * self._stride, dynamic=True)
            self.vaos = self._make_vaos(self.buffer)
        if count:
            self.buffer.write(data.tobytes())
        self.count, self.counts = count, {}
        return count

    def render(self, name, mode=moderngl.TRIANGLES) -> None:
        count = self.counts.get(name, self.count)
        if count:
            self.vaos[name].render(mode, instances=count)


class PassClock:
    """Waits for the GPU and appends each pass's time (ms, by `now`: wall time, or the process's CPU
    time where a software rasteriser runs in the calling thread) to `times[name]`; does nothing without
    `times`."""

    def __init__(self, ctx, times: dict | None, now):
        self._ctx, self._times, self._now = ctx, times, now
        if times is not None:
            ctx.finish()
            self._last = self._now()

    def lap(self, name: str) -> None:
        if self._times is None:
            return
        self._ctx.finish()
        now = self._now()
        self._times.setdefault(name, []).append(1000.0 * (now - self._last))
        self._last = now
