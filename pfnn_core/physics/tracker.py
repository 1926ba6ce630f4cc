"""`PhysicsTracker`: B simulated bodies following the kinematic poses the runtime shows, one tick at a time.

    tracker = PhysicsTracker(body, PhysicsSettings(), batch=B)
    pose = tracker.step(world_joint_pos [B, J, 3], world_joint_rot [B, J, 4], dt)   # -> SimulatedPose
    tracker.push([0, 0, 30], characters=[0])   # an impulse (N s, world axes) at the chest, next tick

Each tick the servo targets are the kinematic pose's local rotations measured from each joint's
reference (`BodyFit.reference`). Along the tick's substeps every target moves from last tick's to this
one's (a target that jumped once per tick would kick the body 60 times a second); each joint's damping
pulls toward the target's angular velocity, not toward rest, and each joint also carries what hangs
from it (MuJoCo's bias forces: gravity and the motion's own inertial forces, as a muscle would), so
the springs only correct. The hips are held to the kinematic hips by residual forces (the hand of
god, as in Residual Force Control, Yuan and Kitani 2020): a spring toward the kinematic hips' position
and rotation plus the damping times their velocity, the damping itself on the free joint, where MuJoCo
integrates it implicitly (a hand-written damper on the root went unstable in a trial here; a
constraint to a mocap body sized its stiffness for the light pelvis alone and let the body sway and
turn 10 cm and 30 degrees off). A push is a force at the chest over one tick, and the hold gives way
to it: its target takes the push's velocity change and returns like a critically damped spring
(`PhysicsSettings.push_return_frequency`), so the body is carried off by the push and brought back
while its limbs react to the force itself. A body whose state goes non-finite, or strays far from its
target, is put back on the kinematic pose and the event is reported (`take_messages`). With
`PhysicsSettings.landing_hold` a planted simulated sole is held where it landed (`landing.py`): the
stance leg's targets are turned to keep the simulated foot's landing offset from the kinematic pin. While
a kinematic foot is planted its leg's servos are `stance_stiffness` times as stiff (the model's gains
set per character for the tick's substeps and put back after it). The first tick
(and `reset`) starts each body on its kinematic pose, at rest. `snapshot` / `restore` keep and put
back everything a tick reads, so stepping back in time restores the bodies as they were.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import mujoco
import numpy as np

from pfnn_core.math.quat import quat_inv, vector_length
from pfnn_core.physics.body import PhysicsBody
from pfnn_core.physics.events import MAX_IMPULSE
from pfnn_core.physics.landing import LandingHold
from pfnn_core.physics.servo_targets import hold_targets, joint_targets, substep_targets
from pfnn_core.physics.settings import PhysicsSettings

log = logging.getLogger(__name__)

RESET_DISTANCE = 1.0  # m: a body whose hips are this far from the kinematic hips is put back on them
# A swinging foot that grazes the floor (the mocap's toes pass within millimetres of it) slides over it
# instead of catching: only the soles of a planted kinematic foot grip.
PLANTED_HEIGHT, PLANTED_SPEED, SWING_FRICTION = 0.02, 0.5, 0.05  # m, m/s, friction coefficient
_HORIZONTAL = np.array([1.0, 0.0, 1.0])


def as_slice(index):
    """A slice for an index array that is one increasing run (a view and a plain copy instead of numpy's
    gather), else the array itself: the same elements either way."""
    index = np.asarray(index, dtype=int)
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


def _log_mujoco_warning(text: str) -> None:
    log.warning("MuJoCo: %s", text)


@dataclass
class SimulatedPose:
    """What one tick of the simulation shows, in the runtime's conventions (world, metres, (w, x, y, z))."""

    positions: np.ndarray  # [B, J, 3] every joint (the ones above the hips move with the simulated hips)
    rotations: np.ndarray  # [B, J, 4] global rotations
    foot_forces: np.ndarray  # [B, 4, 3] N: world force of the floor on each contact joint's soles
    root_force: np.ndarray  # [B] N: the hold's force on the hips (the hand of god), mean over the tick
    floor_force: np.ndarray  # [B] N: the floor's whole vertical force on the body, mean over the tick's substeps
    tracking_error: np.ndarray  # [B] m: mean distance of the simulated joints from the kinematic ones
    centre_of_mass: np.ndarray  # [B, 3] world


