"""Tracking a recorded motion: `track_motion(tracker, positions, rotations, dt, events)` -> `TrackedMotion`.

The physics never feeds back into the runtime (the kinematic pose is what the body tracks, not the
other way round), so tracking a drive's recorded poses afterwards gives exactly what tracking them
live gives; the evaluation does this for every drive it has run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pfnn_core.physics.events import PushEvent
from pfnn_core.physics.tracker import PhysicsTracker


@dataclass
class TrackedMotion:
    """The simulated body over a motion of T frames (every array for character 0 of the tracker)."""

    positions: np.ndarray  # [T, J, 3] world joint positions (m)
    rotations: np.ndarray  # [T, J, 4] global rotations (w, x, y, z)
    foot_forces: np.ndarray  # [T, 4, 3] N: the floor's force on each contact joint's soles
    root_force: np.ndarray  # [T] N: the hold's force on the hips (the hand of god)
    floor_force: np.ndarray  # [T] N: the floor's whole vertical force on the body, mean over each tick
    tracking_error: np.ndarray  # [T] m: mean distance of the simulated joints from the kinematic ones
    centre_of_mass: np.ndarray  # [T, 3]
    pushes: list  # PushEvent applied, with `frames` [n] the frame each began at
    push_frames: np.ndarray
    tick_ms: np.ndarray  # [T] wall time of each physics tick
    resets: int = 0
    body_mass: float = 0.0  # kg


def due_events(events, t: float, dt: float) -> list[PushEvent]:
    """The events whose time falls in the tick [t, t + dt)."""
    return [event for event in events if t - 1e-9 <= event.at < t + dt - 1e-9]


def track_motion(tracker: PhysicsTracker, positions, rotations, dt: float, events=()) -> TrackedMotion:
    """Track one motion (world joint positions [T, J, 3], global rotations [T, J, 4]) from its first
    frame, at rest there, applying `events` (PushEvent) at their times."""
    positions, rotations = np.asarray(positions, float), np.asarray(rotations, float)
    frames, joints = positions.shape[:2]
    out = TrackedMotion(np.zeros((frames, joints, 3)), np.zeros((frames, joints, 4)), np.zeros((frames, 4, 3)),
                        np.zeros(frames), np.zeros(frames), np.zeros(frames), np.zeros((frames, 3)), [], np.zeros(0, int),
                        np.zeros(frames))
    tracker.reset()
    applied, push_frames = [], []
    for frame in range(frames):
        for event in due_events(events, frame * dt, dt):
            tracker.push(event.push, characters=[0])
            applied.append(event)
            push_frames.append(frame)
        started = time.perf_counter()
        pose = tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], dt)
        out.tick_ms[frame] = (time.perf_counter() - started) * 1000.0
        out.positions[frame], out.rotations[frame] = pose.positions[0], pose.rotations[0]
        out.foot_forces[frame], out.root_force[frame] = pose.foot_forces[0], pose.root_force[0]
        out.floor_force[frame] = pose.floor_force[0]
        out.tracking_error[frame], out.centre_of_mass[frame] = pose.tracking_error[0], pose.centre_of_mass[0]
    out.pushes, out.push_frames = applied, np.asarray(push_frames, int)
    out.resets, out.body_mass = tracker.resets, tracker.body.mass
    return out
