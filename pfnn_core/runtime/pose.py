"""The posed skeleton of a runtime tick: rotation fit and forward kinematics.

Owns `SkeletonPlan` (what the tick needs to know about a skeleton, worked out once per model), the pose
stage of a tick, `pose_from_prediction` (the model's root-frame pose placed in the world, rotations
fitted to the predicted positions, one forward kinematics; the foot stage that follows is `feet.py`),
and the batched helpers `forward_kinematics_global` and `fit_rotations_to_positions`.

The stage runs as a compiled kernel (numba) over the batch, in rotation matrices; a tick at batch 1
would otherwise spend most of its time in hundreds of tiny numpy calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.quat import quat_to_matrix
from pfnn_core.runtime import ik
from pfnn_core.runtime.lean import lean_roots_of
from pfnn_core.skeleton import ancestors, contact_joint_order, foot_joints

# ---------------------------------------------------------------------------------------------
# Skeleton


def anchor_joint(parents) -> int:
    """The joint the network's root-frame position places in the world (the hips): the first joint
    from the root down with more than one child. A 'joint_Root'-style dummy above it is carried."""
    parents = np.asarray(parents)
    joint = int(np.flatnonzero(parents < 0)[0])
    while True:
        children = np.flatnonzero(parents == joint)
        if len(children) != 1:
            return joint
        joint = int(children[0])


@dataclass(frozen=True)
class SkeletonPlan:
    """Index arrays the pose kernels walk, worked out once per skeleton."""

    parents: np.ndarray  # [J] int
    offsets: np.ndarray  # [J, 3] m, bone vectors in the parent's frame
    anchor: int  # the joint the network places (hips)
    up_path: np.ndarray  # anchor, its parent, ..., its root: positions walk up from the anchor
    down_order: np.ndarray  # every other joint, parents first: positions walk down
    above_anchor: np.ndarray  # joints above the anchor (placement nodes): no rotation, they hang by their offsets
    fit_single: np.ndarray  # [S, 2] (joint, child): one-child joints swing toward their child
    fit_multi: np.ndarray  # [M] several-children joints: best rotation for all their bones
    fit_children: np.ndarray  # [M, C] their children, padded with -1
    contact_joints: np.ndarray  # [4] Foot_L, Toes_L, Foot_R, Toes_R
    legs: np.ndarray  # [2, 4] (hip, knee, ankle, toe) of the left and the right leg
    body: np.ndarray  # [J] bool: the anchor and the joints below it (not placement nodes above it)
    extent: float  # m, farthest a body joint can be from the anchor along its bones
    lean_root_of: np.ndarray  # [J] the lean root each upper-body joint hangs from, -1 if none (`lean.py`)

    @property
    def num_joints(self) -> int:
        return len(self.parents)


def skeleton_plan(names: Sequence[str] | None, parents, offsets, anchor: int | None = None,
                  contact_joints: Sequence[int] | None = None) -> SkeletonPlan:
    """The per-skeleton constants of the pose stage. Without `names` (a rig known by its positions
    only) there are no contact joints and no legs: only the rotation fit and forward kinematics work."""
    parents = np.asarray(parents, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.float64)
    anchor = anchor_joint(parents) if anchor is None else int(anchor)
    up_path = [anchor] + list(ancestors(parents, anchor))
    down = [j for j in range(len(parents)) if j not in up_path]
    skip = set(up_path[1:])
    children = {j: [int(c) for c in np.flatnonzero(parents == j)] for j in range(len(parents)) if j not in skip}
    single = [(j, c[0]) for j, c in children.items() if len(c) == 1]
    multi = [(j, c) for j, c in children.items() if len(c) > 1]
    width = max([len(c) for _, c in multi], default=1)
    if contact_joints is None:
        contact_joints = ([] if names is None else
                          contact_joint_order(foot_joints(list(names), parents)))
    legs = np.array(ik.leg_chains(names, parents) if names is not None else [], dtype=np.int64).reshape(-1, 4)
    body = np.zeros(len(parents), dtype=bool)
    reach = np.zeros(len(parents))  # bone length summed from the anchor (parents come first)
    body[anchor] = True
    for j in range(len(parents)):
        if parents[j] >= 0 and body[parents[j]]:
            body[j], reach[j] = True, reach[parents[j]] + np.linalg.norm(offsets[j])
    return SkeletonPlan(
        parents=parents, offsets=offsets, anchor=anchor, up_path=np.array(up_path, dtype=np.int64),
        down_order=np.array(down, dtype=np.int64), above_anchor=np.array(up_path[1:], dtype=np.int64),
        fit_single=np.array(single, dtype=np.int64).reshape(-1, 2),
        fit_multi=np.array([j for j, _ in multi], dtype=np.int64),
        fit_children=np.array([c + [-1] * (width - len(c)) for _, c in multi], dtype=np.int64).reshape(-1, width),
        contact_joints=np.array(contact_joints, dtype=np.int64),
        legs=legs, body=body, extent=float(reach.max()),
        lean_root_of=lean_roots_of(parents, anchor, legs))


# ---------------------------------------------------------------------------------------------
# Kernels: one character's joints in matrices


@njit
def _fit_rotations(rot, world, offsets, fit_single, fit_multi, fit_children, goal, rest, scratch):
    """Turn each joint so its bones point where the predicted positions `world` put its children: a
    one-child joint by the shortest swing (its twist stays the network's), a several-children joint
    by the best rotation for all of its bones."""
    for k in range(fit_single.shape[0]):
        joint, child = fit_single[k, 0], fit_single[k, 1]
        r = mat3.load33(rot, joint)
        bone_now = mat3.mat_vec(r, mat3.load3(offsets, child))
        bone_goal = mat3.sub(mat3.load3(world, child), mat3.load3(world, joint))
        mat3.store33(rot, joint, mat3.mat_mul(mat3.between(bone_now, bone_goal), r))
    for k in range(fit_multi.shape[0]):
        joint = fit_multi[k]
        count = 0
        for c in range(fit_children.shape[1]):
            child = fit_children[k, c]
            if child >= 0:
                mat3.store3(goal, count, mat3.sub(mat3.load3(world, child), mat3.load3(world, joint)))
                mat3.store3(rest, count, mat3.load3(offsets, child))
                count += 1
        mat3.store33(rot, joint, mat3.nearest_rotation(goal, rest, count, mat3.load33(rot, joint), scratch))


@njit
def _forward_kinematics(rot, anchor_pos, offsets, parents, up_path, down_order, pos):
    """Joint positions from global rotations: up from the anchor to the root, then down."""
    mat3.store3(pos, up_path[0], anchor_pos)
    for k in range(1, up_path.shape[0]):
        child, joint = up_path[k - 1], up_path[k]
        bone = mat3.mat_vec(mat3.load33(rot, joint), mat3.load3(offsets, child))
        mat3.store3(pos, joint, mat3.sub(mat3.load3(pos, child), bone))
    top = up_path[up_path.shape[0] - 1]
    for k in range(down_order.shape[0]):
        joint = down_order[k]
        parent = parents[joint]
        if parent < 0:
            mat3.store3(pos, joint, mat3.load3(pos, top))
        else:
            bone = mat3.mat_vec(mat3.load33(rot, parent), mat3.load3(offsets, joint))
            mat3.store3(pos, joint, mat3.add(mat3.load3(pos, parent), bone))


@njit
def _smoothed_pose(predicted, previous_pos, previous_vel, previous_root, previous_yaw, root, yaw, warp, smoothing, dt,
                   out):
    """The pose fed back next tick (root frame): the prediction blended by `smoothing` with the previous
    pose extrapolated by its velocity (over dt / warp) and carried into the current root frame [PFNN]."""
    turn = mat3.yaw_matrix(previous_yaw - yaw)
    shift = mat3.mat_vec(mat3.yaw_matrix(-yaw), mat3.sub(previous_root, root))
    for j in range(predicted.shape[0]):
        moved = mat3.add(mat3.load3(previous_pos, j), mat3.scale(mat3.load3(previous_vel, j), dt / warp))
        extrapolated = mat3.add(mat3.mat_vec(turn, moved), shift)
        mat3.store3(out, j, mat3.lerp(mat3.load3(predicted, j), extrapolated, smoothing))


@njit
def _pose_kernel(root_pos, root_yaw, rot6, predicted, previous_pos, previous_vel, previous_root, previous_yaw, warp,
                 smoothing, dt, fit, parents, offsets, up_path, down_order, above_anchor, fit_single, fit_multi,
                 fit_children, out_joint_pos, out_rot, out_pos):
    joints = parents.shape[0]
    world = np.empty((joints, 3))
    goal, rest = np.empty((max(fit_children.shape[1], 1), 3)), np.empty((max(fit_children.shape[1], 1), 3))
    scratch = np.empty((3, 3, 3))
    for b in range(root_pos.shape[0]):
        yaw = mat3.yaw_matrix(root_yaw[b])
        root = mat3.load3(root_pos, b)
        rot = out_rot[b]
        joint_pos = out_joint_pos[b]
        if smoothing > 0.0:
            _smoothed_pose(predicted[b], previous_pos[b], previous_vel[b], mat3.load3(previous_root, b),
                           previous_yaw[b], root, root_yaw[b], warp[b], smoothing, dt, joint_pos)
        else:
            joint_pos[:] = predicted[b]
        for j in range(joints):
            mat3.store33(rot, j, mat3.mat_mul(yaw, mat3.from_6d(rot6[b], j)))
            mat3.store3(world, j, mat3.add(mat3.mat_vec(yaw, mat3.load3(joint_pos, j)), root))
        if fit:
            _fit_rotations(rot, world, offsets, fit_single, fit_multi, fit_children, goal, rest, scratch)
        for k in range(above_anchor.shape[0]):
            # Unturned: a placement node hangs by its offset (the bundled Hips offset is a take's start, metres
            # to the side), so turning it with the root would swing it across the scene.
            mat3.store33(rot, above_anchor[k], (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))
        _forward_kinematics(rot, mat3.load3(world, up_path[0]), offsets, parents, up_path, down_order, out_pos[b])


# ---------------------------------------------------------------------------------------------
# The pose stage of a tick


@dataclass
class Pose:
    """The pose before the feet: world joint positions [B, J, 3] and rotation matrices [B, J, 3, 3],
    and the root-frame joint positions fed back to the network next tick [B, J, 3]."""

    positions: np.ndarray
    rotations: np.ndarray
    fed_back: np.ndarray


def pose_from_prediction(root_pos, root_yaw, joint_rot6, joint_pos, previous, smoothing: float, dt: float,
                         fit_rotations: bool, plan: SkeletonPlan) -> Pose:
    """World pose from the network's root-frame rotations [B, J, 6] and positions [B, J, 3] (first
    blended by `smoothing` with the previous pose extrapolated; `previous` = (joint_pos, joint_vel,
    pose_root_pos, pose_root_yaw, warp) of the last tick): joints above the anchor are unturned, the
    anchor sits where the positions put it, the others hang from it by their bones (turned to the
    predicted positions when `fit_rotations`)."""
    batch, joints = root_pos.shape[0], plan.num_joints
    rotations, positions, fed_back = np.empty((batch, joints, 3, 3)), np.empty((batch, joints, 3)), np.empty((batch, joints, 3))
    previous_pos, previous_vel, previous_root, previous_yaw, warp = previous
    _pose_kernel(root_pos, root_yaw, np.ascontiguousarray(joint_rot6), np.ascontiguousarray(joint_pos), previous_pos,
                 previous_vel, previous_root, previous_yaw, warp, float(smoothing), float(dt), bool(fit_rotations),
                 plan.parents, plan.offsets, plan.up_path, plan.down_order, plan.above_anchor, plan.fit_single,
                 plan.fit_multi, plan.fit_children, fed_back, rotations, positions)
    return Pose(positions, rotations, fed_back)


# ---------------------------------------------------------------------------------------------
# Batched helpers over quaternions


def forward_kinematics_global(global_rot, anchor_pos, offsets, parents, anchor: int,
                              above_anchor_rot=None) -> tuple[np.ndarray, np.ndarray]:
    """World joint positions from GLOBAL rotations [..., J, 4] (quaternions) and the anchor's
    position [..., 3]. Joints above the anchor take `above_anchor_rot` [..., 4] (default: their given
    rotation) and hang by their offsets above it, so the pose is fully described by the root joint's
    translation plus local rotations (what a BVH writes). Returns (positions [..., J, 3], rotations)."""
    parents = np.asarray(parents, dtype=np.int64)
    rotations = np.array(global_rot, dtype=float, copy=True)
    up_path = np.array([anchor] + list(ancestors(parents, anchor)), dtype=np.int64)
    if above_anchor_rot is not None:
        rotations[..., up_path[1:], :] = np.asarray(above_anchor_rot, dtype=float)[..., None, :]
    shape = rotations.shape[:-2]
    matrices = np.ascontiguousarray(quat_to_matrix(rotations).reshape((-1,) + rotations.shape[-2:-1] + (3, 3)))
    anchors = np.ascontiguousarray(np.broadcast_to(np.asarray(anchor_pos, dtype=float), shape + (3,)).reshape(-1, 3))
    positions = np.empty(matrices.shape[:2] + (3,))
    _batched_forward_kinematics(matrices, anchors, np.ascontiguousarray(offsets, dtype=np.float64), parents, up_path,
                                np.array([j for j in range(len(parents)) if j not in up_path], dtype=np.int64), positions)
    return positions.reshape(shape + positions.shape[-2:]), rotations


@njit
def _batched_forward_kinematics(rot, anchor_pos, offsets, parents, up_path, down_order, pos):
    for b in range(rot.shape[0]):
        _forward_kinematics(rot[b], mat3.load3(anchor_pos, b), offsets, parents, up_path, down_order, pos[b])


@njit
def _batched_fit(rot, world, offsets, fit_single, fit_multi, fit_children):
    goal, rest = np.empty((max(fit_children.shape[1], 1), 3)), np.empty((max(fit_children.shape[1], 1), 3))
    scratch = np.empty((3, 3, 3))
    for b in range(rot.shape[0]):
        _fit_rotations(rot[b], world[b], offsets, fit_single, fit_multi, fit_children, goal, rest, scratch)


def fit_rotations_to_positions(global_mat, positions, plan: SkeletonPlan) -> np.ndarray:
    """Global rotation matrices [..., J, 3, 3] turned so every bone points where the joint positions
    [..., J, 3] put its child (as the tick's pose stage does)."""
    global_mat = np.asarray(global_mat, dtype=float)
    shape = global_mat.shape[:-3]
    rot = np.array(global_mat.reshape((-1,) + global_mat.shape[-3:]), copy=True)
    world = np.ascontiguousarray(np.broadcast_to(positions, shape + global_mat.shape[-3:-2] + (3,)).reshape(rot.shape[:2] + (3,)),
                                 dtype=np.float64)
    _batched_fit(rot, world, plan.offsets, plan.fit_single, plan.fit_multi, plan.fit_children)
    return rot.reshape(global_mat.shape)


