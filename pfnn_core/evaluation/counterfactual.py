"""A drive run again with branches: the same drive from the same state, the input changed or held.

Owns `Trace` (what a run showed: world joint positions, the root, the command, per tick),
`ScriptRunner` (a character on a drive script, tick by tick, as `pfnn-drive` runs it: the segment's
style taken when it changes, its command built with the live settings), `run_with_branches` (the
drive once more; at each branch's tick a copy of the character, the model shared, runs the branch's
input for its window while the drive goes on) and `max_difference` (two runs of the same drive).

Running the drive again serves twice: against the drive's first run it is the determinism check, and
it gives the state at each change without running any prefix a second time; only the windows after
the changes (a second each) are extra.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from pfnn_core.drive import cli as drive_module
from pfnn_core.features.contract import SIM_FPS
from pfnn_core.runtime.character import Character


@dataclass
class Trace:
    """Per tick of a run: positions [T, J, 3] (displayed world joints, m), root_xz [T, 2] (the shown
    root), command_xz [T, 2] (commanded velocity, m/s); t [T] s from the drive's start."""

    t: np.ndarray
    positions: np.ndarray
    root_xz: np.ndarray
    command_xz: np.ndarray


@dataclass(frozen=True)
class Branch:
    """From the tick at `time` (s), run `segment` (drive-script format) for `seconds`."""

    time: float
    segment: dict
    seconds: float


class ScriptRunner:
    """One character on a drive script, tick by tick, the way `pfnn_core.drive.run_drive` runs it."""

    def __init__(self, character, card, style_names):
        self.character, self.card, self.style_names = character, card, list(style_names)
        self.current_style = None

    def step(self, segment: "drive_module.Segment", dt: float):
        """One tick of `segment`'s input; returns (state, command)."""
        character = self.character
        if segment.style is not None:
            weights = drive_module.style_weights(segment.style, self.style_names)
            if self.current_style is None or not np.array_equal(weights, self.current_style):
                character.set_style(weights)
                character.settings.apply_style(self.card, weights)
                self.current_style = weights
        command = drive_module.command_for(segment, character.settings)
        return character.tick(command, dt), command

    def copy(self) -> "ScriptRunner":
        """A copy whose ticks leave this one as it was: state, settings and style copied, the model
        (weights, compiled kernels) shared; a model's own state lives in the character's state."""
        model = self.character.model
        return copy.deepcopy(self, memo={id(model): model, id(self.card): self.card})


def _parsed_segment(segment: dict) -> "drive_module.Segment":
    return drive_module.parse_script({"name": "branch", "segments": [dict(segment, duration=1.0)]}).segments[0]


def _record(trace: dict, tick: int, state, command) -> None:
    trace["positions"][tick] = state.world_joint_pos[0]
    trace["root_xz"][tick] = state.pose_root_pos[0][[0, 2]]
    trace["command_xz"][tick] = command.desired_velocity


def _empty(ticks: int, joints: int, start_tick: int, dt: float) -> dict:
    return {"t": (start_tick + np.arange(ticks)) * dt, "positions": np.zeros((ticks, joints, 3)),
            "root_xz": np.zeros((ticks, 2)), "command_xz": np.zeros((ticks, 2))}


def run_with_branches(script: dict, checkpoint, settings, branches=(), make_character=None) -> tuple[Trace, list[Trace]]:
    """Run a drive script (its JSON value) with `settings` as `pfnn-drive` would, and every branch from
    the state at its time. Returns (the drive's trace, one trace per branch, its frame 0 the pose of
    the first tick that read the branch's input). `make_character(checkpoint, settings)` builds the
    character (default `Character`, as `run_drive` does)."""
    parsed = drive_module.parse_script(script)
    make_character = make_character or (lambda c, s: Character(c, s, positions=drive_module.crowd_offsets(1)))
    character = make_character(checkpoint, settings)
    runner = ScriptRunner(character, checkpoint.card, character.model.style_names)
    dt = 1.0 / SIM_FPS
    ticks = max(1, int(round(parsed.duration / dt)))
    joints = character.model.num_joints
    at_tick: dict = {}
    for index, branch in enumerate(branches):
        at_tick.setdefault(int(round(branch.time / dt)), []).append(index)
    main = _empty(ticks, joints, 0, dt)
    traces: list = [None] * len(branches)
    for tick in range(ticks):
        for index in at_tick.get(tick, ()):
            traces[index] = _run_branch(runner.copy(), branches[index], tick, joints, dt)
        state, command = runner.step(parsed.segment_at(tick * dt), dt)
        _record(main, tick, state, command)
    missing = [branches[i].time for i, trace in enumerate(traces) if trace is None]
    if missing:
        raise ValueError(f"branch at {missing[0]:.2f} s: past the drive's end ({parsed.duration:.2f} s)")
    return Trace(**main), [Trace(**trace) for trace in traces]


def _run_branch(runner: ScriptRunner, branch: Branch, tick: int, joints: int, dt: float) -> dict:
    segment = _parsed_segment(branch.segment)
    ticks = max(1, int(round(branch.seconds / dt)))
    trace = _empty(ticks, joints, tick, dt)
    for step in range(ticks):
        state, command = runner.step(segment, dt)
        _record(trace, step, state, command)
    return trace


def max_difference(a, b) -> float:
    """The largest absolute difference between two runs' arrays (0.0: bit-identical); inf when their
    shapes differ or only one of a pair of values is finite."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return float("inf")
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if same.all():
        return 0.0
    return float(np.abs(a - b)[~same].max())
