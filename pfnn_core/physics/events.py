"""Pushes in drive scripts: the top-level `"events": [{"at": 2.0, "push": [30, 0, 0]}, ...]`.

`at` is the time in seconds from the drive's start; `push` an impulse in N s in world axes (x and z
horizontal, y up) applied to the chest over the tick that starts at `at` (only with `pfnn-drive
--physics`: a kinematic character has nothing to push). No MuJoCo here: scripts are parsed without it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

MAX_IMPULSE = 200.0  # N s: a larger push is refused (30 N s moves a 60 kg body at 0.5 m/s)


@dataclass(frozen=True)
class PushEvent:
    at: float  # s from the drive's start
    push: tuple[float, float, float]  # N s, world x, y, z


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_events(value, error=ValueError) -> list[PushEvent]:
    """A script's `events` value -> PushEvents sorted by time; `error` (an exception class) names the
    first bad entry."""
    if not isinstance(value, list):
        raise error(f"events: expected a list of {{\"at\": seconds, \"push\": [x, y, z]}}, got {json.dumps(value)}")
    events = []
    for index, entry in enumerate(value):
        where = f"events[{index}]"
        if not isinstance(entry, dict):
            raise error(f"{where}: expected an object with 'at' and 'push', got {json.dumps(entry)}")
        extra = sorted(set(entry) - {"at", "push"})
        if extra:
            raise error(f"{where}.{extra[0]}: unknown field (expected at, push)")
        at = entry.get("at")
        if not _finite(at) or at < 0.0:
            raise error(f"{where}.at: expected a time in seconds >= 0, got {json.dumps(at)}")
        push = entry.get("push")
        if not (isinstance(push, list) and len(push) == 3 and all(_finite(v) for v in push)):
            raise error(f"{where}.push: expected 3 numbers (an impulse in N s, world x, y, z), got {json.dumps(push)}")
        size = math.sqrt(sum(float(v) ** 2 for v in push))
        if size > MAX_IMPULSE:
            raise error(f"{where}.push: {size:.0f} N s is more than the largest push, {MAX_IMPULSE:g} N s")
        events.append(PushEvent(float(at), (float(push[0]), float(push[1]), float(push[2]))))
    return sorted(events, key=lambda event: event.at)

