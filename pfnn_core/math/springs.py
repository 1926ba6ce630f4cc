"""The critically damped spring toward zero, solved exactly (compiled; inlined into the runtime's and
the matching model's kernels): inertialization's offsets and the foot pins' spring release."""
from __future__ import annotations

import math

from pfnn_core.math.mat3 import njit


@njit
def decay_offset(x, v, rate, dt):
    """An offset x with velocity v after dt of a critically damped spring toward 0 at `rate` (1/s):
    x(t) = (x0 + (v0 + rate x0) t) exp(-rate t); returns (x, v). Rate 0 keeps the velocity."""
    j1 = v + x * rate
    decay = math.exp(-rate * dt)
    return decay * (x + j1 * dt), decay * (v - j1 * rate * dt)
