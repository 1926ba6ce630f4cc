"""One simulation tick of all B characters: `step(state, command, settings, dt, model)`.

The root for this frame was placed at the end of the previous tick, as in PFNN's demo:
  1. `trajectory.plan_trajectory`: command springs -> commanded future, blended with the model's last;
  2. `model_input`: that trajectory in the root frame (at a start, a primed past:
     `root_motion.primed_past`) and the fed-back pose, packed by the feature layout;
  3. `MotionModel.predict`: the motion model (PFNN, motion matching, motion VAE) on its device;
  4. `pose.pose_from_prediction`: root frame -> world, rotations fitted to the positions, FK; then
     `lean.lean_upper_body`: the upper body tilted toward the command springs' acceleration;
  5. `settling_stage` and `feet.place_feet`: foot pins (released relative to the body; a pin the body
     has left behind takes a catch-up step), after a stop the settling steps (`settle.py`), floor,
     two-bone leg IK with a soft reach, the foot turning about a held toe (what is displayed);
  6. `root_motion.root_motion` and `root_motion.advance_phase`: the root and phase of the next tick;
  7. `guards.check_tick`, then the next state (trajectory history, timings)."""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from pfnn_core.math.quat import quat_from_yaw
from pfnn_core.models.base import ModelInput, MotionModel
from pfnn_core.runtime.command import Command, CommandBatch
from pfnn_core.runtime.contact_root import GIVE_WAY_SHAPE, contact_root_velocity
from pfnn_core.runtime.feet import Settling, place_feet, release_times
from pfnn_core.runtime.guards import check_tick
from pfnn_core.runtime.lean import lean_upper_body
from pfnn_core.runtime.pose import pose_from_prediction
from pfnn_core.runtime.root_motion import advance_phase, primed_past, root_motion, start_lean, walked_past
from pfnn_core.runtime.settings import RuntimeSettings
from pfnn_core.runtime.state import CharacterState, yaw_of
from pfnn_core.runtime.trajectory import (
    facing_from_yaw,
    network_trajectory,
    plan_trajectory,
    remaining_travel,
    trajectory_features,
)


def model_input(state: CharacterState, plan, root_yaw, model: MotionModel, settings: RuntimeSettings,
                  moving) -> np.ndarray:
    """x [B, nx]: the trajectory (past samples from the history, now, the blended future) in the
    current root frame, seen through the speed warp, and the fed-back pose. Characters `moving` [B]
    bool (the stick pushed) that stood in the last second see a primed past (`control.primed_past`);
    with `walk_past_after_run`, ones slowing from a run a past that runs no more than now
    (`root_motion.walked_past`)."""
    batch, layout = state.batch_size, model.x_layout
    x = np.empty((batch, layout.size))
    past = state.trajectory.rows(model.past_back)
    if settings.start_priming > 0.0:
        past = primed_past(past, state.root_pos, plan.springs.velocity, plan.gait[:, 0], moving,
                           state.traj_past_gait[:, :, 0], model.past_back / model.sim_fps, settings.start_priming)
    if settings.walk_past_after_run:
        past = walked_past(past, plan.gait[:, 0])
    trajectory_features(past, state.root_pos, root_yaw, plan, model.future_rows, layout, x)
    x[:, layout.slice("joint_pos")] = state.joint_pos.reshape(batch, -1)
    x[:, layout.slice("joint_vel")] = state.joint_vel.reshape(batch, -1)
    return x


def settling_stage(state: CharacterState, released, trajectory, settings: RuntimeSettings,
                   model: MotionModel) -> Settling:
    """What the foot stage needs for the settling steps. A character settles from the moment the stick is
    `released` [B] (the desired velocity is zero) until it moves again; its root then comes to rest with
    the command spring (`root_motion.root_motion`), so the steps aim at the stance under the hips moved
    by the spring's remaining travel."""
    settling = released & bool(settings.settle_steps and settings.foot_locking and model.stance is not None)
    springs = trajectory.springs
    return Settling(settling, state.settle,
                    remaining_travel(springs.velocity, springs.acceleration, settings.traj_halflife_pos), model.stance)


