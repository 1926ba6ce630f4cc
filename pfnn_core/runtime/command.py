"""Input vector -> `Command`: the one mapping shared by keyboard, gamepad and scripted input.

Camera convention: `camera_yaw` is the yaw (rotation about +Y, counter-clockwise seen from above,
as `quat.quat_from_yaw`) of the camera's horizontal viewing direction; 0 looks along +Z. A stick's
+y pushes along the viewing direction, +x to the camera's right (at yaw 0 that is world -X, since
the frame is right-handed with Y up).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pfnn_core.runtime.settings import RuntimeSettings

GAITS = ("stand", "walk", "run")


@dataclass
class Command:
    desired_velocity: np.ndarray  # [2] world (x, z), m/s
    facing: np.ndarray | None = None  # [2] world (x, z) unit facing to keep while strafing; None = face the motion
    gait: str = "stand"  # 'stand' | 'walk' | 'run'
    stick: np.ndarray = field(default_factory=lambda: np.zeros(2))  # raw input vector, length <= 1
    run: bool = False
    strafe: bool = False

    @property
    def speed(self) -> float:
        return float(np.linalg.norm(self.desired_velocity))


def stand_command() -> Command:
    return Command(desired_velocity=np.zeros(2))


@dataclass
class CommandBatch:
    """Commands of B characters as arrays (what the runtime tick reads)."""

    desired_velocity: np.ndarray  # [B, 2] world (x, z), m/s
    facing: np.ndarray  # [B, 2] world unit facing kept while strafing (zero where not strafing)
    strafe: np.ndarray  # [B] bool

    @classmethod
    def of(cls, command: "Command | list[Command] | CommandBatch", batch: int) -> "CommandBatch":
        """One command for all B characters, one per character, or a CommandBatch as it is."""
        if isinstance(command, CommandBatch):
            if len(command.strafe) != batch:
                raise ValueError(f"got commands for {len(command.strafe)} characters, expected {batch}")
            return command
        if isinstance(command, Command):
            desired = np.empty((batch, 2))
            desired[:] = command.desired_velocity
            facing = np.zeros((batch, 2))
            if command.facing is not None:
                facing[:] = command.facing
            return cls(desired, facing, np.full(batch, command.facing is not None))
        commands = list(command)
        if len(commands) != batch:
            raise ValueError(f"got {len(commands)} commands for {batch} characters")
        desired = np.array([np.asarray(c.desired_velocity, dtype=float).reshape(2) for c in commands])
        strafe = np.array([c.facing is not None for c in commands])
        facing = np.array([np.zeros(2) if c.facing is None else np.asarray(c.facing, dtype=float).reshape(2)
                           for c in commands])
        return cls(desired.reshape(batch, 2), facing.reshape(batch, 2), strafe.reshape(batch))


def camera_axes(camera_yaw: float) -> tuple[np.ndarray, np.ndarray]:
    """World (x, z) forward and right unit vectors of a camera with the given yaw."""
    forward = np.array([np.sin(camera_yaw), np.cos(camera_yaw)])
    right = np.array([-np.cos(camera_yaw), np.sin(camera_yaw)])
    return forward, right


def clamp_stick(stick_xy) -> np.ndarray:
    stick = np.asarray(stick_xy, dtype=np.float64).reshape(2)
    length = float(np.linalg.norm(stick))
    return stick / length if length > 1.0 else stick


def stick_from_keys(up: bool, down: bool, left: bool, right: bool) -> np.ndarray:
    """Key states -> stick vector (x right, y forward), unit length on diagonals, zero when opposed."""
    stick = np.array([float(right) - float(left), float(up) - float(down)])
    return clamp_stick(stick)


def full_stick_speed(move_xz, facing_xz, run: bool, settings: RuntimeSettings) -> float:
    """Speed (m/s) of a full stick: the run speed when running; walking, the walk speed, or while
    strafing (a kept facing) the speed interpolated by the angle between the move and the facing:
    walk (0 deg) -> side-step (90 deg) -> backward walk (180 deg)."""
    if run:
        return float(settings.run_speed)
    if facing_xz is None:
        return float(settings.walk_speed)
    length = float(np.linalg.norm(move_xz))
    cosine = float(np.dot(move_xz, facing_xz)) / length if length > 1e-9 else 1.0
    share = float(np.arccos(np.clip(cosine, -1.0, 1.0))) / (0.5 * np.pi)  # 0 forward, 1 sideways, 2 backwards
    if share <= 1.0:
        return float(settings.walk_speed + share * (settings.side_step_speed - settings.walk_speed))
    return float(settings.side_step_speed + (share - 1.0) * (settings.walk_back_speed - settings.side_step_speed))


def command_from_world_move(move_xz, run: bool, settings: RuntimeSettings, facing=None,
                            stick=None) -> Command:
    """A move vector already in world (x, z) (length <= 1, 1 = full speed: `full_stick_speed`) -> Command."""
    move = clamp_stick(move_xz)
    length = float(np.linalg.norm(move))
    facing_xz = None
    if facing is not None:
        facing_xz = np.asarray(facing, dtype=np.float64).reshape(2)
        norm = float(np.linalg.norm(facing_xz))
        facing_xz = facing_xz / norm if norm > 1e-9 else None
    if length <= settings.stick_deadzone:
        velocity = np.zeros(2)
        gait = "stand"
    else:
        velocity = move * full_stick_speed(move, facing_xz, run, settings)
        gait = "run" if run else "walk"
    return Command(desired_velocity=velocity, facing=facing_xz, gait=gait,
                   stick=move if stick is None else np.asarray(stick, dtype=np.float64).reshape(2),
                   run=bool(run), strafe=facing_xz is not None)


def command_from_stick(stick_xy, run: bool, strafe: bool, camera_yaw: float, settings: RuntimeSettings,
                       facing=None) -> Command:
    """Camera-relative stick -> Command. Strafing keeps `facing` (world x, z), or the camera's
    viewing direction when none is given."""
    stick = clamp_stick(stick_xy)
    forward, right = camera_axes(camera_yaw)
    move = stick[1] * forward + stick[0] * right
    strafe_facing = None
    if strafe:
        strafe_facing = forward if facing is None else facing
    return command_from_world_move(move, run, settings, facing=strafe_facing, stick=stick)
