"""The state of B characters (`CharacterState`, every array with a leading batch dimension B) and what
is done to it as a whole: `initial_state`, `placed` (moved rigidly to other places), `replace_characters`,
`local_pose` (for BVH output)."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

import numpy as np

from pfnn_core.features.contract import gait_from_speed
from pfnn_core.math.quat import quat_from_6d, quat_from_yaw, quat_mul, quat_normalize, stack_last, wrap_angle
from pfnn_core.models.base import MotionModel
from pfnn_core.motion.kinematics import local_rotations
from pfnn_core.runtime import settle
from pfnn_core.runtime.guards import TickFault
from pfnn_core.runtime.history import History
from pfnn_core.runtime.ik import FootLocks
from pfnn_core.runtime.pose import forward_kinematics_global
from pfnn_core.runtime.root_motion import DriftErrors
from pfnn_core.runtime.trajectory import SpringState, facing_from_yaw

log = logging.getLogger(__name__)


HISTORY_LENGTH = 61  # past trajectory samples kept: 1 s at 60 Hz, newest last


@dataclass
class CharacterState:
    root_pos: np.ndarray  # [B, 3] world, y = 0; the root of the frame being shown
    root_rot: np.ndarray  # [B, 4] yaw about +Y
    phase: np.ndarray  # [B] in [0, 1)
    joint_pos: np.ndarray  # [B, J, 3] network pose (root frame of `pose_root_*`), fed back next tick
    joint_vel: np.ndarray  # [B, J, 3] m/s, same frame
    world_joint_pos: np.ndarray  # [B, J, 3] displayed, after foot locking
    world_joint_rot: np.ndarray  # [B, J, 4] displayed global rotations
    contacts: np.ndarray  # [B, 4] network contact outputs 0..1 (Foot_L, Toes_L, Foot_R, Toes_R)
    locks: FootLocks  # [B, 4, ...] each contact joint's pin: world target, weight, held, offset, catch-up step
    swing_lift: np.ndarray  # [B, 2] m: how far each foot is held up in its swing (`feet.place_feet`)
    toe_hold: np.ndarray  # [B, 2] m: how far each foot's toe is held down in a toe-off (`reach._hold_toe_off`)
    pin_pull: np.ndarray  # [B, 4] each contact joint's goal's share of the shown foot (`feet._blend_pins`)
    settle: settle.SettleState  # [B, ...] the settling steps after a stop (`settle.py`)
    trajectory: History  # [B, 61, 9] world root position, facing, gait (stand/walk/run); last 1 s, newest last
    traj_future_pos: np.ndarray  # [B, 6, 3] world, blended trajectory the network was conditioned on
    traj_future_dir: np.ndarray  # [B, 6, 3]
    traj_command_pos: np.ndarray  # [B, 6, 3] world, the pure spring prediction of the command
    traj_command_dir: np.ndarray  # [B, 6, 3]
    pose_root_pos: np.ndarray  # [B, 3] root frame `joint_pos` is expressed in
    pose_root_rot: np.ndarray  # [B, 4]
    net_future_pos: np.ndarray  # [B, 6, 3] world, the network's own last prediction
    net_future_dir: np.ndarray  # [B, 6, 3]
    springs: SpringState  # [B, ...] the command springs: velocity (x, z) and facing after the spring
    drift: DriftErrors  # errors to the command, for drift correction
    root_vel: np.ndarray  # [B, 2] world root velocity applied this tick, m/s
    root_yaw_rate: np.ndarray  # [B] rad/s applied this tick
    stand: np.ndarray  # [B] stand amount 0..1
    warp: np.ndarray  # [B] speed warp of this tick's network view (`control.speed_warp`), >= 1
    style: np.ndarray  # [B, S] style weights fed to the network (S = 0 for a model without styles)
    model_state: dict = field(default_factory=dict)  # the motion model's own state, {name: [B, ...]} (root frame)
    ticks: int = 0
    timings: dict = field(default_factory=lambda: {"tick_ms": 0.0, "infer_ms": 0.0})
    fault: TickFault | None = None  # characters whose tick ran away (the Character resets them)

    @property
    def batch_size(self) -> int:
        return int(self.root_pos.shape[0])

    @property
    def root_yaw(self) -> np.ndarray:
        return yaw_of(self.root_rot)

    @property
    def traj_past_pos(self) -> np.ndarray:
        """[B, 61, 3] world root positions of the last second, newest last (a view)."""
        return self.trajectory.window[..., 0:3]

    @property
    def traj_past_dir(self) -> np.ndarray:
        return self.trajectory.window[..., 3:6]

    @property
    def traj_past_gait(self) -> np.ndarray:
        return self.trajectory.window[..., 6:9]


def yaw_of(root_rot) -> np.ndarray:
    """Yaw of yaw-only quaternions (the root rotations), in (-pi, pi]."""
    return wrap_angle(2.0 * np.arctan2(root_rot[..., 2], root_rot[..., 0]))


def yaw_rotate(yaw, vectors) -> np.ndarray:
    """Rotate 3D vectors [B, ..., 3] about +Y by yaw [B] (cheaper than a quaternion for yaw-only frames)."""
    yaw = np.asarray(yaw, dtype=float).reshape((-1,) + (1,) * (vectors.ndim - 2))
    c, s = np.cos(yaw), np.sin(yaw)
    x, z = vectors[..., 0], vectors[..., 2]
    return stack_last(c * x + s * z, vectors[..., 1], c * z - s * x)


def _batched(values, batch: int, width: int, default: float = 0.0) -> np.ndarray:
    if values is None:
        return np.full((batch, width), default)
    return np.broadcast_to(np.asarray(values, dtype=float).reshape(-1, width), (batch, width)).copy()


def initial_state(model: MotionModel, batch: int = 1, positions=None, yaws=None, style=None) -> CharacterState:
    """B characters standing in the training set's mean pose at `positions` ([B, 2] x, z or [B, 3])
    facing `yaws` ([B] rad, 0 = +Z)."""
    if positions is not None and np.asarray(positions).shape[-1] == 3:
        positions = np.asarray(positions, dtype=float)[..., [0, 2]]
    ground = _batched(positions, batch, 2)
    root_pos = np.stack([ground[:, 0], np.zeros(batch), ground[:, 1]], axis=-1)
    yaw = _batched(yaws, batch, 1)[:, 0]
    root_rot = quat_from_yaw(yaw)
    mean_pos, mean_vel, mean_rot6 = model.mean_pose()
    joint_pos = np.broadcast_to(mean_pos, (batch,) + mean_pos.shape).copy()
    joint_vel = np.broadcast_to(mean_vel, (batch,) + mean_vel.shape).copy()
    world_rot = quat_normalize(quat_mul(root_rot[:, None], quat_from_6d(np.broadcast_to(mean_rot6, (batch,) + mean_rot6.shape))))
    anchor_world = yaw_rotate(yaw, joint_pos[:, model.anchor]) + root_pos
    world_pos, world_rot = forward_kinematics_global(world_rot, anchor_world, model.offsets, model.parents,
                                                     model.anchor, above_anchor_rot=np.array([1.0, 0.0, 0.0, 0.0]))
    facing = facing_from_yaw(yaw)
    stand_gait = gait_from_speed(np.zeros(batch))
    future = len(model.future_offsets)
    feet = len(model.contact_joints)

    def repeat(values, count):
        return np.repeat(values[:, None], count, axis=1)

    return CharacterState(
        root_pos=root_pos, root_rot=root_rot, phase=np.zeros(batch),
        joint_pos=joint_pos, joint_vel=joint_vel, world_joint_pos=world_pos, world_joint_rot=world_rot,
        contacts=np.zeros((batch, feet)),
        locks=FootLocks(world_pos[:, model.contact_joints].copy(), np.zeros((batch, feet)), np.zeros((batch, feet), bool),
                        np.zeros((batch, feet, 3)), np.zeros((batch, feet), bool), np.zeros((batch, feet, 3))),
        swing_lift=np.zeros((batch, feet // 2)), toe_hold=np.zeros((batch, feet // 2)),
        pin_pull=np.zeros((batch, feet)), settle=settle.idle_state(batch),
        trajectory=History.filled(np.concatenate([root_pos, facing, stand_gait], axis=-1), HISTORY_LENGTH),
        traj_future_pos=repeat(root_pos, future), traj_future_dir=repeat(facing, future),
        traj_command_pos=repeat(root_pos, future), traj_command_dir=repeat(facing, future),
        pose_root_pos=root_pos.copy(), pose_root_rot=root_rot.copy(),
        net_future_pos=repeat(root_pos, future), net_future_dir=repeat(facing, future),
        springs=SpringState(np.zeros((batch, 2)), np.zeros((batch, 2)), yaw.copy(), np.zeros(batch)),
        drift=DriftErrors.empty(batch),
        root_vel=np.zeros((batch, 2)), root_yaw_rate=np.zeros(batch), stand=np.ones(batch), warp=np.ones(batch),
        style=model.default_style(batch) if style is None else np.broadcast_to(style, (batch, model.num_styles)).copy(),
        model_state=model.initial_model_state(batch),
    )


def placed(state: CharacterState, positions, yaws) -> CharacterState:
    """`state` (one character standing at the origin facing +Z, or B of them) moved rigidly to
    `positions` [B, 2 or 3] facing `yaws` [B]: every world quantity turned about +Y and shifted,
    root-frame quantities kept. The drift errors start empty."""
    positions = np.asarray(positions, dtype=float)
    positions = positions[..., [0, 2]] if positions.shape[-1] == 3 else positions.reshape(-1, 2)
    batch = positions.shape[0]
    yaws = np.broadcast_to(np.asarray(yaws, dtype=float).reshape(-1), (batch,))
    shift = np.stack([positions[:, 0], np.zeros(batch), positions[:, 1]], axis=-1)
    index = np.zeros(batch, dtype=int) if state.batch_size == 1 else np.arange(batch)
    turn = quat_from_yaw(yaws)

    def point(values):
        values = values[index]
        return yaw_rotate(yaws, values) + shift.reshape((batch,) + (1,) * (values.ndim - 2) + (3,))

    def vector(values):
        return yaw_rotate(yaws, values[index])

    def rotation(values):
        values = values[index]
        return quat_normalize(quat_mul(turn.reshape((batch,) + (1,) * (values.ndim - 2) + (4,)), values))

    def planar(values):
        turned = yaw_rotate(yaws, stack_last(values[index][..., 0], 0.0, values[index][..., 1]))
        return turned[..., [0, 2]]

    window = state.trajectory.window[index]
    locks, stop, springs = state.locks, state.settle, state.springs
    history = History.from_window(np.concatenate([yaw_rotate(yaws, window[..., 0:3]) + shift[:, None],
                                                  yaw_rotate(yaws, window[..., 3:6]), window[..., 6:9]], axis=-1))
    return dataclasses.replace(
        state, root_pos=point(state.root_pos[:, None])[:, 0], root_rot=rotation(state.root_rot[:, None])[:, 0],
        phase=state.phase[index].copy(), joint_pos=state.joint_pos[index].copy(), joint_vel=state.joint_vel[index].copy(),
        world_joint_pos=point(state.world_joint_pos), world_joint_rot=rotation(state.world_joint_rot),
        contacts=state.contacts[index].copy(),
        locks=FootLocks(point(locks.target), locks.weight[index].copy(), locks.active[index].copy(), vector(locks.offset),
                        locks.stepping[index].copy(),
                        None if locks.velocity is None else vector(locks.velocity)),
        swing_lift=state.swing_lift[index].copy(), toe_hold=state.toe_hold[index].copy(),
        pin_pull=state.pin_pull[index].copy(),
        settle=settle.SettleState(stop.active[index].copy(), stop.foot[index].copy(), stop.progress[index].copy(),
                                  point(stop.start), stop.steps[index].copy()), trajectory=history,
        traj_future_pos=point(state.traj_future_pos), traj_future_dir=vector(state.traj_future_dir),
        traj_command_pos=point(state.traj_command_pos), traj_command_dir=vector(state.traj_command_dir),
        pose_root_pos=point(state.pose_root_pos[:, None])[:, 0], pose_root_rot=rotation(state.pose_root_rot[:, None])[:, 0],
        net_future_pos=point(state.net_future_pos), net_future_dir=vector(state.net_future_dir),
        springs=SpringState(planar(springs.velocity), planar(springs.acceleration),
                            wrap_angle(springs.yaw[index] + yaws), springs.yaw_velocity[index].copy()),
        drift=DriftErrors.empty(batch), root_vel=planar(state.root_vel), root_yaw_rate=state.root_yaw_rate[index].copy(),
        stand=state.stand[index].copy(), warp=state.warp[index].copy(), style=state.style[index].copy(),
        model_state={name: values[index].copy() for name, values in state.model_state.items()}, fault=None)


def replace_characters(state: CharacterState, index, other: CharacterState) -> CharacterState:
    """A copy of `state` whose characters `index` [n] are `other`'s n characters."""
    index = np.asarray(index)
    changes = {f.name: _replaced(getattr(state, f.name), index, getattr(other, f.name))
               for f in dataclasses.fields(state) if f.name not in ("ticks", "timings", "fault")}
    return dataclasses.replace(state, fault=None, **changes)


