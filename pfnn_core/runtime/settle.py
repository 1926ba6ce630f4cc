"""Settling steps after a stop: the feet step, one at a time, to where a standing person has them.

The training data has no stops. Left alone, the character stops mid-stride: its planted feet stay
pinned where they were (one behind the hips, the other often still in the air). A person who stops
takes one or two short steps that bring the feet under the hips. This module plans and plays those
steps. Each rule is written once for one character as a compiled function (`stance_point`,
`arc_point`, `settle_character`); the runtime's foot kernel (`pose.py`) calls them directly, and
`stance_targets`, `step_arc` and `advance` run them over arrays with a leading batch dimension B.

A foot is the (ankle, toe) pair of contact joints, (0, 1) left and (2, 3) right, as everywhere. The
standing stance is the mocap's: each contact joint's position relative to the hips in the body frame
(`features.body_frames`: x along the hip line from the right hip to the left, z forward), stored in
the checkpoint (`stance`). The targets move with the hips (the caller recomputes them every tick), so
a step that starts while the body still slows down lands where the hips come to rest.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.runtime.settings import RuntimeSettings

STEP_TOLERANCE = 0.03     # m: a foot this close to its standing place (3D) stays put
STEP_DURATION_S = RuntimeSettings.settle_step_time  # s per settling step: the runtime's default
STEP_HEIGHT = RuntimeSettings.settle_step_height     # m: the foot's lift at the middle of the step: the same
MAX_STEPS = 3             # per stop: after this many the feet stay where they are
AIRBORNE_HEIGHT = 0.02    # m: a foot whose lowest joint is higher above its floor level steps first
LANDING_SPEED = 0.5       # m/s: a foot left in the air while the other steps comes straight down this fast


class SettleState(NamedTuple):
    """Per character: whether it is settling [B] bool, the foot stepping [B] (-1 none, 0 left, 1
    right), the step's progress 0..1 [B], where the stepping foot's (ankle, toe) started [B, 2, 3] and
    the steps taken this stop [B]."""

    active: np.ndarray
    foot: np.ndarray
    progress: np.ndarray
    start: np.ndarray
    steps: np.ndarray


def idle_state(batch: int) -> SettleState:
    return SettleState(active=np.zeros(batch, bool), foot=np.full(batch, -1, np.int64), progress=np.zeros(batch),
                       start=np.zeros((batch, 2, 3)), steps=np.zeros(batch, np.int64))


# ---------------------------------------------------------------------------------------------
# Rules for one character (compiled)


@njit
def stance_point(hips_x, hips_z, body_yaw, stance, joint):
    """World position of contact joint `joint` of `stance` [4, 3] (body frame) under hips at (hips_x,
    hips_z) whose body faces `body_yaw` (0 faces +Z); its height is the stance's."""
    x, _, z = mat3.mat_vec(mat3.yaw_matrix(body_yaw), (stance[joint, 0], 0.0, stance[joint, 2]))
    return (x + hips_x, stance[joint, 1], z + hips_z)


@njit
def arc_point(start, end, progress, height):
    """A point along a step from `start` to `end` at `progress` in [0, 1]: the ground path eases in
    and out (smoothstep), the foot lifts by height * sin(pi * progress)."""
    t = min(max(progress, 0.0), 1.0)
    ease = mat3.smoothstep(t)
    lift = height * math.sin(math.pi * t)
    return (start[0] + ease * (end[0] - start[0]), start[1] + ease * (end[1] - start[1]) + lift,
            start[2] + ease * (end[2] - start[2]))


@njit
def toe_arc_point(ankle_point, ankle_start, toe_start, ankle_end, toe_end, progress):
    """The toe of a foot stepping as a rigid body: `ankle_point` (the ankle's `arc_point`) plus the
    ankle-to-toe vector turned from its start direction to its end direction about their common axis
    (eased like the ankle's path), its length eased between theirs. Moving the toe along its own arc
    instead makes a foot that starts pitched (a running stride's toe points down and back) swing the
    toe around the ankle in a few ticks where the two arcs cross."""
    t = mat3.smoothstep(min(max(progress, 0.0), 1.0))
    start, end = mat3.sub(toe_start, ankle_start), mat3.sub(toe_end, ankle_end)
    size = (1.0 - t) * mat3.length(start) + t * mat3.length(end)
    turned = mat3.mat_vec(mat3.partial_rotation(mat3.between(start, end), t), mat3.normalize(start))
    return mat3.add(ankle_point, mat3.scale(turned, size))


@njit
def _foot_gap(points, targets, foot):
    """Largest 3D distance of a foot's joints from their standing places."""
    gap = 0.0
    for joint in range(2 * foot, 2 * foot + 2):
        dx, dy, dz = points[joint, 0] - targets[joint, 0], points[joint, 1] - targets[joint, 1], \
            points[joint, 2] - targets[joint, 2]
        gap = max(gap, math.sqrt(dx * dx + dy * dy + dz * dz))
    return gap


@njit
def _airborne(points, floor, foot):
    lowest = min(points[2 * foot, 1] - floor[2 * foot], points[2 * foot + 1, 1] - floor[2 * foot + 1])
    return lowest > AIRBORNE_HEIGHT


