"""Transport controls of the simulation: pause, single steps, slow motion, and stepping back.

Slow motion scales the real time fed to the fixed-timestep accumulator (`pfnn_core.timestep`), so the
simulation always steps at its fixed dt and the substep cap still applies; pausing feeds it nothing.
Stepping back restores states kept in `StateHistory`, a ring of snapshots taken after every tick.
Runtime states are immutable by convention (each tick builds a new `CharacterState`), so a snapshot of
the live character is a reference, not a copy; the ring is bounded by seconds and by bytes.
"""

from collections import deque
from dataclasses import dataclass

import numpy as np

SPEED_STEPS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
MIN_SPEED, MAX_SPEED = SPEED_STEPS[0], SPEED_STEPS[-1]
HISTORY_SECONDS = 5.0
HISTORY_BYTES = 64 * 1024 * 1024  # a 64-character crowd keeps less than HISTORY_SECONDS


@dataclass
class TransportPanel:
    """What the panel and the keys edit; the viewer's simulation reads it every frame."""
    paused: bool = False
    speed: float = 1.0  # simulated seconds per real second, MIN_SPEED..MAX_SPEED
    history_s: float = 0.0  # seconds that can be stepped back now (shown in the panel)


def clamp_speed(speed: float) -> float:
    return float(np.clip(speed, MIN_SPEED, MAX_SPEED))


def next_speed(speed: float, direction: int) -> float:
    """The next step of SPEED_STEPS above (direction +1) or below (-1) `speed`."""
    if direction > 0:
        return next((s for s in SPEED_STEPS if s > speed + 1e-9), MAX_SPEED)
    return next((s for s in reversed(SPEED_STEPS) if s < speed - 1e-9), MIN_SPEED)


def scaled_real_dt(real_dt: float, transport: TransportPanel) -> float:
    """The real time the accumulator gets this frame: none while paused, scaled in slow motion."""
    return 0.0 if transport.paused else real_dt * clamp_speed(transport.speed)


def snapshot_bytes(snapshot) -> int:
    """Memory a snapshot holds: the numpy arrays reachable through its dataclasses, tuples and dicts."""
    seen, total, stack = set(), 0, [snapshot]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "__dataclass_fields__"):
            stack.extend(getattr(item, name) for name in item.__dataclass_fields__)
    return total


class StateHistory:
    """The last ticks' snapshots, newest last: at most `seconds` of ticks and about `max_bytes`."""

    def __init__(self, tick_dt: float, seconds: float = HISTORY_SECONDS, max_bytes: int = HISTORY_BYTES):
        self.tick_dt, self.seconds, self.max_bytes = tick_dt, seconds, max_bytes
        self.snapshots: deque = deque()
        self.capacity = max(2, int(round(seconds / tick_dt)))

    def __len__(self) -> int:
        return len(self.snapshots)

    @property
    def seconds_back(self) -> float:
        """How far back the oldest snapshot is from the newest."""
        return max(len(self.snapshots) - 1, 0) * self.tick_dt

    def clear(self) -> None:
        self.snapshots.clear()

    def push(self, snapshot) -> None:
        if not self.snapshots:  # the first one sizes the ring (every tick of one source costs the same)
            per_tick = max(snapshot_bytes(snapshot), 1)
            self.capacity = max(2, min(int(round(self.seconds / self.tick_dt)), self.max_bytes // per_tick))
        self.snapshots.append(snapshot)
        while len(self.snapshots) > self.capacity:
            self.snapshots.popleft()

    def step_back(self, ticks: int = 1):
        """Drop the newest `ticks` snapshots and return the one now newest (None when there is no
        older one: the oldest stays, so stepping back stops there)."""
        if len(self.snapshots) < 2:
            return None
        for _ in range(min(ticks, len(self.snapshots) - 1)):
            self.snapshots.pop()
        return self.snapshots[-1]
