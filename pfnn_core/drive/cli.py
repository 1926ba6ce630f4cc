"""Headless drive: `pfnn-drive --script S.json --out DIR [--model M] [--device auto|cpu|cuda]
[--set NAME=VALUE ...] [--crowd N [--crowd-bvh]] [--threads N] [--physics [--physics-set NAME=VALUE ...]]`.

Runs the character runtime on a scripted input at the simulation rate and writes DIR/motion.bvh (the
displayed pose of every tick, after foot locking, on the training skeleton in the data's units) and
DIR/log.csv (LOG_COLUMNS; metres, radians). `--set` changes any runtime setting (`RuntimeSettings`;
a value outside the model's range is clamped, with a note). `--crowd N` runs N characters in one
batched tick on the same script, each offset on a grid (`crowd_offsets`); the log and motion.bvh are
the first character's, and `--crowd-bvh` writes every character's motion to DIR/crowd/. `--physics`:
simulated bodies track the characters; motion.bvh is then theirs and kinematic.bvh the runtime's
(docs/PHYSICS.md). Also `load_script` and `run_drive` for the evaluation.

Script format: {"name": "...", "segments": [{"duration": 6.0, "move": [0, 1], "run": false,
"face": [1, 0]}, ...]}: `move` is the stick vector in WORLD (x, z), length <= 1 (1 = full walk speed,
or full run speed when `run`; lengths up to 1.001, from rounding such as [0.3827, 0.9239], are
normalised); `face` (optional) is a world facing kept while moving (strafing; a full stick then moves
at the side-step or backward-walk speed by its angle to the facing, `controller.full_stick_speed`);
`style` (optional) a style name or {name: weight}: the character takes it, and the full-stick speeds
become the style's (`RuntimeSettings.apply_style`). A top-level `"events": [{"at": 2.0, "push": [30, 0, 0]}]`
(optional) pushes the characters' simulated bodies: an impulse in N s, world axes, at the chest (`physics.events`).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.device import resolve_device
from pfnn_core.features.contract import SIM_FPS
from pfnn_core.jsonfile import read_json
from pfnn_core.math.quat import quat_to_yaw
from pfnn_core.models.checkpoint import CheckpointError
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.motion import bvh
from pfnn_core.motion.bvh import motion_from_poses  # noqa: F401  (its home; app.recorder imports it here)
from pfnn_core.physics.events import parse_events
from pfnn_core.runtime.character import Character
from pfnn_core.runtime.command import Command, command_from_world_move
from pfnn_core.runtime.settings import RuntimeSettings
from pfnn_core.runtime.state import local_pose
from pfnn_core.threads import add_threads_argument, set_thread_counts

LOG_COLUMNS = ("t", "cmd_vx", "cmd_vz", "cmd_face_x", "cmd_face_z", "root_x", "root_z", "root_yaw", "phase",
               "contact_left", "contact_right", "tick_ms", "infer_ms")
DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "assets" / "models" / "default.safetensors"
EXIT_BAD_INPUT = 2
EXIT_WRITE_FAILED = 1  # the outputs could not be written (the message says which and why)
STICK_TOLERANCE = 1e-3  # stick lengths up to 1 + this (rounded diagonals) are normalised, longer ones rejected
CROWD_SPACING = 1.6  # m between neighbours of a crowd


class ScriptError(ValueError):
    """A drive script that cannot be run; the message names the offending field."""


@dataclass
class Segment:
    duration: float  # seconds
    move: tuple[float, float]  # world (x, z) stick, length <= 1
    run: bool = False
    face: tuple[float, float] | None = None  # world (x, z) facing kept while moving
    style: dict | None = None  # style name -> weight (weights sum to 1); None keeps the current style


@dataclass
class DriveScript:
    name: str
    segments: list[Segment]
    events: list = field(default_factory=list)  # physics.events.PushEvent: pushes, applied with physics only

    @property
    def duration(self) -> float:
        return float(sum(segment.duration for segment in self.segments))

    def segment_starts(self) -> list[float]:
        starts = [0.0]
        for segment in self.segments:
            starts.append(starts[-1] + segment.duration)
        return starts

    def segment_at(self, t: float) -> Segment:
        for segment, end in zip(self.segments, self.segment_starts()[1:]):
            if t < end - 1e-9:
                return segment
        return self.segments[-1]


@dataclass
class DriveResult:
    """What a drive produced: the log columns [T] and the displayed pose of every tick."""

    log: dict  # column name -> [T] float array (LOG_COLUMNS)
    joint_positions: np.ndarray  # [T, J, 3] displayed world joint positions, metres
    joint_names: list
    motion: bvh.Motion  # the same poses as a BVH motion on the training skeleton
    dt: float
    script: DriveScript
    joint_contacts: np.ndarray = None  # [T, 4] network contact output per contact joint (Foot_L, Toes_L, Foot_R, Toes_R)
    files: dict = field(default_factory=dict)  # 'bvh', 'log' (, 'crowd': [paths]) when written
    crowd_motions: list = field(default_factory=list)  # every character's motion when asked for (crowd_bvh)
    crowd_offsets: np.ndarray = None  # [N, 2] ground (x, z) start of each character
    faults: list = field(default_factory=list)  # guards.Fault records of the drive
    kinematic_motion: bvh.Motion | None = None  # with physics: the runtime's pose (`motion` is the simulated body)
    physics_log: dict | None = None  # with physics: physics.drive.PHYSICS_COLUMNS -> [T]


# ---------------------------------------------------------------------------------------------
# Script parsing


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScriptError(f"{where}: expected a finite number, got {json.dumps(value)}")
    return float(value)


def _vector(value, where: str, max_length: float | None) -> tuple[float, float]:
    """Two finite numbers; with `max_length`, a length up to max_length + STICK_TOLERANCE (rounding) is
    scaled back to max_length, a longer one is an error."""
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value))
    length = math.hypot(*value) if ok else 0.0
    if ok and max_length is not None:
        ok = length <= max_length + STICK_TOLERANCE
    if not ok:
        limit = f" with length <= {max_length:g}" if max_length is not None else ""
        raise ScriptError(f"{where}: expected 2 numbers{limit}, got {json.dumps(value)}")
    if max_length is not None and length > max_length:
        return float(value[0]) * max_length / length, float(value[1]) * max_length / length
    return float(value[0]), float(value[1])


def _style(value, where: str) -> dict:
    """"elderly" or {"elderly": 0.5, "normal": 0.5} -> {name: weight}, weights >= 0 summing to 1."""
    if isinstance(value, str) and value:
        return {value: 1.0}
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        weights = {name: _number(weight, f"{where}.{name}") for name, weight in value.items()}
        total = sum(weights.values())
        if any(w < 0 for w in weights.values()) or abs(total - 1.0) > 1e-3:
            raise ScriptError(f"{where}: expected weights >= 0 summing to 1, got {json.dumps(value)}")
        return {name: weight / total for name, weight in weights.items()}
    raise ScriptError(f"{where}: expected a style name or {{name: weight, ...}}, got {json.dumps(value)}")


def style_weights(style: dict, names: list[str], where: str = "style") -> np.ndarray:
    """{name: weight} -> weights [S] over a model's style names; ScriptError naming the known styles."""
    unknown = [name for name in style if name not in names]
    if unknown:
        known = ", ".join(names) if names else "none (this model has no style input)"
        raise ScriptError(f"{where}: unknown style {unknown[0]!r}; the model knows {known}")
    weights = np.zeros(len(names))
    for name, weight in style.items():
        weights[names.index(name)] = weight
    return weights


