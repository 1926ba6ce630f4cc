"""`SceneFrame`: everything one rendered frame shows for one character, and `lerp` for render
interpolation between the last two simulation states.

Frames are built by the sources (`app/sources/`: the live runtime state, a BVH playback frame, the
stand-in character). Positions are world metres, directions are unit vectors on the ground plane, the
phase is in [0, 1). Optional overlay data is None when the source does not have it.
"""

from dataclasses import dataclass, replace

import numpy as np


@dataclass
class SceneFrame:
    joint_pos: np.ndarray  # [J, 3] world positions
    parents: np.ndarray  # [J] parent index, -1 for the root
    root_pos: np.ndarray  # [3] control root on the ground
    root_dir: np.ndarray  # [3] facing direction, unit, y = 0
    phase: float = 0.0
    names: tuple | None = None  # joint names (styling); not interpolated
    joint_rot: np.ndarray | None = None  # [J, 4] world rotations (w, x, y, z)
    offsets: np.ndarray | None = None  # [J, 3] the skeleton's bone offsets (parent frame, metres); not interpolated
    contact_joints: np.ndarray | None = None  # [C] joint indices of the contact labels
    contacts: np.ndarray | None = None  # [C] contact strength 0..1
    lock_target: np.ndarray | None = None  # [C, 3] pinned foot positions
    lock_weight: np.ndarray | None = None  # [C] 0..1 how strongly each foot is pinned
    traj_past_pos: np.ndarray | None = None  # [P, 3] newest last
    traj_past_dir: np.ndarray | None = None
    traj_future_pos: np.ndarray | None = None  # [F, 3] what the network was conditioned on
    traj_future_dir: np.ndarray | None = None
    traj_command_pos: np.ndarray | None = None  # [F, 3] pure prediction of the command
    traj_command_dir: np.ndarray | None = None
    ghost_pos: np.ndarray | None = None  # [J, 3] the kinematic pose drawn as a ghost (physics "both")
    foot_forces: np.ndarray | None = None  # [C, 3] N: the simulated floor's force under each contact joint


def _lerp_array(a, b, alpha):
    # attribute access and plain ufuncs: this runs for every field of every character of a crowd, every frame
    if a is None or b is None or a.shape != b.shape:
        return b
    return a + (b - a) * alpha


def _lerp_dir(a, b, alpha):
    mixed = _lerp_array(a, b, alpha)
    if mixed is None or mixed is b:
        return mixed
    norm = np.sqrt(np.add.reduce(mixed * mixed, axis=-1, keepdims=True))
    return np.where(norm > 1e-6, mixed / np.maximum(norm, 1e-6), b)


def _nlerp_quat(a, b, alpha):
    if a is None or b is None or a.shape != b.shape:
        return b
    b = np.where(np.add.reduce(a * b, axis=-1, keepdims=True) < 0, -b, b)
    mixed = a + (b - a) * alpha
    return mixed / np.sqrt(np.add.reduce(mixed * mixed, axis=-1, keepdims=True))


def lerp_phase(a: float, b: float, alpha: float) -> float:
    """Interpolate a cyclic phase the short way round the circle."""
    delta = (b - a + 0.5) % 1.0 - 0.5
    return float((a + delta * alpha) % 1.0)


def lerp(a: SceneFrame, b: SceneFrame, alpha: float) -> SceneFrame:
    """Frame between `a` (alpha 0) and `b` (alpha 1); fields missing in either come from `b`."""
    if a.joint_pos.shape != b.joint_pos.shape:
        return b
    return replace(
        b,
        joint_pos=_lerp_array(a.joint_pos, b.joint_pos, alpha),
        root_pos=_lerp_array(a.root_pos, b.root_pos, alpha),
        root_dir=_lerp_dir(a.root_dir, b.root_dir, alpha),
        phase=lerp_phase(a.phase, b.phase, alpha),
        joint_rot=_nlerp_quat(a.joint_rot, b.joint_rot, alpha),
        contacts=_lerp_array(a.contacts, b.contacts, alpha),
        lock_target=_lerp_array(a.lock_target, b.lock_target, alpha),
        lock_weight=_lerp_array(a.lock_weight, b.lock_weight, alpha),
        traj_past_pos=_lerp_array(a.traj_past_pos, b.traj_past_pos, alpha),
        traj_past_dir=_lerp_dir(a.traj_past_dir, b.traj_past_dir, alpha),
        traj_future_pos=_lerp_array(a.traj_future_pos, b.traj_future_pos, alpha),
        traj_future_dir=_lerp_dir(a.traj_future_dir, b.traj_future_dir, alpha),
        traj_command_pos=_lerp_array(a.traj_command_pos, b.traj_command_pos, alpha),
        traj_command_dir=_lerp_dir(a.traj_command_dir, b.traj_command_dir, alpha),
        ghost_pos=_lerp_array(a.ghost_pos, b.ghost_pos, alpha),
        foot_forces=_lerp_array(a.foot_forces, b.foot_forces, alpha),
    )


def drawn_bones(parents: np.ndarray) -> np.ndarray:
    """[K, 2] (child, parent) pairs to draw. A root joint with a single child is a placement node
    (e.g. a `joint_Root` left at the origin), not a bone, so its link is skipped."""
    parents = np.asarray(parents)
    children_of_root = {int(r): int(np.sum(parents == r)) for r in np.nonzero(parents < 0)[0]}
    pairs = [(child, int(parent)) for child, parent in enumerate(parents)
             if parent >= 0 and children_of_root.get(int(parent), 2) != 1]
    return np.array(pairs, np.int64).reshape(-1, 2)


def drawn_joints(parents: np.ndarray) -> np.ndarray:
    """Indices of joints drawn as spheres (placement roots left out)."""
    parents = np.asarray(parents)
    return np.array([j for j in range(len(parents))
                     if not (parents[j] < 0 and np.sum(parents == j) == 1)], np.int64)
