"""The character runtime: the state of B characters and one simulation tick of all of them.

Owns `CharacterState` (every array has a leading batch dimension B), `initial_state`, `step` (a short
sequence of named stages, each in the file that owns its job), `placed` (a state moved rigidly to
other places), `local_pose` (for BVH output) and `Character` (model + settings + state: `tick` with its
guards, `reset`, `swap_model`, `set_style`).

A tick follows DESIGN.md section 5; the root for this frame was placed at the end of the previous
tick, as in PFNN's demo:
  1. `springs.plan_trajectory`: command springs -> commanded future, blended with the network's last;
  2. `network_input`: that trajectory in the root frame (at a start, a primed past: `control.primed_past`)
     and the fed-back pose, packed by the layout;
  3. `Network.predict`: normalise, PFNN on its device, unnormalise;
  4. `pose.pose_from_prediction`: root frame -> world, rotations fitted to the positions, FK;
  5. `settling_stage` and `pose.place_feet`: foot pins (released relative to the body; a pin the body
     has left behind takes a catch-up step), after a stop the settling steps (`settle.py`), floor,
     two-bone leg IK with a soft reach, the foot turning about a held toe (what is displayed);
  6. `control.root_motion` and `control.advance_phase`: the root and phase of the next tick;
  7. `guards.check_tick`, then the next state (trajectory history, timings).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from pfnn_core import features, settle
from pfnn_core.control import DriftErrors, advance_phase, primed_past, root_motion
from pfnn_core.controller import Command, CommandBatch, stand_command
from pfnn_core.guards import Fault, TickFault, check_tick
from pfnn_core.ik import FootLocks
from pfnn_core.network import Network, timed
from pfnn_core.kinematics import local_rotations
from pfnn_core.pose import forward_kinematics_global, place_feet, pose_from_prediction
from pfnn_core.quat import quat_from_6d, quat_from_yaw, quat_mul, quat_normalize, stack_last, wrap_angle
from pfnn_core.settings import RuntimeSettings
from pfnn_core.history import History
from pfnn_core.springs import (SpringState, facing_from_yaw, network_trajectory, plan_trajectory, remaining_travel,
                               trajectory_features)

log = logging.getLogger(__name__)

HISTORY_LENGTH = 61  # past trajectory samples kept: 1 s at 60 Hz, newest last
SETTLE_TICKS = 60  # standing ticks run on reset so the first shown pose is the network's own, not the mean pose


# ---------------------------------------------------------------------------------------------
# State


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
    lock_target: np.ndarray  # [B, 4, 3] world pin of each contact joint (while released: where it is shown)
    lock_weight: np.ndarray  # [B, 4] 1 = pinned; while released what is left of the release fade (1 -> 0)
    lock_active: np.ndarray  # [B, 4] bool: pin held vs released
    lock_offset: np.ndarray  # [B, 4, 3] world offset of a released joint from the network's joint (fades out)
    lock_stepping: np.ndarray  # [B, 4] bool: released into a catch-up step (`ik.update_lock`)
    swing_lift: np.ndarray  # [B, 2] m: how far each foot is held up in its swing (`pose.place_feet`)
    settle_active: np.ndarray  # [B] bool: settling after a stop (`settle.py`)
    settle_foot: np.ndarray  # [B] int: the foot in a settling step (-1 none, 0 left, 1 right)
    settle_progress: np.ndarray  # [B] progress of that step, 0..1
    settle_start: np.ndarray  # [B, 2, 3] world: where the stepping foot's (ankle, toe) started
    settle_steps: np.ndarray  # [B] int: settling steps taken since the stop
    trajectory: History  # [B, 61, 9] world root position, facing, gait (stand/walk/run); last 1 s, newest last
    traj_future_pos: np.ndarray  # [B, 6, 3] world, blended trajectory the network was conditioned on
    traj_future_dir: np.ndarray  # [B, 6, 3]
    traj_command_pos: np.ndarray  # [B, 6, 3] world, the pure spring prediction of the command
    traj_command_dir: np.ndarray  # [B, 6, 3]
    pose_root_pos: np.ndarray  # [B, 3] root frame `joint_pos` is expressed in
    pose_root_rot: np.ndarray  # [B, 4]
    net_future_pos: np.ndarray  # [B, 6, 3] world, the network's own last prediction
    net_future_dir: np.ndarray  # [B, 6, 3]
    spring_vel: np.ndarray  # [B, 2] commanded velocity (x, z) after the spring, m/s
    spring_acc: np.ndarray  # [B, 2]
    spring_yaw: np.ndarray  # [B] commanded facing after the spring, rad
    spring_yaw_vel: np.ndarray  # [B] rad/s
    drift: DriftErrors  # errors to the command, for drift correction
    root_vel: np.ndarray  # [B, 2] world root velocity applied this tick, m/s
    root_yaw_rate: np.ndarray  # [B] rad/s applied this tick
    stand: np.ndarray  # [B] stand amount 0..1
    warp: np.ndarray  # [B] speed warp of this tick's network view (`control.speed_warp`), >= 1
    style: np.ndarray  # [B, S] style weights fed to the network (S = 0 for a model without styles)
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


def _settle_fields(state: settle.SettleState) -> dict:
    return {"settle_active": state.active, "settle_foot": state.foot, "settle_progress": state.progress,
            "settle_start": state.start, "settle_steps": state.steps}


def initial_state(network: Network, batch: int = 1, positions=None, yaws=None, style=None) -> CharacterState:
    """B characters standing in the training set's mean pose at `positions` ([B, 2] x, z or [B, 3])
    facing `yaws` ([B] rad, 0 = +Z)."""
    if positions is not None and np.asarray(positions).shape[-1] == 3:
        positions = np.asarray(positions, dtype=float)[..., [0, 2]]
    ground = _batched(positions, batch, 2)
    root_pos = np.stack([ground[:, 0], np.zeros(batch), ground[:, 1]], axis=-1)
    yaw = _batched(yaws, batch, 1)[:, 0]
    root_rot = quat_from_yaw(yaw)
    mean_pos, mean_vel = network.mean_pose()
    joint_pos = np.broadcast_to(mean_pos, (batch,) + mean_pos.shape).copy()
    joint_vel = np.broadcast_to(mean_vel, (batch,) + mean_vel.shape).copy()
    mean_rot6 = network.y_layout.unpack(network.norm_np["y_mean"].astype(float))["joint_rot"]
    world_rot = quat_normalize(quat_mul(root_rot[:, None], quat_from_6d(np.broadcast_to(mean_rot6, (batch,) + mean_rot6.shape))))
    anchor_world = yaw_rotate(yaw, joint_pos[:, network.anchor]) + root_pos
    world_pos, world_rot = forward_kinematics_global(world_rot, anchor_world, network.offsets, network.parents,
                                                     network.anchor, above_anchor_rot=np.array([1.0, 0.0, 0.0, 0.0]))
    facing = facing_from_yaw(yaw)
    stand_gait = features.gait_from_speed(np.zeros(batch))
    future = len(network.future_offsets)
    feet = len(network.contact_joints)

    def repeat(values, count):
        return np.repeat(values[:, None], count, axis=1)

    return CharacterState(
        root_pos=root_pos, root_rot=root_rot, phase=np.zeros(batch),
        joint_pos=joint_pos, joint_vel=joint_vel, world_joint_pos=world_pos, world_joint_rot=world_rot,
        contacts=np.zeros((batch, feet)), lock_target=world_pos[:, network.contact_joints].copy(),
        lock_weight=np.zeros((batch, feet)), lock_active=np.zeros((batch, feet), dtype=bool),
        lock_offset=np.zeros((batch, feet, 3)), lock_stepping=np.zeros((batch, feet), dtype=bool),
        swing_lift=np.zeros((batch, feet // 2)), **_settle_fields(settle.idle_state(batch)),
        trajectory=History.filled(np.concatenate([root_pos, facing, stand_gait], axis=-1), HISTORY_LENGTH),
        traj_future_pos=repeat(root_pos, future), traj_future_dir=repeat(facing, future),
        traj_command_pos=repeat(root_pos, future), traj_command_dir=repeat(facing, future),
        pose_root_pos=root_pos.copy(), pose_root_rot=root_rot.copy(),
        net_future_pos=repeat(root_pos, future), net_future_dir=repeat(facing, future),
        spring_vel=np.zeros((batch, 2)), spring_acc=np.zeros((batch, 2)),
        spring_yaw=yaw.copy(), spring_yaw_vel=np.zeros(batch), drift=DriftErrors.empty(batch),
        root_vel=np.zeros((batch, 2)), root_yaw_rate=np.zeros(batch), stand=np.ones(batch), warp=np.ones(batch),
        style=network.default_style(batch) if style is None else np.broadcast_to(style, (batch, network.num_styles)).copy(),
    )


# ---------------------------------------------------------------------------------------------
# The tick


def network_input(state: CharacterState, plan, root_yaw, network: Network, settings: RuntimeSettings,
                  moving) -> np.ndarray:
    """x [B, nx]: the trajectory (past samples from the history, now, the blended future) in the
    current root frame, seen through the speed warp, and the fed-back pose. Characters `moving` [B]
    bool (the stick pushed) that stood in the last second see a primed past (`control.primed_past`)."""
    batch, layout = state.batch_size, network.x_layout
    x = np.empty((batch, layout.size))
    past = state.trajectory.rows(network.past_back)
    if settings.start_priming > 0.0:
        past = primed_past(past, state.root_pos, plan.springs.velocity, plan.gait[:, 0], moving,
                           state.traj_past_gait[:, :, 0], network.past_back / network.sim_fps, settings.start_priming)
    trajectory_features(past, state.root_pos, root_yaw, plan, network.future_rows, layout, x)
    x[:, layout.slice("joint_pos")] = state.joint_pos.reshape(batch, -1)
    x[:, layout.slice("joint_vel")] = state.joint_vel.reshape(batch, -1)
    return x


def settling_stage(state: CharacterState, released, trajectory, settings: RuntimeSettings, network: Network) -> tuple:
    """What the foot stage needs for the settling steps: (settling [B] bool, the settle state, the
    pose shown last tick [B, J, 3], the root's remaining travel [B, 2], the stance). A
    character settles from the moment the stick is `released` [B] (the desired velocity is zero) until it
    moves again; its root then comes to rest with the command spring (`control.root_motion`), so the
    steps aim at the stance under the hips moved by the spring's remaining travel."""
    settling = released & bool(settings.settle_steps and settings.foot_locking and network.stance is not None)
    springs = trajectory.springs
    return (settling, settle.SettleState(state.settle_active, state.settle_foot, state.settle_progress,
                                         state.settle_start, state.settle_steps), state.world_joint_pos,
            remaining_travel(springs.velocity, springs.acceleration, settings.traj_halflife_pos), network.stance)


def step(state: CharacterState, command: Command | Sequence[Command] | CommandBatch, settings: RuntimeSettings,
         dt: float, network: Network) -> CharacterState:
    """One simulation tick of all B characters (one network call); returns the new state."""
    tick_start = time.perf_counter()
    commands = CommandBatch.of(command, state.batch_size)
    root_yaw = state.root_yaw
    network.set_beta(settings.beta)
    trajectory = plan_trajectory(
        SpringState(state.spring_vel, state.spring_acc, state.spring_yaw, state.spring_yaw_vel),
        commands.desired_velocity, commands.facing, commands.strafe, state.root_pos, state.net_future_pos,
        state.net_future_dir, settings, dt, network.future_times, network.blend_weights)
    pushed = commands.desired_velocity.any(axis=1)
    x = network_input(state, trajectory, root_yaw, network, settings, pushed)
    y, infer_ms = timed(network.predict, x, state.phase, state.style, settings.network_mode)
    out = network.y_layout.unpack(y)
    pose = pose_from_prediction(state.root_pos, root_yaw, out["joint_rot"], out["joint_pos"],
                                (state.joint_pos, state.joint_vel, state.pose_root_pos, yaw_of(state.pose_root_rot),
                                 state.warp), settings.pose_smoothing, dt, settings.fit_rotations, network.plan)
    contacts = np.clip(out["contacts"], 0.0, 1.0)
    settling = settling_stage(state, ~pushed, trajectory, settings, network)
    feet = place_feet(pose, state.root_pos, root_yaw, contacts,
                      FootLocks(state.lock_target, state.lock_weight, state.lock_active, state.lock_offset,
                                state.lock_stepping), settings,
                      network.floor_heights, dt, network.plan, *settling, swing_lift=state.swing_lift,
                      heel_off=(trajectory.gait[:, :, 2].max(axis=1) < 0.5) & ~commands.strafe)
    # only characters that take settling steps leave their root to the command alone (the steps go where
    # the command spring comes to rest); without steps the network's motion stays
    motion = root_motion(state.root_pos, root_yaw, out["root_vel"], out["root_yaw_rate"][:, 0],
                         trajectory.springs.velocity, trajectory.command_yaw[:, 0], trajectory.command_speed,
                         trajectory.warp, state.drift, settings, dt, float(network.future_times[0]), settling[0],
                         commands.strafe, state.traj_past_gait[:, :, 0])
    phase = advance_phase(state.phase, motion, out["dphase"][:, 0], trajectory.warp, settings, dt,
                          lambda speed: settings.stride_scale * network.stride_length(speed, state.style),
                          network.sim_fps)
    joint_vel = np.ascontiguousarray(out["joint_vel"])
    fault = check_tick(y, pose.fed_back, joint_vel, motion.speed, feet.extent, network.limits)
    net_future_pos, net_future_dir = network_trajectory(out["future_pos"], out["future_dir"], state.root_pos, root_yaw,
                                                        trajectory.warp, trajectory.command_dir)
    springs = trajectory.springs
    return CharacterState(
        root_pos=motion.position, root_rot=quat_from_yaw(motion.yaw), phase=phase,
        joint_pos=pose.fed_back, joint_vel=joint_vel,
        world_joint_pos=feet.positions, world_joint_rot=feet.rotations, contacts=contacts,
        lock_target=feet.locks.target, lock_weight=feet.locks.weight, lock_active=feet.locks.active,
        lock_offset=feet.locks.offset, lock_stepping=feet.locks.stepping, swing_lift=feet.swing_lift,
        **_settle_fields(feet.settle),
        trajectory=state.trajectory.append(np.concatenate([motion.position, facing_from_yaw(motion.yaw),
                                                           trajectory.gait[:, 0]], axis=-1)),
        traj_future_pos=trajectory.future_pos, traj_future_dir=trajectory.future_dir,
        traj_command_pos=trajectory.command_pos, traj_command_dir=trajectory.command_dir,
        pose_root_pos=state.root_pos, pose_root_rot=state.root_rot,
        net_future_pos=net_future_pos, net_future_dir=net_future_dir,
        spring_vel=springs.velocity, spring_acc=springs.acceleration, spring_yaw=springs.yaw,
        spring_yaw_vel=springs.yaw_velocity, drift=motion.drift, root_vel=motion.velocity,
        root_yaw_rate=motion.yaw_rate, stand=motion.stand, warp=trajectory.warp, style=state.style,
        ticks=state.ticks + 1, fault=fault,
        timings={"tick_ms": (time.perf_counter() - tick_start) * 1000.0, "infer_ms": infer_ms},
    )


# ---------------------------------------------------------------------------------------------
# Moving and mixing states


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
    history = History.from_window(np.concatenate([yaw_rotate(yaws, window[..., 0:3]) + shift[:, None],
                                                  yaw_rotate(yaws, window[..., 3:6]), window[..., 6:9]], axis=-1))
    return dataclasses.replace(
        state, root_pos=point(state.root_pos[:, None])[:, 0], root_rot=rotation(state.root_rot[:, None])[:, 0],
        phase=state.phase[index].copy(), joint_pos=state.joint_pos[index].copy(), joint_vel=state.joint_vel[index].copy(),
        world_joint_pos=point(state.world_joint_pos), world_joint_rot=rotation(state.world_joint_rot),
        contacts=state.contacts[index].copy(), lock_target=point(state.lock_target),
        lock_weight=state.lock_weight[index].copy(), lock_active=state.lock_active[index].copy(),
        lock_offset=vector(state.lock_offset), lock_stepping=state.lock_stepping[index].copy(),
        swing_lift=state.swing_lift[index].copy(), settle_active=state.settle_active[index].copy(),
        settle_foot=state.settle_foot[index].copy(), settle_progress=state.settle_progress[index].copy(),
        settle_start=point(state.settle_start), settle_steps=state.settle_steps[index].copy(), trajectory=history,
        traj_future_pos=point(state.traj_future_pos), traj_future_dir=vector(state.traj_future_dir),
        traj_command_pos=point(state.traj_command_pos), traj_command_dir=vector(state.traj_command_dir),
        pose_root_pos=point(state.pose_root_pos[:, None])[:, 0], pose_root_rot=rotation(state.pose_root_rot[:, None])[:, 0],
        net_future_pos=point(state.net_future_pos), net_future_dir=vector(state.net_future_dir),
        spring_vel=planar(state.spring_vel), spring_acc=planar(state.spring_acc),
        spring_yaw=wrap_angle(state.spring_yaw[index] + yaws), spring_yaw_vel=state.spring_yaw_vel[index].copy(),
        drift=DriftErrors.empty(batch), root_vel=planar(state.root_vel), root_yaw_rate=state.root_yaw_rate[index].copy(),
        stand=state.stand[index].copy(), warp=state.warp[index].copy(), style=state.style[index].copy(), fault=None)


def replace_characters(state: CharacterState, index, other: CharacterState) -> CharacterState:
    """A copy of `state` whose characters `index` [n] are `other`'s n characters."""
    index = np.asarray(index)
    changes = {}
    for f in dataclasses.fields(state):
        value, replacement = getattr(state, f.name), getattr(other, f.name)
        if isinstance(value, np.ndarray):
            value = value.copy()
            value[index] = replacement
            changes[f.name] = value
        elif isinstance(value, History):
            changes[f.name] = value.replace(index, replacement)
        elif isinstance(value, DriftErrors):
            changes[f.name] = DriftErrors(value.sums.replace(index, replacement.sums), value.count)
    return dataclasses.replace(state, fault=None, **changes)


def local_pose(state: CharacterState, skeleton: dict, characters=slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """The displayed pose on the training skeleton: (local rotations [B, J, 4], root joint translation
    [B, 3] in metres) of `characters` (default all); every other joint sits at its skeleton offset."""
    parents = np.asarray(skeleton["parents"], dtype=int)
    root = int(np.flatnonzero(parents < 0)[0])
    return local_rotations(state.world_joint_rot[characters], parents), state.world_joint_pos[characters, root].copy()


# ---------------------------------------------------------------------------------------------
# The object the viewer and the drive hold


class Character:
    """Model + settings + state of B characters: what the viewer and the headless drive hold.

    Every tick the settings are clamped to the ranges that suit the model (`RuntimeSettings.fit_to_model`)
    and the tick is checked (`guards.check_tick`): a character whose tick ran away is put back in the
    settled standing pose where it stood, and a `guards.Fault` is recorded (`faults`, `take_messages`)
    and logged, naming the settings that were away from the model's defaults.
    """

    MAX_FAULTS = 50

    def __init__(self, checkpoint, settings: RuntimeSettings | None = None, batch: int = 1,
                 device: str = "auto", path: str = "auto", positions=None, yaws=None,
                 settle_ticks: int = SETTLE_TICKS, style=None):
        self.settings = settings if settings is not None else RuntimeSettings.from_checkpoint_meta(checkpoint.meta)
        self.batch = batch
        self.settle_ticks = settle_ticks
        self.faults: list[Fault] = []
        self._unreported: list[str] = []
        self._load(checkpoint, device, path)
        self.state = self._fresh(positions, yaws, style)
        self.previous_state = self.state

    # ---- model ---------------------------------------------------------------------------------
    def _load(self, checkpoint, device, path) -> None:
        self.network = Network(checkpoint, device=device, path=path)
        self.model_defaults = RuntimeSettings.from_checkpoint_meta(checkpoint.meta, checkpoint.config)
        self.model_defaults.fit_to_model(checkpoint.meta, checkpoint.config)
        for name, old, new in self.settings.fit_to_model(checkpoint.meta, checkpoint.config):
            self._report(f"Setting {name} = {old:g} is outside what this model supports; using {new:g}")
        self._template = self._settled_template()
        self._last_values = self.settings.values()
        self._last_change = None
        self.time_s = 0.0

    def _settled_template(self) -> CharacterState:
        """One character standing at the origin, settled for `settle_ticks` with the model's default
        settings (the mean input pose is an average, not a pose the network holds)."""
        network = self.network
        state = initial_state(network, 1)
        dt = 1.0 / network.sim_fps
        for _ in range(self.settle_ticks):
            state = step(state, stand_command(), self.model_defaults, dt, network)
            if state.fault is not None:
                raise ValueError(f"{network.checkpoint.path or 'checkpoint'}: the model cannot stand still: "
                                 f"{state.fault.reasons[0]}")
        if self.settle_ticks > 0 and network.floor_heights is None:
            network.floor_heights = state.world_joint_pos[0, network.contact_joints, 1].copy()
            log.warning("%s: no floor_heights in the checkpoint (trained before they were stored); the floor "
                        "of each foot joint is taken from the model's settled standing pose: %s m",
                        network.checkpoint.path or "checkpoint", np.round(network.floor_heights, 3).tolist())
        return dataclasses.replace(state, ticks=0, drift=DriftErrors.empty(1))

    def _fresh(self, positions, yaws, style=None) -> CharacterState:
        positions = np.zeros((self.batch, 2)) if positions is None else np.asarray(positions, dtype=float)
        yaws = np.zeros(self.batch) if yaws is None else yaws
        state = placed(self._template, np.broadcast_to(positions, (self.batch, positions.shape[-1])), yaws)
        if style is not None:
            state = dataclasses.replace(state, style=self._checked_style(style))
        return state

    @property
    def skeleton(self) -> dict:
        return self.network.skeleton

    @property
    def setting_limits(self) -> dict:
        """(low, high) of every numeric setting for this model (what the panel's sliders span)."""
        return self.settings.all_limits()

    # ---- ticking -------------------------------------------------------------------------------
    def tick(self, command: Command | Sequence[Command] | CommandBatch, dt: float) -> CharacterState:
        self._watch_settings()
        self.previous_state = self.state
        state = step(self.state, command, self.settings, dt, self.network)
        if state.fault is not None:
            state = self._recover(state)
        self.state = state
        self.time_s += dt
        return state

    def _watch_settings(self) -> None:
        for name, old, new in self.settings.clamp():
            self._report(f"Setting {name} = {old:g} is outside this model's range; clamped to {new:g}")
        values = self.settings.values()
        if values != self._last_values:
            for name, old, new in zip(self.settings.field_names(), self._last_values, values):
                if old != new:
                    self._last_change = (name, old, new, self.time_s)
            self._last_values = values

    def _settings_note(self) -> str:
        changed = [f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"
                   for name, value, default in zip(self.settings.field_names(), self.settings.values(),
                                                   self.model_defaults.values()) if value != default]
        note = ("Settings away from the model's defaults: " + ", ".join(changed)) if changed else \
            "All settings at the model's defaults"
        if self._last_change is not None:
            name, old, new, when = self._last_change
            note += f"; last changed: {name} {old} -> {new} at {when:.1f} s"
        return note + "."

    def _recover(self, state: CharacterState) -> CharacterState:
        """Put the faulty characters back in the settled pose where they stood before the tick."""
        fault, before = state.fault, self.state
        index = fault.characters
        fresh = placed(self._template, before.root_pos[index], before.root_yaw[index])
        fresh = dataclasses.replace(fresh, style=before.style[index].copy())
        what = fault.reasons[0] + (f" (and {len(index) - 1} more characters)" if len(index) > 1 else "")
        last = self.faults[-1] if self.faults else None
        if last is not None and last.what == what and last.tick >= state.ticks - 2:
            last.count, last.tick = last.count + 1, state.ticks
        else:
            record = Fault(tick=state.ticks, time_s=self.time_s, characters=[int(i) for i in index], what=what,
                           settings_note=self._settings_note())
            self.faults = (self.faults + [record])[-self.MAX_FAULTS:]
            self._report(record.message)
        return replace_characters(state, index, fresh)

    def _report(self, message: str) -> None:
        log.warning("%s", message)
        self._unreported.append(message)

    def take_messages(self) -> list[str]:
        """Fault and clamping messages since the last call (the viewer shows them in its panel)."""
        messages, self._unreported = self._unreported, []
        return messages

    # ---- control -------------------------------------------------------------------------------
    def reset(self, positions=None, yaws=None) -> CharacterState:
        style = self.state.style
        self.state = dataclasses.replace(self._fresh(positions, yaws), style=style)
        self.previous_state = self.state
        self.time_s = 0.0
        return self.state

    def _checked_style(self, style) -> np.ndarray:
        """[B, S] style weights from one style for all (a name, an index or [S] weights) or one per
        character [B, S]; weights must be finite, >= 0 and sum to 1 (within 1e-3; renormalised)."""
        count = self.network.num_styles
        names = self.network.style_names
        if count == 0:
            raise ValueError("this model has no style input (model_config.num_styles = 0)")
        if isinstance(style, str):
            if style not in names:
                raise ValueError(f"unknown style {style!r}; this model's styles are {names or list(range(count))}")
            style = names.index(style)
        if isinstance(style, (int, np.integer)):
            if not 0 <= style < count:
                raise ValueError(f"style index {style} out of range 0..{count - 1}")
            style = np.eye(count)[style]
        weights = np.asarray(style, dtype=float)
        if weights.shape not in ((count,), (self.batch, count)):
            raise ValueError(f"style weights have shape {weights.shape}, expected ({count},) or ({self.batch}, {count})")
        total = weights.sum(axis=-1, keepdims=True)
        if not np.isfinite(weights).all() or (weights < 0).any() or np.any(np.abs(total - 1.0) > 1e-3):
            raise ValueError(f"style weights must be finite, >= 0 and sum to 1, got {weights.tolist()}")
        return np.broadcast_to(weights / total, (self.batch, count)).copy()

    def set_style(self, style) -> None:
        """Style of every character (a name, an index or [S] weights) or per character ([B, S])."""
        self.state = dataclasses.replace(self.state, style=self._checked_style(style))

    def style_name(self, index: int = 0) -> str:
        """Character `index`'s dominant style ('' for a model without styles)."""
        if not self.network.num_styles:
            return ""
        return self.network.style_names[int(np.argmax(self.state.style[index]))]

    def swap_model(self, checkpoint, device: str | None = None, path: str | None = None) -> None:
        """Hot swap the network; the characters keep their place, heading, phase and trajectory."""
        old, old_network = self.state, self.network
        self._load(checkpoint, device or str(old_network.device), path or old_network.path)
        fresh = placed(self._template, old.root_pos, old.root_yaw)
        keep = ["phase", "trajectory", "traj_future_pos", "traj_future_dir", "traj_command_pos", "traj_command_dir",
                "net_future_pos", "net_future_dir", "spring_vel", "spring_acc", "spring_yaw", "spring_yaw_vel",
                "root_vel", "root_yaw_rate", "stand", "warp"]
        if self.network.names == old_network.names:
            keep += ["joint_pos", "joint_vel", "world_joint_pos", "world_joint_rot", "pose_root_pos", "pose_root_rot"]
        if self.network.num_styles == old.style.shape[1]:
            keep.append("style")
        self.state = dataclasses.replace(fresh, **{name: getattr(old, name) for name in keep})
        self.previous_state = self.state

    def local_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return local_pose(self.state, self.network.skeleton)