def parse_script(data, source: str = "script") -> DriveScript:
    """Validate a script's JSON value; raise ScriptError naming the first bad field."""
    if not isinstance(data, dict):
        raise ScriptError(f"{source}: expected a JSON object with 'segments', got {type(data).__name__}")
    unknown = sorted(set(data) - {"name", "segments", "description", "events"})
    if unknown:
        raise ScriptError(f"{unknown[0]}: unknown field (expected name, segments, events)")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise ScriptError(f"name: expected a string, got {json.dumps(name)}")
    segments = data.get("segments")
    if not isinstance(segments, list) or not segments:
        raise ScriptError(f"segments: expected a non-empty list, got {json.dumps(segments)}")
    parsed = []
    for index, segment in enumerate(segments):
        where = f"segments[{index}]"
        if not isinstance(segment, dict):
            raise ScriptError(f"{where}: expected an object, got {json.dumps(segment)}")
        extra = sorted(set(segment) - {"duration", "move", "run", "face", "style"})
        if extra:
            raise ScriptError(f"{where}.{extra[0]}: unknown field (expected duration, move, run, face, style)")
        if "duration" not in segment:
            raise ScriptError(f"{where}.duration: missing")
        duration = _number(segment["duration"], f"{where}.duration")
        if duration <= 0.0:
            raise ScriptError(f"{where}.duration: expected a positive number of seconds, got {json.dumps(segment['duration'])}")
        if "move" not in segment:
            raise ScriptError(f"{where}.move: missing")
        move = _vector(segment["move"], f"{where}.move", 1.0)
        run = segment.get("run", False)
        if not isinstance(run, bool):
            raise ScriptError(f"{where}.run: expected true or false, got {json.dumps(run)}")
        face = segment.get("face")
        if face is not None:
            face = _vector(face, f"{where}.face", None)
            if math.hypot(*face) < 1e-9:
                raise ScriptError(f"{where}.face: expected a non-zero direction, got {json.dumps(segment['face'])}")
        style = _style(segment["style"], f"{where}.style") if "style" in segment else None
        parsed.append(Segment(duration, move, run, face, style))
    return DriveScript(name, parsed, parse_events(data.get("events", []), ScriptError))


