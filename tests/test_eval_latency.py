"""Response latency (counterfactual) and determinism: known delays, known changes, real drives."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from pfnn_core.evaluation import controller_rows, counterfactual, latency
from pfnn_core.evaluation.suite import ScriptedDrive, drive_suite
from pfnn_core.features.contract import SIM_FPS
from pfnn_core.runtime.settings import RuntimeSettings

DT = 1.0 / SIM_FPS


def test_the_delay_counts_the_tick_that_reads_the_input():
    held = np.zeros((30, 5, 3))
    for ticks in (0, 3, 9):
        changed = held.copy()
        changed[ticks:, 2, 0] = 0.03  # one joint 3 cm off from the tick `ticks` after the change on
        assert latency.response_delay(changed, held, DT) == pytest.approx((ticks + 1) * DT)
    small = held.copy()
    small[4:, :, 1] = 0.015  # every joint 1.5 cm off: under the 2 cm threshold
    assert latency.response_delay(small, held, DT) == math.inf
    assert latency.response_delay(small, held, DT, threshold=0.01) == pytest.approx(5 * DT)


class DelayedModel:
    """What a character needs for `run_with_branches`: its displayed joints move along x with the stick
    read `delay` ticks earlier (a model whose response delay is known), plus `noise` m of randomness
    that no state holds (a nondeterministic model)."""

    GAIN = 2.0  # joints move at twice the commanded speed: more than 2 cm in a tick at walking speed

    def __init__(self, delay: int, noise: float = 0.0):
        self.model = SimpleNamespace(num_joints=3, style_names=[])
        self.settings = RuntimeSettings()
        self.noise, self.rng = noise, np.random.default_rng()
        self.state = SimpleNamespace(world_joint_pos=np.zeros((1, 3, 3)), pose_root_pos=np.zeros((1, 3)),
                                     inputs=[np.zeros(2)] * delay)

    def tick(self, command, dt):
        state = self.state
        inputs = state.inputs + [np.asarray(command.desired_velocity, float)]
        step = np.zeros(3)
        step[[0, 2]] = self.GAIN * inputs[0] * dt
        shown = state.world_joint_pos + step + self.noise * self.rng.standard_normal((1, 3, 3))
        self.state = SimpleNamespace(world_joint_pos=shown, pose_root_pos=shown[:, 0], inputs=inputs[1:])
        return self.state

    def set_style(self, weights):
        raise AssertionError("no style in these drives")


def delayed_run(drive, delay, noise=0.0):
    changes = latency.input_changes(drive)
    branches = [counterfactual.Branch(c.time, c.held, c.window) for c in changes]
    main, traces = counterfactual.run_with_branches(
        drive.script(), SimpleNamespace(card=None), None, branches,
        make_character=lambda checkpoint, settings: DelayedModel(delay, noise))
    return changes, main, traces


@pytest.mark.parametrize("delay", [0, 4, 12])
def test_a_model_that_answers_n_ticks_late_has_that_latency(delay):
    stand, forward = {"duration": 1.0, "move": [0, 0], "run": False}, {"duration": 1.0, "move": [0, 1], "run": False}
    drive = ScriptedDrive("start_stop", (stand, forward, dict(stand)), "start and stop")
    changes, main, traces = delayed_run(drive, delay)
    assert [c.kind for c in changes] == ["start", "stop"]
    speed = RuntimeSettings().walk_speed
    for change, trace in zip(changes, traces):
        first = int(round(change.time / DT))
        assert trace.t[0] == pytest.approx(change.time)
        np.testing.assert_array_equal(trace.command_xz[0], main.command_xz[first - 1])  # the input held
        # the first tick of the answer moves the joints more than the threshold
        assert DelayedModel.GAIN * speed * DT > latency.POSE_THRESHOLD
        changed = main.positions[first:first + len(trace.positions)]
        assert latency.response_delay(changed, trace.positions, DT) == pytest.approx((delay + 1) * DT)


def test_determinism_catches_a_model_whose_runs_differ():
    drive = drive_suite(quick=True)[5]  # stop_and_go
    _, steady, _ = delayed_run(drive, 2)
    _, again, _ = delayed_run(drive, 2)
    assert counterfactual.max_difference(steady.positions, again.positions) == 0.0
    _, noisy, _ = delayed_run(drive, 2, noise=1e-6)
    assert 0.0 < counterfactual.max_difference(steady.positions, noisy.positions) < 1e-3
    assert counterfactual.max_difference(steady.positions, steady.positions[:-1]) == math.inf
    rows = controller_rows.determinism_rows({"a": 0.0, "b": 2e-7}, "runtime", expected=True)
    assert rows[0].value == 2e-7 and rows[0].passed is False and "1 of 2" in rows[0].note
    assert controller_rows.determinism_rows({"a": 0.0}, "runtime", expected=True)[0].passed is True


def test_the_suites_input_changes_are_classified():
    drives = {d.name: d for d in drive_suite(quick=False)}
    kinds = {name: [(c.kind, c.time) for c in latency.input_changes(d)] for name, d in drives.items()}
    assert kinds["idle"] == []
    assert kinds["walk_start"] == [("start", 2.0)]
    assert kinds["walk_turn"] == [("turn", 5.0)]
    assert kinds["run_walk_stop"] == [("gait", 4.0), ("stop", 8.0)]
    assert kinds["stop_and_go"] == [("stop", 3.0), ("start", 6.0), ("stop", 9.0)]
    assert kinds["side_steps"] == [("start", 1.0), ("direction", 5.0), ("stop", 9.0)]  # the facing is kept
    assert kinds["slow_walk"] == [("turn", 6.0)]  # 135 degrees (and slower)
    assert all(c.window == latency.WINDOW_S for d in drives.values() for c in latency.input_changes(d))
    probes = latency.probe_changes(drives["walk_start"])
    assert [(p.kind, p.time, p.changed["run"]) for p in probes] == [("gait", 7.0, True)]
    style = ScriptedDrive("style_a", ({"duration": 1, "move": [0, 0], "style": "a"},
                                      {"duration": 6, "move": [0, 1], "style": "a"}), "", style="a")
    assert [(p.kind, p.changed["style"]) for p in latency.probe_changes(style, ["a", "b"])] == [("style", "b")]
    assert latency.probe_changes(style, ["a"]) == []
    short = ScriptedDrive("short", ({"duration": 0.5, "move": [0, 0]}, {"duration": 0.4, "move": [0, 1]}), "")
    assert latency.input_changes(short)[0].window == pytest.approx(0.4)  # no further than the drive's end


def test_time_to_90_reads_speed_heading_or_velocity_by_kind():
    t = np.arange(120) * DT
    speed = np.clip((t - 1.0) / 0.5, 0.0, 1.0)  # 0 -> 1 m/s from 1.0 to 1.5 s
    root = np.stack([np.zeros_like(t), np.cumsum(speed) * DT], axis=-1)
    command = np.where(t[:, None] >= 1.0, [0.0, 1.0], [0.0, 0.0])
    start = latency.InputChange("start", 1.0, {"move": [0, 0]}, {"move": [0, 1]}, 1.0)
    assert latency.time_to_90(start, t, root, command, DT) == pytest.approx(0.45, abs=2 * DT)
    style = dataclasses.replace(start, kind="style")
    assert math.isnan(latency.time_to_90(style, t, root, command, DT))


def test_the_shipped_models_rerun_is_bit_identical_and_a_branch_on_the_drives_own_input_is_too():
    """The re-run reproduces the drive's record exactly (the PFNN is deterministic), and a copy of the
    character fed the drive's own input follows it exactly: the copy shares the model, not the state."""
    from conftest import DEFAULT_MODEL

    from pfnn_core.evaluation.suite import run_subject, subject_settings
    from pfnn_core.models.registry import load_checkpoint

    checkpoint = load_checkpoint(DEFAULT_MODEL)
    stand, forward = {"duration": 0.5, "move": [0, 0], "run": False}, {"duration": 1.0, "move": [0, 1], "run": False}
    drive = ScriptedDrive("walk_from_standing", (stand, forward), "a start")
    record = run_subject(drive, "runtime", checkpoint, None)
    responses, difference = controller_rows.change_responses(record, checkpoint)
    assert difference == 0.0
    assert [r.change.kind for r in responses] == ["start"]
    assert 0.0 < responses[0].delay <= responses[0].change.window
    same = counterfactual.Branch(0.5, forward, 0.5)
    held = counterfactual.Branch(0.5, stand, 0.5)
    main, (own, standing) = counterfactual.run_with_branches(drive.script(), checkpoint,
                                                             subject_settings("runtime", checkpoint.card), [same, held])
    np.testing.assert_array_equal(own.positions, main.positions[30:60])
    np.testing.assert_array_equal(main.positions, record.positions)
    assert latency.pose_difference(main.positions[30:60], standing.positions).max() > latency.POSE_THRESHOLD


