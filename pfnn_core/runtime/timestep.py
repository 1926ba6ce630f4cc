"""Fixed-timestep accumulator: the simulation always steps at `dt`, rendering interpolates.

A frame's real elapsed time is accumulated; whole steps of `dt` are taken from it, at most
`max_substeps` per frame. Time beyond the cap is dropped (a long hitch makes the world pause,
it never makes the next frames run ever more steps: no "spiral of death").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Rounding slack so that e.g. three frames of dt/3 still make exactly one step.
_STEP_EPSILON = 1e-9


@dataclass
class FixedTimestep:
    dt: float = 1.0 / 60.0  # simulation step, seconds
    max_substeps: int = 4  # most simulation steps per rendered frame
    accumulator: float = 0.0  # real time not yet simulated, seconds, in [0, dt)
    dropped_time: float = 0.0  # total real time discarded by the substep cap, seconds

    def __post_init__(self) -> None:
        if not self.dt > 0.0:
            raise ValueError(f"dt must be positive, got {self.dt}")
        if self.max_substeps < 1:
            raise ValueError(f"max_substeps must be >= 1, got {self.max_substeps}")

    def advance(self, real_dt: float) -> int:
        """Add a frame's real elapsed time; return how many simulation steps to run now."""
        if real_dt < 0.0 or not math.isfinite(real_dt):
            raise ValueError(f"real_dt must be a finite non-negative number, got {real_dt}")
        self.accumulator += real_dt
        n_steps = int(math.floor(self.accumulator / self.dt + _STEP_EPSILON))
        if n_steps > self.max_substeps:
            n_steps = self.max_substeps
        self.accumulator = max(self.accumulator - n_steps * self.dt, 0.0)
        if self.accumulator >= self.dt * (1.0 - _STEP_EPSILON):
            # Over the cap: keep only the fraction of a step, drop the rest.
            kept = math.fmod(self.accumulator, self.dt)
            if kept >= self.dt * (1.0 - _STEP_EPSILON):
                kept = 0.0
            self.dropped_time += self.accumulator - kept
            self.accumulator = kept
        return n_steps

    @property
    def alpha(self) -> float:
        """Render interpolation factor in [0, 1) between the previous and the latest sim state."""
        return min(max(self.accumulator / self.dt, 0.0), math.nextafter(1.0, 0.0))

    def reset(self) -> None:
        self.accumulator = 0.0
        self.dropped_time = 0.0
