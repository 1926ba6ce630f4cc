"""Guards of the live runtime: what a sane tick looks like for a model, and the record of a fault.

A tick is faulty for a character when the network's output is not finite, or runs away: a root
speed far beyond the data's fastest gait, a shown joint far from the body, a fed-back joint position
or velocity far outside what a body does. The runtime (`runtime.Character`) then puts that character
back in its settled pose where it stood and records a `Fault` naming what happened and the settings
that were away from the model's defaults.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pfnn_core.math.mat3 import njit

ROOT_SPEED_FACTOR = 3.0  # a root speed this many times the data's fastest gait is a runaway
MIN_FASTEST_SPEED = 1.5  # m/s; the fastest gait assumed when a checkpoint has no gait speeds
EXTENT_FACTOR = 2.0  # a joint farther from the root than this many body extents (+ EXTENT_MARGIN) is a runaway
EXTENT_MARGIN = 0.5  # m
MAX_JOINT_SPEED = 40.0  # m/s; fed-back joint velocities beyond this are a runaway


@dataclass(frozen=True)
class TickLimits:
    max_root_speed: float  # m/s, root speed (predicted or applied)
    max_extent: float  # m, distance of a shown joint from the root
    max_joint_speed: float  # m/s, fed-back joint velocity


def tick_limits(body_extent: float, gait_speeds: dict) -> TickLimits:
    """Limits for a skeleton whose joints lie within `body_extent` (m) of its anchor along its bones,
    trained on data whose gaits reach `gait_speeds` (m/s)."""
    speeds = [float(v) for v in gait_speeds.values() if isinstance(v, (int, float))]
    fastest = max(speeds + [MIN_FASTEST_SPEED])
    return TickLimits(max_root_speed=ROOT_SPEED_FACTOR * fastest, max_extent=EXTENT_FACTOR * body_extent + EXTENT_MARGIN,
                      max_joint_speed=MAX_JOINT_SPEED)


@dataclass
class TickFault:
    """The characters [n] of one tick that faulted, with a reason each."""

    characters: np.ndarray
    reasons: list


@njit
def _measure(y, joint_pos, joint_vel, root_speed, extent, out):
    """Per character: 1 where y is finite, the largest root speed, joint distance and joint speed
    (NaN counts as infinitely large)."""
    for b in range(y.shape[0]):
        finite = 1.0
        for k in range(y.shape[1]):
            if not math.isfinite(y[b, k]):
                finite = 0.0
        speed = 0.0
        for k in range(root_speed.shape[1]):
            speed = max(speed, root_speed[b, k]) if root_speed[b, k] == root_speed[b, k] else math.inf
        reach, joint_speed = extent[b] if extent[b] == extent[b] else math.inf, 0.0
        for j in range(joint_pos.shape[1]):
            for c in range(3):
                reach = max(reach, abs(joint_pos[b, j, c])) if joint_pos[b, j, c] == joint_pos[b, j, c] else math.inf
                value = joint_vel[b, j, c]
                joint_speed = max(joint_speed, abs(value)) if value == value else math.inf
        out[b, 0], out[b, 1], out[b, 2], out[b, 3] = finite, speed, reach, joint_speed


def check_tick(y, joint_pos, joint_vel, root_speed, extent, limits: TickLimits) -> TickFault | None:
    """Per character: network output y [B, ny] finite, root speeds [B, k] (m/s), shown joints'
    `extent` [B] (m from the root) and the fed-back pose [B, J, 3] within the limits."""
    measures = np.empty((len(y), 4))
    _measure(y, np.ascontiguousarray(joint_pos), np.ascontiguousarray(joint_vel), root_speed, extent, measures)
    finite, speed, reach, joint_speed = measures.T
    bad = (finite < 1.0) | (speed > limits.max_root_speed) | (reach > limits.max_extent) \
        | (joint_speed > limits.max_joint_speed)
    if not bad.any():
        return None
    characters = np.flatnonzero(bad)
    reasons = []
    for b in characters:
        if not finite[b]:
            reasons.append("the network's output is not finite (NaN or inf)")
        elif not speed[b] <= limits.max_root_speed:
            reasons.append(f"root speed {speed[b]:.3g} m/s (limit {limits.max_root_speed:.3g}, 3x the data's fastest gait)")
        elif not reach[b] <= limits.max_extent:
            reasons.append(f"a joint {reach[b]:.3g} m from the root (limit {limits.max_extent:.3g})")
        else:
            reasons.append(f"a joint moving at {joint_speed[b]:.3g} m/s (limit {limits.max_joint_speed:.3g})")
    return TickFault(characters, reasons)


@dataclass
class Fault:
    """A fault the runtime recovered from: which characters were reset, why, and the settings then."""

    tick: int
    time_s: float  # since the character was created or reset
    characters: list
    what: str
    settings_note: str
    count: int = 1  # the same fault in consecutive ticks is counted, not repeated

    @property
    def message(self) -> str:
        if self.characters == [0]:
            who = "The character"
        elif len(self.characters) == 1:
            who = f"Character {self.characters[0]}"
        else:
            who = f"Characters {', '.join(map(str, self.characters[:8]))}" + ("..." if len(self.characters) > 8 else "")
        repeat = f" (x{self.count})" if self.count > 1 else ""
        return f"{who} reset to a standing pose at {self.time_s:.1f} s{repeat}: {self.what}. {self.settings_note}"
