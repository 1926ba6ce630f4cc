"""Easing curves shared by the pipeline and the runtime."""

from __future__ import annotations

import numpy as np


def smoothstep(low, high, value):
    t = np.clip((np.asarray(value, float) - low) / (high - low), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)
