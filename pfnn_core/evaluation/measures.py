"""Measures of the body's motion, as pure functions over arrays (definitions: docs/EVALUATION.md).

Owns: contact frames against the capture's floor and foot skating (`floor_contacts`, `foot_skating`),
pose features in the character's own frame and nearest-neighbour realism (`pose_features`,
`PoseDatabase`), pose pops, floating and sunk feet, both feet off the floor (`trend_deviation`,
`pose_pops`, `floating_feet`, `sunk_feet`, `both_feet_up`), the standing stance and settling after a
stop (`stance_error`, `settle_time`), and the network's phase on held-out clips (`contact_f1`,
`phase_drift`).

Conventions: metres, seconds, Y up; motions are sampled every `dt` seconds; foot arrays hold the
skeleton's contact joints in the order (Foot_L, Toes_L, Foot_R, Toes_R) and `floor` [4] is each joint's
planted height in the training mocap (toes ~4.4 cm, ankles ~11.8 cm on the bundled skeleton). Every
function works on one motion; the caller pools motions by concatenating per-frame values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfnn_core.math.planar import inverse_rotate_xz
from pfnn_core.motion.phase import phase_distance
from pfnn_core.motion.root import body_frames, to_body_frame
from pfnn_core.skeleton import hips_joint

CONTACT_BAND = 0.02          # m above a joint's planted level that counts as touching the floor (H)
MIN_CONTACT_S = 0.1          # a contact lasts at least this long
FAST_CONTACT_SPEED = 0.25    # m/s: a contact frame faster than this is a visible slide
VELOCITY_SCALE = 0.1         # s: pose features weigh a joint velocity of 1 m/s like 10 cm
POP_DISTANCE = 0.05          # m off a joint's own 3-frame trend
FLOAT_HEIGHT = 0.02          # m above the floor level: a still foot higher than this floats
SINK_DEPTH = 0.02            # m below the floor level
STILL_SPEED = 0.1            # m/s: a foot joint slower than this (horizontally and vertically) is still
SETTLED_HOLD_S = 0.25        # s: feet must stay planted and still this long to count as settled
AIRBORNE_HEIGHT = 0.02       # m: every contact joint higher than this above its floor level: both feet up
NEAR_FLOOR_BAND = 0.05       # m: a foot joint this close to its floor level is near enough to scrape it


def runs_at_least(mask: np.ndarray, frames: int) -> np.ndarray:
    """`mask` [T, ...] with True runs shorter than `frames` (along axis 0) turned False."""
    mask = np.asarray(mask, bool)
    if frames <= 1 or len(mask) == 0:
        return mask.copy()
    flat = mask.reshape(len(mask), -1)
    out = np.zeros_like(flat)
    for column in range(flat.shape[1]):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], flat[:, column].astype(np.int8), [0]])))
        for start, end in zip(edges[::2], edges[1::2]):
            if end - start >= frames:
                out[start:end, column] = True
    return out.reshape(mask.shape)


def frames_for(seconds: float, dt: float) -> int:
    return max(1, int(np.ceil(seconds / dt - 1e-9)))


# ----------------------------------------------------------------------------------------------
# Feet against the capture's floor


def floor_contacts(feet, floor, dt: float, band: float = CONTACT_BAND, min_contact_s: float = MIN_CONTACT_S):
    """(contact [T, K] bool, height above the floor level [T, K]): a joint is in contact while it is
    within `band` of its level (or below it) for at least `min_contact_s`."""
    height = np.asarray(feet, float)[..., 1] - np.asarray(floor, float)
    return runs_at_least(height < band, frames_for(min_contact_s, dt)), height


@dataclass(frozen=True)
class Skating:
    """Contact-weighted horizontal foot speed; per-step arrays so callers can pool and select."""

    weight: np.ndarray       # [T-1, K] MANN weight of each contact step (0 off contact)
    speed: np.ndarray        # [T-1, K] horizontal speed of each step (m/s)
    contact: np.ndarray      # [T-1, K] bool: contact at both ends of the step

    def mean(self, steps=None) -> float:
        """Sum(w v) / sum(w) over the selected steps [T-1] (all when None); nan without contact."""
        select = slice(None) if steps is None else np.asarray(steps, bool)
        total = float(self.weight[select].sum())
        return float((self.weight[select] * self.speed[select]).sum()) / total if total > 0 else float("nan")

    def ground_share(self, steps=None) -> float:
        """Share of the selected steps [T-1] x joints in contact: how much of the time the feet are on
        the floor (a motion that hid its sliding by lifting its feet would skate little and score low)."""
        select = slice(None) if steps is None else np.asarray(steps, bool)
        contact = self.contact[select]
        return float(contact.mean()) if contact.size else float("nan")

    def fast_share(self, steps=None, limit: float = FAST_CONTACT_SPEED) -> float:
        """Share of contact steps faster than `limit` m/s; nan without contact."""
        select = slice(None) if steps is None else np.asarray(steps, bool)
        contact = self.contact[select]
        return float((self.speed[select] > limit)[contact].mean()) if contact.any() else float("nan")


def foot_skating(feet, floor, dt: float, band: float = CONTACT_BAND, min_contact_s: float = MIN_CONTACT_S) -> Skating:
    """Foot skating of one motion: feet [T, K, 3] world positions every dt s.

    A step (frame t to t+1) counts when the joint is in contact (`floor_contacts`) at both frames; its
    weight is 2 - 2^(h/H) [MANN] with h the step's mean height above the level clipped at 0, so a
    joint sliding flat on the floor counts fully and one lifting off counts less."""
    feet = np.asarray(feet, float)
    contact, height = floor_contacts(feet, floor, dt, band, min_contact_s)
    both = contact[1:] & contact[:-1]
    step_height = np.clip(0.5 * (height[1:] + height[:-1]), 0.0, None)
    weight = np.where(both, 2.0 - np.power(2.0, step_height / band), 0.0)
    speed = np.linalg.norm(np.diff(feet[..., [0, 2]], axis=0), axis=-1) / dt
    return Skating(weight=weight, speed=speed, contact=both)


def pool_skating(parts) -> Skating:
    """One Skating of several motions' (or segments') steps."""
    parts = list(parts)
    if not parts:
        return Skating(np.zeros((0, 4)), np.zeros((0, 4)), np.zeros((0, 4), bool))
    return Skating(*(np.concatenate([getattr(p, name) for p in parts]) for name in ("weight", "speed", "contact")))


def _foot_pairs(count: int):
    return [(k, k + 1) for k in range(0, count - 1, 2)] if count >= 2 else [(0, 0)]


def still_joints(feet, dt: float, speed: float = STILL_SPEED, min_s: float = MIN_CONTACT_S) -> np.ndarray:
    """[T, K] bool: the joint moves slower than `speed` horizontally and vertically, for >= min_s."""
    velocity = np.gradient(np.asarray(feet, float), dt, axis=0) if len(feet) > 1 else np.zeros_like(feet)
    slow = (np.linalg.norm(velocity[..., [0, 2]], axis=-1) < speed) & (np.abs(velocity[..., 1]) < speed)
    return runs_at_least(slow, frames_for(min_s, dt))


@dataclass(frozen=True)
class FootHeights:
    """Per frame and foot (left, right): still [T, 2] bool and its lowest joint's height over the floor
    level [T, 2] (a foot is the (ankle, toe) pair; a toe-less skeleton's foot is the ankle alone)."""

    still: np.ndarray
    lowest: np.ndarray


def foot_heights(feet, floor, dt: float) -> FootHeights:
    feet = np.asarray(feet, float)
    height = feet[..., 1] - np.asarray(floor, float)
    still = still_joints(feet, dt)
    pairs = _foot_pairs(feet.shape[1])
    return FootHeights(still=np.stack([still[:, a] & still[:, b] for a, b in pairs], axis=-1),
                       lowest=np.stack([np.minimum(height[:, a], height[:, b]) for a, b in pairs], axis=-1))


def floating_feet(feet, floor, dt: float, limit: float = FLOAT_HEIGHT) -> tuple[np.ndarray, np.ndarray]:
    """(floating [T, 2] bool, lowest height [T, 2]): a foot floats when it is still (planted, by its
    motion) while neither of its joints is within `limit` of its floor level: a hanging foot, or a
    whole body held above the capture's floor."""
    heights = foot_heights(feet, floor, dt)
    return heights.still & (heights.lowest > limit), heights.lowest


def lowest_lift(feet, floor) -> np.ndarray:
    """[T] m: the lowest contact joint's height above its own floor level (how far the whole body is
    off the floor)."""
    return (np.asarray(feet, float)[..., 1] - np.asarray(floor, float)).min(axis=-1)


def both_feet_up(feet, floor, limit: float = AIRBORNE_HEIGHT) -> np.ndarray:
    """[T] bool: every contact joint more than `limit` above its floor level. A walk has no flight
    phase: the mocap's walks have both feet up in 0-1% of their frames."""
    return lowest_lift(feet, floor) > limit


def near_floor_slide(feet, floor, dt: float, band: float = NEAR_FLOOR_BAND) -> tuple[np.ndarray, np.ndarray]:
    """(speed [T-1, K] m/s, near [T-1, K] bool): each contact joint's horizontal speed per step and
    whether it was within `band` of its floor level at both ends. The mean speed over the near steps is
    how fast feet move low over the floor: a swinging foot dragged along it scores high, one lifted
    clear of it or planted scores low (the skating measure's 2 cm band misses a foot scraping at 3 cm)."""
    feet = np.asarray(feet, float)
    height = feet[..., 1] - np.asarray(floor, float)
    near = (height[1:] < band) & (height[:-1] < band)
    speed = np.linalg.norm(np.diff(feet[..., [0, 2]], axis=0), axis=-1) / dt
    return speed, near


def sunk_feet(feet, floor, limit: float = SINK_DEPTH) -> np.ndarray:
    """[T, K] bool: the joint is more than `limit` below its floor level (through the floor)."""
    return (np.asarray(feet, float)[..., 1] - np.asarray(floor, float)) < -limit


# ----------------------------------------------------------------------------------------------
# Pose: features in the character's own frame, realism, pops


def body_joints(names, parents) -> np.ndarray:
    """The joints that move with the body: all but those above the hips (a `joint_Root` that stays at
    the world origin in the bundled files)."""
    parents = np.asarray(parents)
    hips = hips_joint(names, parents)
    above, joint = set(), hips
    while parents[joint] >= 0:
        joint = int(parents[joint])
        above.add(joint)
    return np.array([j for j in range(len(parents)) if j not in above], dtype=int)


def pose_features(positions, dt: float, names, parents) -> np.ndarray:
    """[T, J', 6]: each body joint's position in the character's own frame (`body_frames`:
    origin under the hips, x along the hip line, y up) and its world velocity in that frame times
    VELOCITY_SCALE. positions [T, J, 3] world, every dt s."""
    positions = np.asarray(positions, float)
    origin, yaw = body_frames(positions, names, parents)
    joints = body_joints(names, parents)
    local = to_body_frame(positions[:, joints], origin, yaw)
    velocity = np.gradient(positions[:, joints], dt, axis=0) if len(positions) > 1 else np.zeros_like(local)
    velocity[..., [0, 2]] = inverse_rotate_xz(yaw[:, None], velocity[..., [0, 2]])
    return np.concatenate([local, VELOCITY_SCALE * velocity], axis=-1)


class PoseDatabase:
    """Frames of pose features [N, J', 6] with a label per frame, searched exactly for nearest neighbours.

    The distance of two frames is the RMS over joints of the 6-vector distances (metres):
    sqrt(sum_j |a_j - b_j|^2 / J'). Brute force in float32 blocks (a tree does not help in 6 J'
    dimensions); the winner's distance is recomputed in float64.
    """

    def __init__(self, frames, labels=None, block: int = 512):
        frames = np.asarray(frames, float)
        self.joints = frames.shape[1]
        self.frames = frames.reshape(len(frames), -1)
        self.frames32 = self.frames.astype(np.float32)
        self.norms = (self.frames32 * self.frames32).sum(axis=1)
        self.labels = np.asarray(labels) if labels is not None else np.zeros(len(frames), int)
        self.block = block

    def __len__(self) -> int:
        return len(self.frames)

    def nearest(self, query, mask=None) -> tuple[np.ndarray, np.ndarray]:
        """(distance [M] m, index [M]) of each query frame's nearest database frame; `mask` [N] bool
        restricts the search (e.g. to one style, or leaves a clip out)."""
        query = np.asarray(query, float).reshape(len(query), -1)
        candidates = np.arange(len(self.frames)) if mask is None else np.flatnonzero(mask)
        if len(candidates) == 0 or len(query) == 0:
            return np.full(len(query), np.nan), np.full(len(query), -1)
        base = self.frames32[candidates]
        norms = self.norms[candidates]
        index = np.empty(len(query), dtype=int)
        for start in range(0, len(query), self.block):
            chunk = query[start:start + self.block].astype(np.float32)
            index[start:start + self.block] = candidates[np.argmin(norms[None, :] - 2.0 * chunk @ base.T, axis=1)]
        difference = self.frames[index] - query
        return np.sqrt((difference * difference).sum(axis=1) / self.joints), index


def trend_deviation(positions) -> np.ndarray:
    """[T, J] distance (m) of each joint from the midpoint of its previous and next positions (its own
    3-frame trend); 0 at the first and last frames. positions [T, J, 3]."""
    positions = np.asarray(positions, float)
    deviation = np.zeros(positions.shape[:2])
    if len(positions) >= 3:
        deviation[1:-1] = np.linalg.norm(positions[1:-1] - 0.5 * (positions[:-2] + positions[2:]), axis=-1)
    return deviation


def pose_pops(positions, limit: float = POP_DISTANCE) -> np.ndarray:
    """[T] bool: some joint is more than `limit` m off its own 3-frame trend (`trend_deviation`); the
    first and last frames never pop. positions [T, J, 3]."""
    return (trend_deviation(positions) > limit).any(axis=-1)


# ----------------------------------------------------------------------------------------------
# Stops


def stance_error(feet, positions, names, parents, stance) -> np.ndarray:
    """[T, K] distance (m) of each contact joint from where the mocap's standing frames put it relative
    to the hips (`stance` [K, 3] in the body frame of `body_frames`)."""
    origin, yaw = body_frames(positions, names, parents)
    local = to_body_frame(feet, origin, yaw)
    return np.linalg.norm(local - np.asarray(stance, float), axis=-1)


def settle_time(feet, floor, dt: float, start: int, end: int | None = None, hold_s: float = SETTLED_HOLD_S) -> float:
    """Seconds from frame `start` (the stick released) until both feet are planted and still (every
    contact joint still, each foot's lowest joint within FLOAT_HEIGHT of its level) and stay so for
    `hold_s` (or to `end`); inf when they never settle."""
    feet = np.asarray(feet, float)[start:end]
    heights = foot_heights(feet, floor, dt)
    settled = (heights.still & (np.abs(heights.lowest) <= FLOAT_HEIGHT)).all(axis=-1)
    hold = frames_for(hold_s, dt)
    held = runs_at_least(settled, min(hold, len(settled)))
    tail = np.r_[settled[::-1].cumprod()[::-1].astype(bool)]  # settled from here to the end
    ok = held | tail
    first = np.flatnonzero(ok)
    return float(first[0] * dt) if len(first) else float("inf")


# ----------------------------------------------------------------------------------------------
# The network's phase on held-out clips


def contact_f1(predicted, labelled) -> float:
    """F1 score of predicted contacts [T, K] bool against labelled ones, pooled over joints."""
    predicted, labelled = np.asarray(predicted, bool), np.asarray(labelled, bool)
    true_positive = float((predicted & labelled).sum())
    if true_positive == 0:
        return 0.0
    precision = true_positive / float(predicted.sum())
    recall = true_positive / float(labelled.sum())
    return 2.0 * precision * recall / (precision + recall)


def phase_drift(network_phase, labelled_phase) -> np.ndarray:
    """[T] cyclic distance (cycles, 0..0.5) between the network's phase and the labelled phase."""
    return phase_distance(network_phase, labelled_phase)