def load_script(path) -> DriveScript:
    """A script file, validated; ScriptError naming the file and the first bad field."""
    data = read_json(path, "script", ScriptError)
    try:
        return parse_script(data, str(path))
    except ScriptError as error:
        if str(error).startswith(f"{path}:"):
            raise
        raise ScriptError(f"{path}: {error}") from None


def command_for(segment: Segment, settings: RuntimeSettings) -> Command:
    return command_from_world_move(segment.move, segment.run, settings, facing=segment.face)


# ---------------------------------------------------------------------------------------------
# Running


def write_log(path, log: dict) -> None:
    """LOG_COLUMNS as numbers, then `style` (the dominant style's name) when the log has it."""
    names = list(LOG_COLUMNS) + (["style"] if "style" in log else [])
    stream = io.StringIO(newline="")
    writer = csv.writer(stream)
    writer.writerow(names)
    for row in zip(*(log[name] for name in names)):
        writer.writerow([v if name == "style" else f"{float(v):.6g}" if name in ("tick_ms", "infer_ms")
                         else f"{float(v):.7f}" for name, v in zip(names, row)])
    files.write_text(path, stream.getvalue())


def crowd_offsets(count: int, spacing: float = CROWD_SPACING) -> np.ndarray:
    """[count, 2] ground (x, z) starts on a square grid, the first at the origin, rows along +X."""
    side = int(math.ceil(math.sqrt(count)))
    index = np.arange(count)
    return np.stack([index % side, index // side], axis=-1) * float(spacing)


def run_drive(script, checkpoint, out_dir=None, settings: RuntimeSettings | None = None,
              device: str = "auto", backend: str = "auto", crowd: int = 1, crowd_bvh: bool = False, physics=None) -> DriveResult:
    """Run one scripted drive at the simulation rate; write motion.bvh and log.csv into `out_dir` when given.
    `script`: DriveScript, a parsed JSON dict or a path; `checkpoint`: Checkpoint or path. `crowd` characters run
    in one batched tick (offset by `crowd_offsets`); the log and motion are the first one's, `crowd_bvh` keeps (and
    writes, to out_dir/crowd/) every character's motion; `physics` (PhysicsSettings or True): see `drive_physics`."""
    if isinstance(script, (str, Path)):
        script = load_script(script)
    elif isinstance(script, dict):
        script = parse_script(script)
    if isinstance(checkpoint, (str, Path)):
        checkpoint = load_checkpoint(checkpoint)
    settings = settings if settings is not None else RuntimeSettings.for_model(checkpoint.card)
    crowd = int(crowd)
    if crowd < 1:
        raise ValueError(f"crowd: expected at least 1 character, got {crowd}")
    offsets = crowd_offsets(crowd)
    character = Character(checkpoint, settings, batch=crowd, device=device, backend=backend, positions=offsets)
    dt = 1.0 / SIM_FPS
    ticks = max(1, int(round(script.duration / dt)))
    log = {name: np.zeros(ticks) for name in LOG_COLUMNS}
    joints = character.model.num_joints
    joint_positions = np.zeros((ticks, joints, 3))
    joint_contacts = np.zeros((ticks, len(character.model.contact_joints)))
    recorded = crowd if crowd_bvh else 1
    local_rot = np.zeros((ticks, recorded, joints, 4))
    root_translation = np.zeros((ticks, recorded, 3))
    contact_slots = (0, 1), (2, 3)  # (foot, toe) of the left and the right foot
    physics = drive_physics(physics, character, script, ticks, recorded)
    names = list(character.model.style_names)
    styles = [None if segment.style is None else style_weights(segment.style, names, f"segments[{index}].style")
              for index, segment in enumerate(script.segments)]
    log["style"] = []
    current_style = None
    for tick in range(ticks):
        t = tick * dt
        segment = script.segment_at(t)
        weights = styles[script.segments.index(segment)]
        if weights is not None and (current_style is None or not np.array_equal(weights, current_style)):
            character.set_style(weights)
            settings.apply_style(checkpoint.card, weights)  # the style's full-stick speeds, as the viewer does
            current_style = weights
        log["style"].append(character.style_name())
        command = command_for(segment, settings)
        phase = float(character.state.phase[0])
        state = character.tick(command, dt)
        physics.tick(tick, t, dt, state)
        face = command.facing if command.facing is not None else np.zeros(2)
        shown_root, shown_rot = state.pose_root_pos[0], state.pose_root_rot
        values = {
            "t": t, "cmd_vx": command.desired_velocity[0], "cmd_vz": command.desired_velocity[1],
            "cmd_face_x": face[0], "cmd_face_z": face[1], "root_x": shown_root[0], "root_z": shown_root[2],
            "root_yaw": float(quat_to_yaw(shown_rot[:1])[0]), "phase": phase,
            "contact_left": float(state.contacts[0, list(contact_slots[0])].max()),
            "contact_right": float(state.contacts[0, list(contact_slots[1])].max()),
            "tick_ms": state.timings["tick_ms"], "infer_ms": state.timings["infer_ms"],
        }
        for name, value in values.items():
            log[name][tick] = value
        joint_positions[tick] = state.world_joint_pos[0]
        joint_contacts[tick] = state.contacts[0]
        local_rot[tick], root_translation[tick] = local_pose(state, character.skeleton, slice(0, recorded))
    motions = [motion_from_poses(character.skeleton, local_rot[:, b], root_translation[:, b], dt,
                                 source=script.name if b == 0 else f"{script.name} character {b}")
               for b in range(recorded)]
    result = DriveResult(log, joint_positions, list(character.model.names), motions[0], dt, script,
                         joint_contacts=joint_contacts, crowd_motions=motions if crowd_bvh else [],
                         crowd_offsets=offsets, faults=list(character.faults))
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        result.files = {"bvh": out_dir / "motion.bvh", "log": out_dir / "log.csv"}
        bvh.save(result.motion, result.files["bvh"])
        write_log(result.files["log"], log)
        if crowd_bvh:
            (out_dir / "crowd").mkdir(exist_ok=True)
            result.files["crowd"] = [out_dir / "crowd" / f"character_{b:04d}.bvh" for b in range(crowd)]
            for motion, file in zip(motions, result.files["crowd"]):
                bvh.save(motion, file)
    return physics.finish(result, motion_from_poses, character.skeleton, bvh.save, out_dir)


class _NoPhysics:
    """A drive without physics (`drive_physics` when none is asked for)."""

    def tick(self, tick, t, dt, state) -> None:
        pass

    def finish(self, result, *args):
        return result


def drive_physics(physics, character, script: DriveScript, ticks: int, recorded: int):
    """The drive's simulated bodies (`physics.drive.DrivePhysics`: motion.bvh becomes theirs, kinematic.bvh
    the runtime's) when `physics` asks for them (PhysicsSettings, or True for the defaults), else a stand-in
    that does nothing (MuJoCo is only imported with physics)."""
    if physics is None or physics is False:
        return _NoPhysics()
    from pfnn_core.physics.drive import DrivePhysics

    return DrivePhysics(character, None if physics is True else physics, script.events, ticks, recorded)


def settings_from_arguments(assignments: list[str], checkpoint) -> tuple[RuntimeSettings, list[str]]:
    """The model's default settings changed by `NAME=VALUE` texts; returns (settings, notes about
    clamped values). Raises ValueError naming the bad assignment."""
    settings = RuntimeSettings.for_model(checkpoint.card)
    settings.fit_to_model(checkpoint.card)
    notes = []
    for assignment in assignments:
        name, equals, text = assignment.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"--set {assignment}: expected NAME=VALUE")
        try:
            note = settings.assign(name.strip(), text)
        except ValueError as error:
            raise ValueError(f"--set {assignment}: {error}") from None
        if note:
            notes.append(note)
    return settings, notes


def physics_from_arguments(enabled: bool, assignments: list[str], script: DriveScript):
    """(PhysicsSettings or None, notes) from `--physics` and its `--physics-set NAME=VALUE` texts; ValueError
    naming a bad assignment. A script's pushes without --physics are noted (nothing to push)."""
    if not enabled:
        notes = [f"the script's {len(script.events)} push event(s) need --physics; ignored"] if script.events else []
        if assignments:
            raise ValueError("--physics-set needs --physics")
        return None, notes
    from pfnn_core.physics.settings import PhysicsSettings

    settings, notes = PhysicsSettings(), []
    for assignment in assignments:
        name, equals, text = assignment.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"--physics-set {assignment}: expected NAME=VALUE")
        note = settings.assign(name.strip(), text)
        notes += [note] if note else []
    return settings, notes