def step(state: CharacterState, command: Command | Sequence[Command] | CommandBatch, settings: RuntimeSettings,
         dt: float, model: MotionModel) -> CharacterState:
    """One simulation tick of all B characters (one model call); returns the new state."""
    tick_start = time.perf_counter()
    commands = CommandBatch.of(command, state.batch_size)
    root_yaw = state.root_yaw
    trajectory = plan_trajectory(
        state.springs,
        commands.desired_velocity, commands.facing, commands.strafe, state.root_pos, state.net_future_pos,
        state.net_future_dir, settings, dt, model.future_times, model.blend_weights)
    pushed = commands.desired_velocity.any(axis=1)
    x = model_input(state, trajectory, root_yaw, model, settings, pushed)
    infer_start = time.perf_counter()
    output = model.step(ModelInput(x, state.phase, state.style, state.model_state, settings, dt,
                                        trajectory.warp))
    infer_ms = (time.perf_counter() - infer_start) * 1000.0
    y = output.y
    out = model.y_layout.unpack(y)
    pose = pose_from_prediction(state.root_pos, root_yaw, out["joint_rot"], out["joint_pos"],
                                (state.joint_pos, state.joint_vel, state.pose_root_pos, yaw_of(state.pose_root_rot),
                                 state.warp), settings.pose_smoothing, dt, settings.fit_rotations, model.plan)
    lean_upper_body(pose.positions, pose.rotations, trajectory.springs.acceleration, settings.lean_per_acceleration,
                    settings.lean_max, model.plan.lean_root_of)
    contacts = np.clip(out["contacts"], 0.0, 1.0)
    settling = settling_stage(state, ~pushed, trajectory, settings, model)
    walking = trajectory.gait[:, :, 2].max(axis=1) < 0.5
    feet = place_feet(pose, state.root_pos, root_yaw, contacts,
                      state.locks, settings,
                      model.floor_heights, dt, model.plan, settling, shown_before=state.world_joint_pos,
                      swing_lift=state.swing_lift, toe_hold=state.toe_hold, pull=state.pin_pull,
                      heel_off=walking & ~commands.strafe,
                      release_time=release_times(settings, commands.facing, trajectory.springs.velocity))
    # only characters that take settling steps leave their root to the command alone (the steps go where
    # the command spring comes to rest); without steps the network's motion stays
    # a start leans the root on the command; the contact feet give the root back to the model then
    stood = state.traj_past_gait[:, :, 0]
    from_feet = settings.root_from_contacts * (1.0 - start_lean(stood, commands.strafe, settings, GIVE_WAY_SHAPE))
    root_vel = contact_root_velocity(out["root_vel"], out["root_yaw_rate"][:, 0], out["joint_pos"], state.joint_pos,
                                     contacts, model.plan.contact_joints, dt, from_feet)
    motion = root_motion(state.root_pos, root_yaw, root_vel, out["root_yaw_rate"][:, 0],
                         trajectory.springs.velocity, trajectory.command_yaw[:, 0], trajectory.command_speed,
                         trajectory.warp, state.drift, settings, dt, float(model.future_times[0]), settling.characters,
                         commands.strafe, stood)
    phase = advance_phase(state.phase, motion, out["dphase"][:, 0], trajectory.warp, settings, dt,
                          lambda speed: settings.stride_scale * model.stride_length(speed, state.style),
                          model.sim_fps)
    joint_vel = np.ascontiguousarray(out["joint_vel"])
    fault = check_tick(y, pose.fed_back, joint_vel, motion.speed, feet.extent, model.limits)
    net_future_pos, net_future_dir = network_trajectory(out["future_pos"], out["future_dir"], state.root_pos, root_yaw,
                                                        trajectory.warp, trajectory.command_dir)
    return CharacterState(
        root_pos=motion.position, root_rot=quat_from_yaw(motion.yaw), phase=phase,
        joint_pos=pose.fed_back, joint_vel=joint_vel,
        world_joint_pos=feet.positions, world_joint_rot=feet.rotations, contacts=contacts,
        locks=feet.locks, swing_lift=feet.swing_lift, toe_hold=feet.toe_hold, pin_pull=feet.pull, settle=feet.settle,
        trajectory=state.trajectory.append(np.concatenate([motion.position, facing_from_yaw(motion.yaw),
                                                           trajectory.gait[:, 0]], axis=-1)),
        traj_future_pos=trajectory.future_pos, traj_future_dir=trajectory.future_dir,
        traj_command_pos=trajectory.command_pos, traj_command_dir=trajectory.command_dir,
        pose_root_pos=state.root_pos, pose_root_rot=state.root_rot,
        net_future_pos=net_future_pos, net_future_dir=net_future_dir,
        springs=trajectory.springs, drift=motion.drift, root_vel=motion.velocity,
        root_yaw_rate=motion.yaw_rate, stand=motion.stand, warp=trajectory.warp, style=state.style,
        model_state=output.state,
        ticks=state.ticks + 1, fault=fault,
        timings={"tick_ms": (time.perf_counter() - tick_start) * 1000.0, "infer_ms": infer_ms},
    )
