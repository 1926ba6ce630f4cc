"""One clip's network samples at SIM_FPS (`clip_features`), and the calm standing samples made from a
standing clip's arms-down frames.

Conventions: Y up, metres, seconds; yaw about +Y with yaw 0 facing +Z. A vector in "root frame i" is
the world vector rotated by the inverse root yaw of frame i, relative to the root position (hips
projected on the ground). When the skeleton's root joint is not the hips (the bundled `joint_Root`
never moves), that joint's features are the control root itself (position 0, identity rotation, root
velocity), so they do not grow with the distance walked from the world origin.

Standing data. The bundled set has no idle clips; its standing clips (feet planted, arms raised and
lowered) are detected as clips whose root barely moves. Only their arms-down frames (hand heights
within ARMS_DOWN_TOLERANCE of the clip's first frame) are kept, as calm standing samples: zero root
motion and trajectory, facing straight ahead, gait 'stand', contacts on, dphase 0. Each arms-down run
is replicated STANDING_REPLICAS times with phase offsets spread over [0, 1), so a zero command gives a
calm pose at whatever phase the runtime holds, and standing does not tie to phase 0 only. Every other
replica sees a past trajectory that drifts a little (`with_past_drift`) and must still stand still."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pfnn_core.features.contract import FUTURE_OFFSETS, SIM_FPS, TRAJ_OFFSETS, gait_from_speed
from pfnn_core.features.layout import ModelLayout, make_layouts
from pfnn_core.math import quat
from pfnn_core.math.planar import inverse_rotate_xz
from pfnn_core.math.quat import wrap_angle
from pfnn_core.motion.gait_labels import STANDING_MAX_SPEED, GaitLabels, arms_down_frames, at_sim_rate, gait_labels
from pfnn_core.motion.phase import cycle_strides
from pfnn_core.motion.root import trajectory_window

MIN_CLIP_S = 0.5


STANDING_REPLICAS = 40  # calm standing ~10% of the bundled set: at 2% (8) the network stood still only to 0.1 m/s


STAND_DRIFT_SPEED = 0.3  # m/s: the most a standing sample's past trajectory drifts (see `with_past_drift`)


STAND_DRIFT_TURN = 0.4  # rad/s


@dataclass
class ClipFeatures:
    """Network samples of one clip at SIM_FPS: row r is frame r + 1 (frame 0 has no previous pose)."""

    x: np.ndarray  # [N, nx] float32
    y: np.ndarray  # [N, ny] float32
    phase: np.ndarray  # [N]
    is_standing_clip: bool
    arms_down: np.ndarray  # [N] bool (all True unless a standing clip)
    mean_speed: float
    cycle_speeds: np.ndarray  # per complete cycle: mean speed (m/s)
    stride_lengths: np.ndarray  # per complete cycle: stride length (m)
    labels: GaitLabels = field(repr=False)


def clip_features(motion, layouts: ModelLayout | None = None, runs: bool | None = None) -> ClipFeatures:
    """X, Y and phase for every frame (but the first) of one clip, resampled to SIM_FPS first.

    `runs`: the clip is a run (True) or a walk (False) by its content label; None takes the gait from
    the speed alone (`gait_from_speed`)."""
    motion = at_sim_rate(motion)
    dt = 1.0 / SIM_FPS
    layouts = layouts or make_layouts(motion.num_joints)
    labels = gait_labels(motion)
    frames = len(labels.phase)
    if frames < 2:
        raise ValueError(f"{motion.source or 'clip'}: too short ({frames} frames) to make samples")
    names, parents = motion.names, np.asarray(motion.parents)

    yaw = labels.root_yaw
    root_xyz = np.zeros((frames, 3))
    root_xyz[:, [0, 2]] = labels.root_xz
    root_rot = quat.quat_from_yaw(yaw)
    world_pos, world_rot = labels.global_positions.copy(), labels.global_rotations.copy()
    root_joint = int(np.flatnonzero(parents < 0)[0])
    if root_joint != labels.hips:
        world_pos[:, root_joint], world_rot[:, root_joint] = root_xyz, root_rot
    world_vel = np.gradient(world_pos, dt, axis=0)

    local_pos = world_pos - root_xyz[:, None]
    local_pos[..., [0, 2]] = inverse_rotate_xz(yaw[:, None], local_pos[..., [0, 2]])
    local_vel = world_vel.copy()
    local_vel[..., [0, 2]] = inverse_rotate_xz(yaw[:, None], world_vel[..., [0, 2]])
    local_rot6 = quat.quat_to_6d(quat.quat_inv_mul(root_rot[:, None], world_rot))

    traj_pos, traj_dir, traj_speed = trajectory_window(labels.root_xz, yaw, TRAJ_OFFSETS, dt)
    future_pos, future_dir, _ = trajectory_window(labels.root_xz, yaw, FUTURE_OFFSETS, dt)

    now, before = np.arange(1, frames), np.arange(0, frames - 1)
    root_vel = inverse_rotate_xz(yaw[before][:, None], (labels.root_xz[now] - labels.root_xz[before])[:, None])[:, 0] / dt
    x = layouts.x.pack({
        "traj_pos": traj_pos[now], "traj_dir": traj_dir[now],
        "traj_gait": gait_from_speed(traj_speed[now], None if runs is None else float(runs)),
        "joint_pos": local_pos[before], "joint_vel": local_vel[before],
    })
    y = layouts.y.pack({
        "root_vel": root_vel,
        "root_yaw_rate": wrap_angle(yaw[now] - yaw[before])[:, None] / dt,
        "dphase": ((labels.phase[now] - labels.phase[before]) % 1.0)[:, None],
        "contacts": labels.contacts[now].astype(np.float32),
        "future_pos": future_pos[now], "future_dir": future_dir[now],
        "joint_pos": local_pos[now], "joint_vel": local_vel[now], "joint_rot": local_rot6[now],
    })
    mean_speed = float(np.mean(labels.root_speed))
    standing_clip = mean_speed < STANDING_MAX_SPEED
    arms_down = arms_down_frames(labels, names, parents) if standing_clip else np.ones(frames, bool)
    if standing_clip:
        speeds, strides = np.zeros(0), np.zeros(0)
    else:
        speeds, strides = cycle_strides(labels.phase, root_xyz, dt)
    return ClipFeatures(x, y, labels.phase[now], standing_clip, arms_down[now] & arms_down[before],
                        mean_speed, speeds, strides, labels)


def calm_standing_samples(features: ClipFeatures, layouts: ModelLayout, replicas: int, rng):
    """Arms-down rows of a standing clip as calm standing samples (see the module docstring).

    Returns (x, y, phase, next_index_local) with each arms-down run replicated `replicas` times
    at phase offsets spread over [0, 1); next_index_local chains rows within a run, -1 at its end.
    """
    keep = np.flatnonzero(features.arms_down)
    if len(keep) == 0:
        return None
    x, y = features.x[keep].copy(), features.y[keep].copy()
    xv, yv = layouts.x.unpack(x), layouts.y.unpack(y)
    xv["traj_pos"][:] = 0.0
    xv["traj_dir"][:] = (0.0, 1.0)
    xv["traj_gait"][:] = (1.0, 0.0, 0.0)
    for name in ("root_vel", "root_yaw_rate", "dphase", "future_pos"):
        yv[name][:] = 0.0
    yv["future_dir"][:] = (0.0, 1.0)
    yv["contacts"][:] = 1.0
    run_start = np.r_[True, np.diff(keep) != 1]
    run_id = np.cumsum(run_start) - 1
    last_in_run = np.r_[run_id[1:] != run_id[:-1], True]
    xs, ys, phases, nexts = [], [], [], []
    for replica in range(replicas):
        offsets = (replica + rng.random(run_id.max() + 1)) / replicas
        phases.append(offsets[run_id])
        nexts.append(np.where(last_in_run, -1, np.arange(len(keep)) + 1 + replica * len(keep)))
        xs.append(with_past_drift(x, layouts, rng, run_id) if replica % 2 else x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(phases), np.concatenate(nexts)


def with_past_drift(x, layouts: ModelLayout, rng, run_id) -> np.ndarray:
    """Calm standing inputs whose PAST trajectory drifts a little (up to STAND_DRIFT_SPEED and
    STAND_DRIFT_TURN, one draw per run of rows), the future still standing: the answer stays "stand
    still" (zero root motion). Without them a network driven by its own root motion feeds a small
    drift back through the past trajectory and walks off while it should stand."""
    x = x.copy()
    parts = layouts.x.unpack(x)
    runs = run_id.max() + 1
    speed = rng.uniform(0.0, STAND_DRIFT_SPEED, runs)[run_id]
    heading = rng.uniform(-np.pi, np.pi, runs)[run_id]
    turn = rng.uniform(-STAND_DRIFT_TURN, STAND_DRIFT_TURN, runs)[run_id]
    times = np.minimum(np.asarray(TRAJ_OFFSETS, float), 0.0) / SIM_FPS  # s, 0 for now and the future
    parts["traj_pos"][...] = (speed[:, None, None] * times[None, :, None]
                              * np.stack([np.sin(heading), np.cos(heading)], axis=-1)[:, None, :])
    parts["traj_dir"][...] = np.stack([np.sin(turn[:, None] * times), np.cos(turn[:, None] * times)], axis=-1)
    return x
