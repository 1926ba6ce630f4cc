"""What one clip's gait is, measured at its own frame rate: the control root, foot contacts and phase
(`GaitLabels`), and the arms-down frames of a standing clip."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfnn_core.features.contract import SIM_FPS
from pfnn_core.motion.contacts import foot_contacts
from pfnn_core.motion.kinematics import forward_kinematics
from pfnn_core.motion.phase import phase_from_contacts, phase_from_root_height, standing_frames, touchdowns
from pfnn_core.motion.root import facing_directions
from pfnn_core.skeleton import contact_joint_order, foot_joints, hand_joints, hips_joint

STANDING_MAX_SPEED = 0.25  # m/s: a clip whose mean root speed is below this is standing data


ARMS_DOWN_TOLERANCE = 0.05  # m: hands within this height of the clip's first frame are "down"


@dataclass
class GaitLabels:
    """Everything measured on one clip at its own frame rate (arrays over frames F)."""

    global_positions: np.ndarray  # [F, J, 3]
    global_rotations: np.ndarray  # [F, J, 4]
    root_xz: np.ndarray  # [F, 2]
    root_yaw: np.ndarray  # [F]
    root_speed: np.ndarray  # [F] m/s
    contact_joints: list  # 4 joint indices (CONTACT_NAMES order)
    contacts: np.ndarray  # [F, 4] bool
    phase: np.ndarray  # [F] in [0, 1)
    phase_method: str  # 'contacts' | 'root_height' | 'none'
    standing: np.ndarray  # [F] bool: both feet planted and the root nearly still
    hips: int
    dt: float


def gait_labels(motion) -> GaitLabels:
    """Root frames, contacts and phase of one clip (at the motion's own frame rate)."""
    dt = motion.frame_time
    global_rotations, global_positions = forward_kinematics(motion.rotations, motion.positions, motion.parents)
    names, parents = motion.names, np.asarray(motion.parents)
    hips = hips_joint(names, parents, global_positions)
    root_xz = global_positions[:, hips, [0, 2]]
    facing = facing_directions(global_positions, names, parents, dt)
    root_yaw = np.arctan2(facing[:, 0], facing[:, 1])
    root_speed = np.linalg.norm(np.gradient(root_xz, dt, axis=0), axis=-1) if len(root_xz) > 1 else np.zeros(len(root_xz))

    joints = contact_joint_order(foot_joints(names, parents))
    contacts = foot_contacts(global_positions[:, joints], dt)
    left, right = contacts[:, 0] | contacts[:, 1], contacts[:, 2] | contacts[:, 3]
    standing = standing_frames(right, left, root_speed)
    steps = min(len(touchdowns(right)), len(touchdowns(left)))
    moving = np.mean(root_speed) > STANDING_MAX_SPEED
    if steps >= 1 or not moving:
        phase, method = phase_from_contacts(right, left, standing=standing), "contacts" if steps >= 1 else "none"
    else:
        min_cycle = 0.5 if np.mean(root_speed) > 2.0 else 0.8
        phase, method = phase_from_root_height(global_positions[:, hips, 1], dt, min_cycle), "root_height"
    return GaitLabels(global_positions, global_rotations, root_xz, root_yaw, root_speed, joints, contacts,
                      phase, method, standing, hips, dt)


def arms_down_frames(labels: GaitLabels, names, parents, tolerance: float = ARMS_DOWN_TOLERANCE) -> np.ndarray:
    """[F] bool: every hand within `tolerance` m of its height in the clip's first frame."""
    hands = list(hand_joints(names).values())
    if not hands:
        return np.ones(len(labels.phase), bool)
    heights = labels.global_positions[:, hands, 1]
    return np.all(np.abs(heights - heights[:1]) < tolerance, axis=-1)


def at_sim_rate(motion):
    if abs(motion.frame_time * SIM_FPS - 1.0) < 1e-6:
        return motion
    from pfnn_core.motion.kinematics import resample

    return resample(motion, SIM_FPS)


def gait_labels_at_sim_rate(motion) -> GaitLabels:
    """Contacts, phase and root of a clip resampled to SIM_FPS, as the dataset builder labels it."""
    return gait_labels(at_sim_rate(motion))