def test_the_own_frame_pose_ignores_the_roots_travel_and_turn(bvh_dir):
    """The same clip carried and turned as a whole has the same own-frame pose; a joint above the hips
    that stays at the origin is left out (it would swing in the character's frame)."""
    from pfnn_core.evaluation.measures import body_joints
    from pfnn_core.math.planar import rotate_xz
    from pfnn_core.motion import bvh

    motion = bvh.load(sorted(bvh_dir.glob("dataset-2_walk_normal_*.bvh.gz"))[0])
    positions = motion.global_positions()[:60]
    names, parents = motion.names, motion.parents
    body = body_joints(names, parents)
    moved = positions.copy()
    moved[..., [0, 2]] = rotate_xz(np.full(positions.shape[:2], 0.7), positions[..., [0, 2]]) + [2.0, -1.0]
    np.testing.assert_allclose(latency.body_poses(moved[:, body], names, parents, body),
                               latency.body_poses(positions[:, body], names, parents, body), atol=1e-9)
    assert latency.pose_difference(moved, positions).min() > 1.0  # in the world they are far apart
    bent = positions[:, body].copy()
    bent[10:, -1] += [0.0, 0.05, 0.0]  # the last body joint 5 cm up from frame 10 on
    own = latency.body_poses(bent, names, parents, body)
    assert latency.response_delay(own, latency.body_poses(positions[:, body], names, parents, body), DT) == \
        pytest.approx(11 * DT)


