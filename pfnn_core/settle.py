"""Settling steps after a stop: the feet step, one at a time, to where a standing person has them.

The training data has no stops. Left alone, the character stops mid-stride: its planted feet stay
pinned where they were (one behind the hips, the other often still in the air). A person who stops
takes one or two short steps that bring the feet under the hips. This module plans and plays those
steps as pure functions over arrays with a leading batch dimension B; the runtime's foot stage feeds
the result to the leg IK as the feet's goals.

A foot is the (ankle, toe) pair of contact joints, (0, 1) left and (2, 3) right, as everywhere. The
standing stance is the mocap's: each contact joint's position relative to the hips in the body frame
(`features.body_frames`: x along the hip line, z forward), stored in the checkpoint (`stance`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

STEP_TOLERANCE = 0.03     # m: a foot this close to its standing place stays put
STEP_DURATION_S = 0.30    # s per settling step (a short step of a slow walk)
STEP_HEIGHT = 0.05        # m: the foot's lift at the middle of the step
MAX_STEPS = 3             # per stop: after this many the feet stay where they are
FEET = ((0, 1), (2, 3))   # contact slots of the left and the right foot


class SettleState(NamedTuple):
    """Per character: whether it is settling, the foot stepping (-1 none), the step's progress 0..1,
    the stepping foot's start and end positions [B, 2, 3] (ankle, toe) and the steps taken."""

    active: np.ndarray
    foot: np.ndarray
    progress: np.ndarray
    start: np.ndarray
    end: np.ndarray
    steps: np.ndarray


def idle_state(batch: int) -> SettleState:
    return SettleState(active=np.zeros(batch, bool), foot=np.full(batch, -1), progress=np.zeros(batch),
                       start=np.zeros((batch, 2, 3)), end=np.zeros((batch, 2, 3)), steps=np.zeros(batch, int))


def stance_targets(hips_xz, body_yaw, stance) -> np.ndarray:
    """World positions [B, 4, 3] of the contact joints when standing: `stance` [4, 3] (body frame) placed
    under hips at `hips_xz` [B, 2] facing `body_yaw` [B] (yaw 0 faces +Z)."""
    stance = np.asarray(stance, float)
    c, s = np.cos(body_yaw)[:, None], np.sin(body_yaw)[:, None]
    x, z = stance[None, :, 0], stance[None, :, 2]
    world = np.empty((len(body_yaw),) + stance.shape)
    world[..., 0] = c * x + s * z + np.asarray(hips_xz)[:, None, 0]
    world[..., 1] = stance[None, :, 1]
    world[..., 2] = -s * x + c * z + np.asarray(hips_xz)[:, None, 1]
    return world


def foot_gaps(pins, targets) -> np.ndarray:
    """[B, 2]: each foot's largest horizontal distance (ankle or toe) from its standing place."""
    gap = np.linalg.norm((np.asarray(pins) - np.asarray(targets))[..., [0, 2]], axis=-1)
    return np.stack([gap[:, list(joints)].max(axis=-1) for joints in FEET], axis=-1)


def step_arc(start, end, progress, height: float = STEP_HEIGHT) -> np.ndarray:
    """Positions [B, 2, 3] along a step from `start` to `end` at `progress` [B] in [0, 1]: the ground
    path eases in and out (smoothstep), the foot lifts by height * sin(pi * progress)."""
    t = np.clip(np.asarray(progress, float), 0.0, 1.0)[:, None, None]
    ease = t * t * (3.0 - 2.0 * t)
    positions = start + ease * (end - start)
    positions[..., 1] += height * np.sin(np.pi * t[..., 0])
    return positions


def advance(state: SettleState, settling, pins, targets, dt: float,
            duration: float = STEP_DURATION_S) -> tuple[SettleState, np.ndarray, np.ndarray]:
    """One tick. `settling` [B] bool: the character stands and should settle; `pins` [B, 4, 3] where the
    feet are held now; `targets` [B, 4, 3] their standing places (`stance_targets`).

    Returns (state, goals [B, 4, 3], stepping [B, 4] bool): where each contact joint should be (the pin,
    or the arc of the stepping foot) and which joints are in a step. A step ends on its target (the
    caller pins the foot there); the next starts on the foot farther from its place, while it is more
    than STEP_TOLERANCE away and fewer than MAX_STEPS were taken. A character that stops settling
    (the stick moves again) finishes nothing: its feet go back to the network at once."""
    pins, targets = np.asarray(pins, float), np.asarray(targets, float)
    active = np.asarray(settling, bool)
    foot, progress = state.foot.copy(), state.progress.copy()
    start, end, steps = state.start.copy(), state.end.copy(), state.steps.copy()
    foot[~active], progress[~active], steps[~active] = -1, 0.0, 0

    stepping = foot >= 0
    progress[stepping] += dt / duration
    goals = pins.copy()
    done = stepping & (progress >= 1.0)
    for index, joints in enumerate(FEET):
        moving = stepping & (foot == index)
        if moving.any():
            goals[np.ix_(moving, joints)] = step_arc(start[moving], end[moving], progress[moving])
    foot[done], progress[done] = -1, 0.0

    gaps = foot_gaps(goals, targets)
    choose = active & (foot < 0) & (steps < MAX_STEPS) & (gaps.max(axis=-1) > STEP_TOLERANCE)
    if choose.any():
        which = np.argmax(gaps, axis=-1)
        for index, joints in enumerate(FEET):
            picked = choose & (which == index)
            if picked.any():
                start[picked] = goals[np.ix_(picked, joints)]
                end[picked] = targets[np.ix_(picked, joints)]
                foot[picked] = index
                steps[picked] += 1
    in_step = np.zeros(pins.shape[:2], bool)
    for index, joints in enumerate(FEET):
        in_step[:, list(joints)] = (foot == index)[:, None]
    return SettleState(active, foot, progress, start, end, steps), goals, in_step