@dataclass
class _TickTargets:
    """One character's targets for one tick's substeps (arrays in MuJoCo's address order)."""

    springs: np.ndarray  # [substeps, 4N] the ball joints' spring rotations
    joint_feed: np.ndarray  # [3N] damping times the target's angular velocity
    positions: np.ndarray  # [substeps, 3] the hips' target
    rotations: np.ndarray  # [substeps, 4]
    push: np.ndarray  # [3] damping times the hips' target velocity (world)
    spin: np.ndarray  # [3] damping times the hips' target angular velocity (world)


@dataclass
class TrackerSnapshot:
    """A tracker's state between two ticks (`PhysicsTracker.snapshot` / `restore`); arrays are copies."""

    states: np.ndarray  # [B, S] MuJoCo's integration state of each body (mj_getState)
    bias: np.ndarray  # [B, nv] the bias forces each body's next tick starts from
    previous: tuple | None  # last tick's targets, hips position and rotation, contact joints
    pending: np.ndarray  # [B, 3] pushes not applied yet (N s)
    give_way: np.ndarray  # [B, 2, 3] the hold target's push offset and its velocity
    started: np.ndarray  # [B] bool
    time_s: float
    landing: tuple = ()  # LandingHold.state() and the simulated contact joints after the tick


class PhysicsTracker:
    def __init__(self, body: PhysicsBody, settings: PhysicsSettings | None = None, batch: int = 1):
        if mujoco.get_mju_user_warning() is None:  # MuJoCo would otherwise write MUJOCO_LOG.TXT into the working folder
            mujoco.set_mju_user_warning(_log_mujoco_warning)
        self.body, self.batch = body, int(batch)
        self.settings = settings if settings is not None else PhysicsSettings()
        self.datas = [mujoco.MjData(body.model) for _ in range(self.batch)]
        plan = body.plan
        self.parents = np.asarray(plan.parents)
        self.inverse_reference = quat_inv(np.array([plan.node(j).reference for j in body.ball_joints]))
        # every ball joint has a parent (the hips: free)
        self._parent_index, self._joint_index = self.parents[body.ball_joints], np.asarray(body.ball_joints)
        self.carried = [j for j in range(len(plan.names)) if j not in set(body.joints)]  # above the hips
        # the same indices as slices where they are one run (the bundled skeleton's all are)
        self._joints, self._body_ids = as_slice(body.joints), as_slice(body.body_ids)
        self._carried = as_slice(self.carried)
        self._gain_joints, self._gain_dofs = as_slice(body.joint_ids), as_slice(body.dof_index)
        # [F, N]: each leg's servos (foot f is contact slots 2f, 2f + 1)
        self._leg_servos = np.zeros((len(body.leg_servos), len(body.ball_joints)), dtype=bool)
        for foot, servos in enumerate(body.leg_servos):
            self._leg_servos[foot, servos] = True
        self._previous = None  # (targets [B, N, 4], hips position [B, 3], hips rotation [B, 4], feet [B, 4, 3])
        self._pending = np.zeros((self.batch, 3))
        self._give_way = np.zeros((self.batch, 2, 3))  # the hold target's push offset and its velocity
        self._started = np.zeros(self.batch, dtype=bool)
        self.landing = LandingHold(plan.names, plan.parents, plan.contact_joints, self.batch)
        self._foot_bodies = np.array([body.model.body(plan.names[j]).id for j in plan.contact_joints])
        self._simulated_feet = np.zeros((self.batch, len(self._foot_bodies), 3))  # the contact joints after the last tick
        self._messages: list[str] = []
        self._clamped = None  # the settings' values as last clamped
        self.resets = 0
        self.time_s = 0.0

    # ---- control -------------------------------------------------------------------------------
    def _characters(self, characters) -> np.ndarray:
        return np.arange(self.batch) if characters is None else np.atleast_1d(np.asarray(characters, dtype=int))

    def reset(self, characters=None) -> None:
        """The next tick starts these characters (default all) on their kinematic pose, at rest."""
        index = self._characters(characters)
        self._started[index] = False
        self._pending[index] = 0.0
        self.landing.reset(index)

    def push(self, impulse, characters=None) -> None:
        """An impulse (N s, world x, y, z; [3] or [n, 3]) at the chest of these characters (default all),
        applied over the next tick."""
        impulse = np.asarray(impulse, dtype=float)
        if impulse.shape[-1:] != (3,) or not np.isfinite(impulse).all():
            raise ValueError(f"push: expected 3 finite numbers (N s, world x, y, z), got {impulse.tolist()}")
        size = np.linalg.norm(impulse, axis=-1, keepdims=True)
        if (size > MAX_IMPULSE).any():
            self._report(f"push of {float(size.max()):.0f} N s is larger than {MAX_IMPULSE:g} N s; scaled down to it")
            impulse = impulse * np.minimum(1.0, MAX_IMPULSE / np.maximum(size, 1e-12))
        index = self._characters(characters)
        self._pending[index] += np.broadcast_to(impulse, (len(index), 3))

    def take_messages(self) -> list[str]:
        """Clamped settings, scaled pushes and resets since the last call."""
        messages, self._messages = self._messages, []
        return messages

    def _report(self, message: str) -> None:
        log.warning("%s", message)
        self._messages.append(message)

    def snapshot(self) -> "TrackerSnapshot":
        """Everything the next tick reads, copied: each body's MuJoCo state (positions, velocities,
        warm start, applied forces) and the bias forces its next tick starts from, and the tracker's own
        tick-to-tick values (last tick's targets, the hold's give-way, pending pushes)."""
        model, spec = self.body.model, mujoco.mjtState.mjSTATE_INTEGRATION
        states = np.zeros((self.batch, mujoco.mj_stateSize(model, spec)))
        for b, data in enumerate(self.datas):
            mujoco.mj_getState(model, data, states[b], spec)
        previous = None if self._previous is None else tuple(a.copy() for a in self._previous)
        return TrackerSnapshot(states, np.array([data.qfrc_bias for data in self.datas]), previous,
                               self._pending.copy(), self._give_way.copy(), self._started.copy(), self.time_s,
                               self.landing.state() + (self._simulated_feet.copy(),))

    def restore(self, snapshot: "TrackerSnapshot") -> None:
        """Every body and the tracker as they were at `snapshot` (stepping back in time): the ticks after
        it then run exactly as they ran the first time."""
        model, spec = self.body.model, mujoco.mjtState.mjSTATE_INTEGRATION
        for b, data in enumerate(self.datas):
            mujoco.mj_setState(model, data, snapshot.states[b], spec)
            data.qfrc_bias[:] = snapshot.bias[b]
        self._previous = None if snapshot.previous is None else tuple(a.copy() for a in snapshot.previous)
        self._pending[:], self._give_way[:] = snapshot.pending, snapshot.give_way
        self._started[:], self.time_s = snapshot.started, snapshot.time_s
        if snapshot.landing:
            self.landing.set_state(snapshot.landing[:-1])
            self._simulated_feet[:] = snapshot.landing[-1]

    # ---- targets -------------------------------------------------------------------------------
    def targets(self, world_rot: np.ndarray) -> np.ndarray:
        """[B, N, 4] servo targets: each ball joint's local rotation measured from its reference (its qpos)."""
        # `local_rotations(world_rot, parents)[:, ball_joints]`, worked out for the ball joints alone (compiled)
        out = np.empty((world_rot.shape[0], len(self.body.ball_joints), 4))
        joint_targets(world_rot, self._parent_index, self._joint_index, self.inverse_reference, out)
        return out

    def _start(self, b: int, world_pos, world_rot, targets) -> None:
        """Put body b on the kinematic pose (its joints at `targets` [N, 4]), at rest."""
        data, body = self.datas[b], self.body
        mujoco.mj_resetData(body.model, data)
        root = body.plan.root
        data.qpos[0:3], data.qpos[3:7] = world_pos[root], world_rot[root]
        data.qpos[body.spring_index] = targets.ravel()
        mujoco.mj_forward(body.model, data)
        self._started[b] = True
        self._give_way[b] = 0.0

    def _tick_targets(self, targets, world_pos, world_rot, dt: float, servo_scale=None) -> list[_TickTargets]:
        """Every character's substep targets, from last tick's kinematic pose to this one's (`servo_scale`
        [B, N]: each servo's gains times this, for the damping's feed-forward; default 1)."""
        body, substeps, root = self.body, self.settings.substeps, self.body.plan.root
        last_targets, last_pos, last_rot = self._previous[0], self._previous[1], self._previous[2]
        share = np.arange(1, substeps + 1) / substeps
        count = len(body.ball_joints)
        springs, rotations = np.empty((self.batch, substeps, 4 * count)), np.empty((self.batch, substeps, 4))
        joint_feed, turn = np.empty((self.batch, 3 * count)), np.empty((self.batch, 3))
        gains = np.broadcast_to(body.kv, (self.batch, count)) if servo_scale is None else body.kv * servo_scale
        substep_targets(last_targets, targets, last_rot, world_rot[:, root], body.address_order, gains, dt, springs,
                        rotations, joint_feed, turn)
        start = last_pos + self._give_way[:, 0]
        self._give_way_step(dt)
        move = world_pos[:, root] + self._give_way[:, 0] - start
        kv = body.root_kv
        positions = start[:, None] + share[None, :, None] * move[:, None]  # [B, n, 3]
        push, spin_hips = kv[0:3] * move / dt, kv[3:6] * turn / dt
        return [_TickTargets(springs[b], joint_feed[b], positions[b], rotations[b], push[b], spin_hips[b])
                for b in range(self.batch)]

    # ---- the tick ------------------------------------------------------------------------------
    def step(self, world_pos, world_rot, dt: float) -> SimulatedPose:
        """One tick of every body toward the kinematic pose (world joint positions [B, J, 3] and global
        rotations [B, J, 4] (w, x, y, z), as `CharacterState.world_joint_pos` / `world_joint_rot`)."""
        world_pos, world_rot = np.asarray(world_pos, float), np.asarray(world_rot, float)
        if self.settings.values() != self._clamped:  # the settings were changed since they were last checked
            for name, old, new in self.settings.clamp():
                self._report(f"physics setting {name} = {old} is outside its range; using {new:g}")
            self._clamped = self.settings.values()
        body, settings, root = self.body, self.settings, self.body.plan.root
        body.apply(settings, dt)
        feet = world_pos[:, body.plan.contact_joints]
        starting = np.flatnonzero(~self._started)
        # a body starting this tick stands still on its kinematic feet (as `_previous` will say for it)
        last_feet = feet.copy() if self._previous is None else self._previous[3].copy()
        last_feet[starting] = feet[starting]
        planted = self.planted(feet, dt, last_feet)
        if settings.landing_hold > 0.0 or self.landing.offset.any():
            # a planted sole held where it landed: the stance legs' targets turned to keep it there
            simulated = self._simulated_feet.copy()
            simulated[starting] = feet[starting]
            self.landing.update(planted[:, 0::2], simulated, feet, settings.landing_hold, dt)
            targets = self.targets(self.landing.rotations(world_pos, world_rot))
        else:
            targets = self.targets(world_rot)
        if self._previous is None:
            self._previous = (targets.copy(), world_pos[:, root].copy(), world_rot[:, root].copy(), feet.copy())
        for b in starting:
            self._start(b, world_pos[b], world_rot[b], targets[b])
            for previous, now in zip(self._previous, (targets, world_pos[:, root], world_rot[:, root], feet)):
                previous[b] = now[b]
        servo_scale = self._stance_scale(planted) if settings.stance_stiffness != 1.0 else None
        plans = self._tick_targets(targets, world_pos, world_rot, dt, servo_scale)
        help_force, floor_force = np.zeros(self.batch), np.zeros(self.batch)
        sole_means = np.zeros((self.batch, 4, 3))
        frictions = np.where(planted[:, body.sole_owner], settings.friction, SWING_FRICTION)  # [B, soles]
        friction, pushed = body.model.geom_friction, self._pending.any(axis=1)
        stiffness, damping, joints, dofs = body.model.jnt_stiffness, body.model.dof_damping, self._gain_joints, self._gain_dofs
        if servo_scale is not None:  # the planted legs' servos: every character's gains, one array each
            gains = (body.kp * servo_scale, np.repeat(body.kv * servo_scale, 3, axis=1))
            stance = ~np.all(servo_scale == 1.0, axis=1)  # [B]: a character whose gains are not the model's own
        written = False  # the model holds a character's gains instead of its own
        for b, data in enumerate(self.datas):
            if pushed[b]:  # the chest's applied force is zero between ticks
                data.xfrc_applied[body.chest_body, 0:3] = self._pending[b] / dt
            friction[body.sole_index, 0] = frictions[b]
            if servo_scale is not None and (stance[b] or written):
                stiffness[joints], damping[dofs] = gains[0][b], gains[1][b]
                written = bool(stance[b])
            help_force[b], floor_force[b], sole_means[b] = self._substeps(data, plans[b], dt)
            self._simulated_feet[b] = data.xpos[self._foot_bodies]
            if pushed[b]:
                data.xfrc_applied[body.chest_body, 0:3] = 0.0
            self._check(b, world_pos, world_rot, targets)
        if written:  # the model's own gains back between ticks
            stiffness[joints], damping[dofs] = body.kp, np.repeat(body.kv, 3)
        self._pending[:] = 0.0
        self._previous = (targets, world_pos[:, root].copy(), world_rot[:, root].copy(), feet.copy())
        self.time_s += dt
        return self.read_pose(world_pos, world_rot, sole_means, help_force, floor_force)

    def _substeps(self, data, targets: _TickTargets, dt: float) -> tuple[float, float, np.ndarray]:
        """Run one tick's substeps; returns the hold's mean force on the hips over them, the floor's
        mean vertical force on the body (N) and the floor's mean force on each contact joint's soles
        ([4, 3] N: the soles' contact sensors, which MuJoCo fills inside every step with what
        `sole_forces` reads from the contacts after it).

        The hold's force and torque of every substep are worked out at the tick's start, for the
        targets of each substep and where the hips will be then (now plus their velocity times the
        substep's time from the tick's start), so a substep only writes the joints' spring rotations and
        the hips' force and steps. The hold's damping lives on the free joint, where MuJoCo integrates
        it implicitly: its mean force over the tick is the damping times the hips' displacement, exactly.
        The floor's force is summed over every substep: the constraint force on the free joint's
        translation is the floor's whole force on the body (contacts between limbs and joint limits
        cancel there), where the contacts read after the last substep alone show a sole's chatter
        (a heel corner leaving the floor for one substep) as no force at all."""
        body, model = self.body, self.body.model
        springs, joint_dofs, root = body.spring_slice, body.dof_slice, body.root_dofs
        qpos, qvel, qfrc, spring = data.qpos, data.qvel, data.qfrc_applied, model.qpos_spring
        substeps = len(targets.springs)
        # each substep's force and torque on the free joint's six dofs (compiled), one write per substep; the
        # turn to each substep's target and the spin's damping term in the hips' frame at the tick's start
        hold = np.empty((substeps, 6))
        hold_targets(qpos, qvel, targets.positions, targets.rotations, targets.push, body.root_kp, dt, int(root[0]),
                     int(root[3]), hold)
        inverse, spin = np.zeros(4), np.zeros(3)
        mujoco.mju_negQuat(inverse, qpos[3:7])
        mujoco.mju_rotVecQuat(spin, targets.spin, inverse)
        hold[:, 3:6] += spin
        forces = hold[:, 0:3]
        hold_dofs = slice(root[0], root[0] + 6)
        # each joint also carries what hangs from it (MuJoCo's bias forces at the tick's start: gravity and
        # the motion's own inertial forces, as a muscle would), so the springs only correct
        qfrc[joint_dofs] = targets.joint_feed + data.qfrc_bias[joint_dofs]
        start, floor, constraint = qpos[0:3].copy(), 0.0, data.qfrc_constraint
        up, sensed, soles = int(root[1]), data.sensordata[body.sole_sensors], np.zeros(body.sole_sum.shape[1] * 3)
        spring, hold_force = spring[springs], qfrc[hold_dofs]  # views into the model and the data
        for spring_k, hold_k in zip(targets.springs, hold):
            spring[...] = spring_k
            hold_force[...] = hold_k
            mujoco.mj_step(model, data)
            floor += constraint[up]
            soles += sensed
        mean = np.add.reduce(forces, axis=0) / substeps - body.root_kv[0:3] * (qpos[0:3] - start) / dt
        return math.sqrt(mean.dot(mean)), floor / substeps, body.sole_sum @ soles.reshape(-1, 3) / substeps

    def planted(self, feet, dt: float, last_feet) -> np.ndarray:
        """[B, 4] bool per contact joint: its foot is planted in the kinematic pose (feet [B, 4, 3]: the
        ankle or the toe within PLANTED_HEIGHT of its floor level and slower than PLANTED_SPEED since
        `last_feet` [B, 4, 3], last tick's). Both soles of a planted foot grip the floor (a heel lifting off
        a held toe still touches); others slide."""
        joint = feet[..., 1] - self.body.plan.floor_heights < PLANTED_HEIGHT
        move = feet - last_feet
        joint &= np.sqrt(move[..., 0] * move[..., 0] + move[..., 2] * move[..., 2]) / dt < PLANTED_SPEED  # vector_length
        return np.repeat(joint[:, 0::2] | joint[:, 1::2], 2, axis=1)

    def _stance_scale(self, planted) -> np.ndarray:
        """[B, N] the servos' gain scale this tick: `stance_stiffness` on the legs whose kinematic foot is
        planted (planted [B, 4]: the contact joints'; slots 2f and 2f+1 are foot f), 1 elsewhere."""
        stance = (planted[:, 0::2, None] & self._leg_servos).any(axis=1)  # [B, N]
        return np.where(stance, self.settings.stance_stiffness, 1.0)

    def _give_way_step(self, dt: float) -> None:
        """The hold target's push offset over one tick: a critically damped spring (exact solution),
        started by the pending pushes' velocity change (horizontal: a vertical push acts on the body only)."""
        if not (self._pending.any() or self._give_way.any()):
            return  # no push yet: the offset stays exactly zero
        offset, velocity = self._give_way[:, 0], self._give_way[:, 1]
        velocity += self._pending * _HORIZONTAL / self.settings.body_mass
        omega = 2.0 * np.pi * self.settings.push_return_frequency
        decay = np.exp(-omega * dt)
        drift = velocity + omega * offset
        offset[:], velocity[:] = (offset + drift * dt) * decay, (velocity - omega * drift * dt) * decay

    def _check(self, b: int, world_pos, world_rot, targets) -> None:
        """Put a body back on its kinematic pose when its state went non-finite or it ran off."""
        data, root = self.datas[b], self.body.plan.root
        if np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all() and \
                vector_length(data.qpos[0:3] - world_pos[b, root]) <= RESET_DISTANCE:
            return
        self.resets += 1
        self._report(f"physics body {b} ran away at {self.time_s:.2f} s; put back on the kinematic pose")
        self._start(b, world_pos[b], world_rot[b], targets[b])
        self.landing.reset([b])
        self._simulated_feet[b] = world_pos[b, self.body.plan.contact_joints]

    # ---- reading -------------------------------------------------------------------------------
    def read_pose(self, world_pos, world_rot, foot_forces, root_force, floor_force) -> SimulatedPose:
        """The simulated pose of every body now (`world_pos` / `world_rot`: the kinematic pose, for the
        joints above the hips and the tracking error), with the tick's mean forces (see `SimulatedPose`)."""
        body, joints, body_ids = self.body, self._joints, self._body_ids
        batch = world_pos.shape[0]
        positions, rotations = np.array(world_pos, copy=True), np.array(world_rot, copy=True)
        com = np.zeros((batch, 3))
        for b, data in enumerate(self.datas):
            positions[b, joints] = data.xpos[body_ids]
            rotations[b, joints] = data.xquat[body_ids]
            com[b] = data.subtree_com[body.root_body]
        if self.carried:  # joints above the hips keep their kinematic rotation and place relative to the hips
            root = body.plan.root
            positions[:, self._carried] += (positions[:, root] - world_pos[:, root])[:, None]
        # (numpy's gather here lays the batch innermost, which decides the order the mean's sum adds in)
        error = np.add.reduce(vector_length(positions[:, body.joints] - world_pos[:, body.joints]), axis=-1) / len(body.joints)
        return SimulatedPose(positions, rotations, foot_forces, root_force, floor_force, error, com)

    def sole_forces(self, data) -> np.ndarray:
        """[4, 3] N: world force of the floor on each contact joint's soles, from the contacts after the
        last step (one `mj_contactForce` per contact: the tick reads the soles' sensors instead)."""
        body = self.body
        forces, frame_force = np.zeros((4, 3)), np.zeros(6)
        for i in range(data.ncon):
            contact = data.contact[i]
            if body.floor not in (contact.geom1, contact.geom2):
                continue
            other = contact.geom2 if contact.geom1 == body.floor else contact.geom1
            slot = body.sole_slot.get(int(other))
            if slot is None:
                continue
            mujoco.mj_contactForce(body.model, data, i, frame_force)
            world = contact.frame.reshape(3, 3).T @ frame_force[:3]  # the contact frame's rows are its axes
            forces[slot] += world if contact.geom1 == body.floor else -world  # the force on geom2
        return forces