@njit
def settle_character(foot, progress, steps, start, pins, targets, floor, dt, duration, height, tolerance, max_steps,
                     goals, stepping):
    """One tick of one settling character; returns (foot, progress, steps).

    `pins` [4, 3]: where the feet not stepping are held (a finished step pins its foot on its targets,
    in place); `targets` [4, 3]: the standing places now (`stance_point`); `start` [2, 3]: where the
    stepping foot started (written when a step starts); `floor` [4]: the floor levels. Writes `goals`
    [4, 3] (the pins, or the stepping foot's arc toward its current targets) and `stepping` [4] bool.
    A step starts on a foot left in the air, else on the foot farther from its place, while that is
    more than `tolerance` away and fewer than `max_steps` were taken; a foot waiting in the air while
    the other steps comes straight down to the floor (LANDING_SPEED)."""
    if foot >= 0:
        progress += dt / max(duration, 1e-6)
        if progress >= 1.0:
            for joint in range(2 * foot, 2 * foot + 2):
                for k in range(3):
                    pins[joint, k] = targets[joint, k]
            foot, progress = -1, 0.0
    if foot < 0 and steps < max_steps:
        gaps = (_foot_gap(pins, targets, 0), _foot_gap(pins, targets, 1))
        chosen = 0 if gaps[0] >= gaps[1] else 1
        up = (_airborne(pins, floor, 0), _airborne(pins, floor, 1))
        if up[0] != up[1]:
            chosen = 0 if up[0] else 1
        if gaps[chosen] > tolerance or up[chosen]:
            foot, progress, steps = chosen, 0.0, steps + 1
            for k in range(2):
                for c in range(3):
                    start[k, c] = pins[2 * chosen + k, c]
    for joint in range(4):
        in_step = foot >= 0 and joint // 2 == foot
        stepping[joint] = in_step
        if not in_step and pins[joint, 1] > floor[joint]:  # a waiting foot left in the air comes down
            pins[joint, 1] = floor[joint] + max(pins[joint, 1] - floor[joint] - LANDING_SPEED * dt, 0.0)
        if in_step:
            ankle = 2 * foot
            point = arc_point(mat3.load3(start, 0), mat3.load3(targets, ankle), progress, height)
            if joint == ankle + 1:  # the toe turns with the foot about the ankle
                point = toe_arc_point(point, mat3.load3(start, 0), mat3.load3(start, 1), mat3.load3(targets, ankle),
                                      mat3.load3(targets, ankle + 1), progress)
        else:
            point = (pins[joint, 0], pins[joint, 1], pins[joint, 2])
        goals[joint, 0], goals[joint, 1], goals[joint, 2] = point[0], point[1], point[2]
    return foot, progress, steps


# ---------------------------------------------------------------------------------------------
# Batched


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


@njit
def _arcs(start, end, progress, height, out):
    for b in range(start.shape[0]):
        for k in range(start.shape[1]):
            point = arc_point((start[b, k, 0], start[b, k, 1], start[b, k, 2]),
                              (end[b, k, 0], end[b, k, 1], end[b, k, 2]), progress[b], height)
            out[b, k, 0], out[b, k, 1], out[b, k, 2] = point[0], point[1], point[2]


def step_arc(start, end, progress, height: float = STEP_HEIGHT) -> np.ndarray:
    """`arc_point` for B steps: start, end [B, K, 3], progress [B] -> positions [B, K, 3]."""
    start = np.ascontiguousarray(start, dtype=float)
    end = np.ascontiguousarray(np.broadcast_to(end, start.shape), dtype=float)
    out = np.empty(start.shape)
    _arcs(start, end, np.ascontiguousarray(np.broadcast_to(np.asarray(progress, float), start.shape[:1])),
          float(height), out)
    return out


@njit
def _advance(active, foot, progress, start, steps, pins, targets, floor, dt, duration, height, tolerance, max_steps,
             goals, stepping):
    for b in range(active.shape[0]):
        if not active[b]:
            foot[b], progress[b], steps[b] = -1, 0.0, 0
            goals[b, :, :] = pins[b]
            stepping[b, :] = False
            continue
        foot[b], progress[b], steps[b] = settle_character(foot[b], progress[b], steps[b], start[b], pins[b], targets[b],
                                                          floor, dt, duration, height, tolerance, max_steps, goals[b],
                                                          stepping[b])


def advance(state: SettleState, settling, pins, targets, dt: float, duration: float = STEP_DURATION_S,
            height: float = STEP_HEIGHT, floor=None, tolerance: float = STEP_TOLERANCE,
            max_steps: int = MAX_STEPS) -> tuple[SettleState, np.ndarray, np.ndarray]:
    """One tick of B characters (`settle_character`). `settling` [B] bool: the character stands and
    should settle; `pins` [B, 4, 3] where the feet are held now; `targets` [B, 4, 3] their standing
    places (`stance_targets`); `floor` [4] the floor levels (default: the targets' heights).

    Returns (state, goals [B, 4, 3], stepping [B, 4] bool): where each contact joint should be (the
    pin, the target a step just reached, or the arc of the stepping foot) and which joints are in a
    step; the caller pins the joints not stepping at their goals. A character that stops settling
    (the stick moves again) finishes nothing: its goals are its pins."""
    pins = np.array(pins, dtype=float)
    targets = np.ascontiguousarray(targets, dtype=float)
    active = np.asarray(settling, bool)
    floor = targets[0, :, 1].copy() if floor is None else np.asarray(floor, float)
    foot, progress = state.foot.astype(np.int64), state.progress.astype(float)
    start, steps = np.array(state.start, dtype=float), state.steps.astype(np.int64)
    goals, stepping = np.empty(pins.shape), np.zeros(pins.shape[:2], bool)
    _advance(active, foot, progress, start, steps, pins, targets, np.ascontiguousarray(floor), float(dt),
             float(duration), float(height), float(tolerance), int(max_steps), goals, stepping)
    return SettleState(active.copy(), foot, progress, start, steps), goals, stepping