def test_the_suite_rows_hold_starts_stops_and_turns_to_150_ms_and_lead_the_comparison():
    from pfnn_core.evaluation.compare import comparison_table

    def response(kind, delay, to_90=0.5):
        change = latency.InputChange(kind, 1.0, {"move": [0, 0]}, {"move": [0, 1]}, 1.0)
        return controller_rows.ChangeResponse("walk_start", change, delay, delay, to_90, 0.3)

    rows = controller_rows.response_rows([response("start", 0.05), response("start", 10 * DT),
                                          response("turn", 0.2), response("style", 0.5, math.nan)], "runtime")
    suite = {row.measure: row for row in rows if row.drive == "suite"}
    start = suite["response latency (start): slowest"]
    assert start.value == pytest.approx(10 * DT) and start.passed is False  # 167 ms > 150 ms
    assert suite["response latency (turn): slowest"].passed is False
    assert suite["response latency (style): slowest"].passed is None and suite["response latency (style): slowest"].target == ""
    assert suite["time to 90% of the commanded speed (start): median"].value == pytest.approx(0.5)
    assert "time to 90% of the commanded speed (style): median" not in suite  # nothing to reach
    assert sum(1 for row in rows if row.drive == "walk_start") == 4 and all(
        row.passed is None for row in rows if row.drive == "walk_start")
    table = comparison_table([("a", rows)], keep=controller_rows.is_summary_row)
    assert "response latency (start): slowest" in table and "walk_start" not in table