def _replaced(value, index, replacement):
    """`value` (an array, or a group of them) with rows `index` from `replacement`."""
    if isinstance(value, np.ndarray):
        value = value.copy()
        value[index] = replacement
        return value
    if isinstance(value, History):
        return value.replace(index, replacement)
    if isinstance(value, DriftErrors):
        return DriftErrors(value.sums.replace(index, replacement.sums), value.count)
    if isinstance(value, dict):
        return {name: _replaced(values, index, replacement[name]) for name, values in value.items()}
    if isinstance(value, tuple):  # FootLocks, SettleState
        return type(value)(*(_replaced(v, index, r) for v, r in zip(value, replacement)))
    if dataclasses.is_dataclass(value):  # SpringState
        return type(value)(**{f.name: _replaced(getattr(value, f.name), index, getattr(replacement, f.name))
                              for f in dataclasses.fields(value)})
    return value


def local_pose(state: CharacterState, skeleton: dict, characters=slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """The displayed pose on the training skeleton: (local rotations [B, J, 4], root joint translation
    [B, 3] in metres) of `characters` (default all); every other joint sits at its skeleton offset."""
    parents = np.asarray(skeleton["parents"], dtype=int)
    root = int(np.flatnonzero(parents < 0)[0])
    return local_rotations(state.world_joint_rot[characters], parents), state.world_joint_pos[characters, root].copy()
