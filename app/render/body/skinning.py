"""Linear blend skinning of the body: up to four joints and weights per vertex (from its distance to
the body parts), the per-frame bind-to-pose matrices and their CPU reference blend (the GPU does the same
in `shaders/body.glsl`), and world rotations fitted to sources that have joint positions only."""

from __future__ import annotations

import numpy as np

from app.render.body.mesh import BodyMesh
from app.render.body.primitives import Primitives
from app.render.body.rig import Rig, topological_order
from app.render.body.surface import primitive_distances
from pfnn_core.math.quat import quat_to_matrix

INFLUENCES = 4  # joints per vertex


def skin_weights(points: np.ndarray, prims: Primitives, parents, falloff: float) -> tuple[np.ndarray, np.ndarray]:
    """(joints [V, 4], weights [V, 4]): per vertex the joint of the nearest body part and the joints
    next to it in the skeleton (parent, children), weighted by a Gaussian of how much farther their
    parts are than the nearest, the four largest kept and normalised."""
    parents = np.asarray(parents)
    distances = primitive_distances(points, prims)
    joints = np.unique(prims.joint)
    per_joint = np.stack([distances[:, prims.joint == j].min(axis=-1) for j in joints], axis=-1)  # [V, K]
    nearest = joints[np.argmin(per_joint, axis=-1)]
    nearest_distance = per_joint.min(axis=-1, keepdims=True)
    adjacent = (joints[None, :] == nearest[:, None]) | (parents[joints][None, :] == nearest[:, None]) | \
        (parents[nearest][:, None] == joints[None, :])
    weight = np.exp(-((per_joint - nearest_distance) / falloff) ** 2) * adjacent
    order = np.argsort(-weight, axis=-1)[:, :INFLUENCES]
    top = np.take_along_axis(weight, order, axis=-1)
    top = np.where(top > 0.02 * top[:, :1], top, 0.0)
    top /= top.sum(axis=-1, keepdims=True)
    chosen = joints[order]
    chosen = np.where(top > 0, chosen, chosen[:, :1])
    return chosen.astype(np.int32), top.astype(np.float32)


def skinning_matrices(rotations: np.ndarray, positions: np.ndarray, bind_rot: np.ndarray,
                      bind_pos: np.ndarray) -> np.ndarray:
    """[..., J, 3, 4] matrices taking bind-pose points to the pose (world rotations [..., J, 4] or
    rotation matrices [..., J, 3, 3], positions [..., J, 3]): x -> R R_bind^T (x - p_bind) + p."""
    rotations = np.asarray(rotations, np.float64)
    rotation = quat_to_matrix(rotations) if rotations.shape[-1] == 4 else rotations
    relative = rotation @ np.swapaxes(quat_to_matrix(np.asarray(bind_rot, np.float64)), -1, -2)
    translation = positions - np.einsum("...ij,...j->...i", relative, np.asarray(bind_pos, np.float64))
    return np.concatenate([relative, translation[..., None]], axis=-1)


def skin_vertices(mesh: BodyMesh, matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Linear blend skinning on the CPU (the reference for the vertex shader): (positions, normals)."""
    blended = np.einsum("vk,vkij->vij", mesh.weights.astype(np.float64), matrices[mesh.joints])
    positions = np.einsum("vij,vj->vi", blended[:, :, :3], mesh.vertices) + blended[:, :, 3]
    normals = np.einsum("vij,vj->vi", blended[:, :, :3], mesh.normals)
    return positions, normals / np.maximum(np.linalg.norm(normals, axis=-1, keepdims=True), 1e-12)



def rotation_plan(rig: Rig):
    """What fitting rotations to a positions-only rig needs (`pfnn_core.pose.skeleton_plan` without names)."""
    from pfnn_core.runtime.pose import skeleton_plan

    parents = np.asarray(rig.parents)
    return skeleton_plan(None, parents, rig.offsets, anchor=int(np.flatnonzero(parents < 0)[0]))


def rotations_from_positions(rig: Rig, positions: np.ndarray, fit=None) -> np.ndarray:
    """World rotation matrices [..., J, 3, 3] for a source that has joint positions only (a rig from
    `rig_from_positions`): each bone swung from its reference direction onto its current one, a joint
    with several children turned to fit all of them, leaves turned with their parents. `fit`:
    `rotation_plan(rig)`, made once by callers that run every frame."""
    from pfnn_core.runtime.pose import fit_rotations_to_positions

    parents = np.asarray(rig.parents)
    positions = np.asarray(positions, np.float64)
    identity = np.broadcast_to(np.eye(3), positions.shape[:-1] + (3, 3))
    matrices = fit_rotations_to_positions(identity, positions, fit if fit is not None else rotation_plan(rig))
    has_children = np.zeros(len(parents), bool)
    has_children[parents[parents >= 0]] = True
    for joint in topological_order(parents):
        if not has_children[joint] and parents[joint] >= 0:
            matrices[..., joint, :, :] = matrices[..., parents[joint], :, :]
    return matrices