# ---------------------------------------------------------------------------------------------
# CLI


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pfnn-drive", description="Run the character on a scripted input, headless.")
    parser.add_argument("--script", required=True, help="drive script (JSON, see pfnn_core/drive.py)")
    parser.add_argument("--out", required=True, help="output folder for motion.bvh and log.csv")
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="checkpoint (.safetensors)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="change a runtime setting (repeatable), e.g. --set beta=6 --set foot_locking=false")
    parser.add_argument("--crowd", type=int, default=1, metavar="N", help="characters on the same script (grid offsets)")
    parser.add_argument("--crowd-bvh", action="store_true", help="with --crowd: write every character's BVH to OUT/crowd/")
    parser.add_argument("--physics", action="store_true", help="simulated bodies (MuJoCo) track the characters: "
                        "motion.bvh is theirs, kinematic.bvh the runtime's, physics.csv; the script's events push them")
    parser.add_argument("--physics-set", action="append", default=[], metavar="NAME=VALUE",
                        help="with --physics: change a physics setting (repeatable), e.g. --physics-set root_help=0.5")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(format="pfnn-drive: %(message)s")
    try:
        set_thread_counts(args.threads)
    except ValueError as error:
        print(f"pfnn-drive: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.crowd < 1:
        print(f"pfnn-drive: --crowd must be at least 1, got {args.crowd}", file=sys.stderr)
        return EXIT_BAD_INPUT

    try:
        script = load_script(args.script)
    except ScriptError as error:
        print(f"pfnn-drive: bad script: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    model = Path(args.model)
    if not model.is_file():
        print(f"pfnn-drive: no model at {model}. Train one with `pfnn-train assets/bvh --out {model}` "
              "or pass --model PATH.", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.device == "cuda" and not resolve_device("auto").type == "cuda":
        print("pfnn-drive: --device cuda asked for but CUDA is not available", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        checkpoint = load_checkpoint(model, device=str(resolve_device(args.device)))
    except CheckpointError as error:
        print(f"pfnn-drive: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        settings, notes = settings_from_arguments(args.set, checkpoint)
    except ValueError as error:
        print(f"pfnn-drive: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        physics, physics_notes = physics_from_arguments(args.physics, args.physics_set, script)
    except ValueError as error:
        print(f"pfnn-drive: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for note in notes + physics_notes:
        print(f"pfnn-drive: {note}", file=sys.stderr)
    try:
        result = run_drive(script, checkpoint, args.out, settings=settings, device=args.device, crowd=args.crowd,
                           crowd_bvh=args.crowd_bvh, physics=physics)
    except OSError as error:  # a full disk, a read-only folder: each file is whole or as it was
        print(f"pfnn-drive: {files.explain(error)}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    log = result.log
    crowd = f" x {args.crowd} characters" if args.crowd > 1 else ""
    print(f"{script.name}: {len(log['t'])} ticks ({script.duration:.1f} s){crowd} -> {result.files['bvh']}, "
          f"{result.files['log']}; tick {np.median(log['tick_ms']):.2f} ms, "
          f"inference {np.median(log['infer_ms']):.2f} ms (medians)")
    if result.crowd_motions:
        print(f"  {len(result.files['crowd'])} character BVH files in {Path(args.out) / 'crowd'}")
    if result.physics_log is not None:
        from pfnn_core.physics.drive import physics_summary

        print(physics_summary(result))
    if result.faults:
        print(f"pfnn-drive: {sum(f.count for f in result.faults)} faulty ticks; the characters were reset "
              "(messages above)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
