"""pfnn-eval: suite scripts, drive analysis on synthetic drives with known answers, mocap reference,
held-out clips, rollouts, and one quick end-to-end run on a tiny random checkpoint."""

import json
import math

import numpy as np
import pytest

from pfnn_core import bvh, drive, evaluate, features
from conftest import make_random_checkpoint

DT = 1.0 / 60.0
JOINTS = 22


def synthetic_record(duration, velocity_at, command_at):
    """A DriveRecord whose root moves with velocity_at(t) [2] (trapezoid-integrated) under command_at(t)."""
    t = np.arange(int(round(duration / DT))) * DT
    velocity = np.array([velocity_at(time) for time in t])
    command = np.array([command_at(time) for time in t])
    root = np.concatenate([[[0.0, 0.0]], np.cumsum(0.5 * (velocity[1:] + velocity[:-1]) * DT, axis=0)])
    yaw = np.arctan2(velocity[:, 0], velocity[:, 1])
    zeros = np.zeros_like(t)
    log = {"t": t, "cmd_vx": command[:, 0], "cmd_vz": command[:, 1], "cmd_face_x": zeros, "cmd_face_z": zeros,
           "root_x": root[:, 0], "root_z": root[:, 1], "root_yaw": yaw, "phase": zeros, "contact_left": zeros,
           "contact_right": zeros, "tick_ms": zeros + 1.0, "infer_ms": zeros + 0.5}
    parents = np.arange(JOINTS) - 1
    return evaluate.DriveRecord(log, np.zeros((len(t), JOINTS, 3)), [f"j{i}" for i in range(JOINTS)], parents)


def suite_drive(name, quick=False):
    return next(d for d in evaluate.drive_suite(quick) if d.name == name)


def rows_by_measure(rows):
    return {row.measure: row for row in rows}


# ---------------------------------------------------------------------------------------- the suite


@pytest.mark.parametrize("quick", [False, True])
def test_suite_scripts_are_valid_drive_scripts(quick):
    suite = evaluate.drive_suite(quick)
    names = [d.name for d in suite]
    assert names == ["idle", "walk_start", "walk_turn", "run", "run_to_walk", "strafe", "half_walk", "long_mixed"]
    for scripted in suite:
        parsed = drive.parse_script(json.loads(json.dumps(scripted.script())))
        assert parsed.duration == pytest.approx(scripted.segment_starts()[-1])
    if not quick:
        durations = {d.name: d.segment_starts()[-1] for d in suite}
        assert durations["long_mixed"] == pytest.approx(60.0)
        assert durations["idle"] >= evaluate.IDLE_SETTLE_S + evaluate.IDLE_WINDOW_S
    quick_total = sum(d.segment_starts()[-1] for d in evaluate.drive_suite(True))
    assert quick_total < sum(d.segment_starts()[-1] for d in evaluate.drive_suite(False)) / 4


# ---------------------------------------------------------------------------------------- analysis


def test_walk_start_rows_on_a_linear_ramp():
    # stand 2 s, then the speed ramps linearly to the commanded 1.2 m/s over 0.5 s: 90% at 0.45 s.
    scripted = suite_drive("walk_start")
    record = synthetic_record(8.0, lambda t: [0.0, 1.2 * np.clip((t - 2.0) / 0.5, 0.0, 1.0)],
                              lambda t: [0.0, 1.2 if t >= 2.0 else 0.0])
    rows = rows_by_measure(evaluate.analyse_drive(scripted, record, [0, 1, 2, 3]))
    response = rows["walk from standing: time to 90% of the speed change"]
    assert response.value == pytest.approx(0.45, abs=1e-9) and response.passed
    assert rows["walk: steady speed error"].value == pytest.approx(0.0, abs=1e-9)
    assert rows["walk: steady heading error"].value == pytest.approx(0.0, abs=1e-9)
    assert rows["walk: path error mean / max"].value == pytest.approx(0.0, abs=1e-9)  # lag along the line is free


def test_walk_start_that_never_starts_fails_with_inf():
    scripted = suite_drive("walk_start")
    record = synthetic_record(8.0, lambda t: [0.0, 0.0], lambda t: [0.0, 1.2 if t >= 2.0 else 0.0])
    rows = rows_by_measure(evaluate.analyse_drive(scripted, record, [0, 1, 2, 3]))
    response = rows["walk from standing: time to 90% of the speed change"]
    assert response.value == math.inf and response.passed is False
    assert "never" in evaluate.report_table([response])


def test_turn_rows_on_a_constant_rate_arc():
    # walk +Z at 1.2 m/s; at t = 5 the command turns to +X and the heading follows at 90 deg per second.
    scripted = suite_drive("walk_turn")

    def velocity(t):
        heading = np.clip(t - 5.0, 0.0, 1.0) * np.pi / 2
        return [1.2 * np.sin(heading), 1.2 * np.cos(heading)]

    record = synthetic_record(11.0, velocity, lambda t: [1.2, 0.0] if t >= 5.0 else [0.0, 1.2])
    rows = rows_by_measure(evaluate.analyse_drive(scripted, record, [0, 1, 2, 3]))
    assert rows["turn 90 deg: time to 90% of the heading change"].value == pytest.approx(0.9, abs=1e-6)
    assert rows["turn 90 deg: overshoot"].value == pytest.approx(0.0, abs=1e-6)
    assert rows["turn 90 deg: overshoot"].passed
    assert rows["after turn: steady heading error"].value == pytest.approx(0.0, abs=1e-6)


def test_idle_rows_catch_a_slow_slide_but_not_still_feet():
    # 0.5 cm/s along x: over the 10 s window after the first second the root moves 5 cm (target 3 cm).
    scripted = suite_drive("idle")
    record = synthetic_record(scripted.segment_starts()[-1], lambda t: [0.005, 0.0], lambda t: [0.0, 0.0])
    record.log["root_yaw"][:] = 0.0
    rows = evaluate.analyse_drive(scripted, record, [0, 1, 2, 3])
    root, yaw, feet = rows
    assert root.value == pytest.approx(5.0, abs=0.01) and root.passed is False
    assert yaw.value == pytest.approx(0.0) and yaw.passed
    assert feet.value == pytest.approx(0.0) and feet.passed


def test_report_table_marks_pass_fail_and_untargeted():
    rows = [evaluate.Row("a", 1.0, "cm", 2.0, "<= 3 cm", True), evaluate.Row("b", 5.0, "cm", None, "<= 3 cm", False),
            evaluate.Row("c", 0.25, "ms")]
    lines = evaluate.report_table(rows).splitlines()
    assert lines[0] == "| measure | value | mocap reference | target | result |"
    assert lines[2] == "| a | 1.00 cm | 2.00 cm | <= 3 cm | pass |"
    assert lines[3].endswith("| FAIL |") and lines[4].endswith("| - | - |")


# ---------------------------------------------------------------------------------------- mocap and held-out clips


def test_mocap_reference_on_bundled_clips(bvh_dir):
    names = ["dataset-2_walk_normal_001.bvh.gz", "dataset-2_run_normal_001.bvh.gz",
             "dataset-2_raise-up-both-hands_normal_001.bvh.gz"]
    reference = evaluate.mocap_reference([bvh_dir / name for name in names])
    assert reference.clips == names[:2]  # the standing clip is left out
    # planted heights on the bundled skeleton (DESIGN.md section 8): ankles ~11.7 cm, toes ~4.2 cm.
    np.testing.assert_allclose(reference.ground_heights, [0.117, 0.042, 0.117, 0.042], atol=0.005)
    assert reference.jerk_dt == pytest.approx(1 / 30, rel=1e-3)
    assert 0 < reference.skating_weighted < reference.skating < 2.0
    assert 0 < reference.skating_ratio < 1
    assert 0 < reference.contact_speed < 0.2 * reference.skating  # labelled contacts are slow by definition
    assert 50 < reference.jerk < 1000
    assert 0 <= reference.pops_per_minute < 10  # real motion hardly ever turns a joint 30 deg in 1/60 s


def test_held_out_clips_follow_the_checkpoint(bvh_dir):
    files = sorted(p.name for p in bvh.find_files(bvh_dir))[:40]
    meta = {"data": {"files": files}, "training": {"config": {"val_fraction": 0.1, "seed": 3}}}
    paths, note = evaluate.held_out_clips(meta, bvh_dir)
    assert len(paths) == 4 and {p.name for p in paths} <= set(files) and "seed" in note
    assert evaluate.held_out_clips(meta, bvh_dir)[0] == paths
    stored = {"data": {"files": files, "val_files": files[:2]}}
    assert [p.name for p in evaluate.held_out_clips(stored, bvh_dir)[0]] == files[:2]
    everything, note = evaluate.held_out_clips({}, bvh_dir)
    assert len(everything) == len(list(bvh.find_files(bvh_dir))) and "may have been trained on" in note
    elsewhere = {"data": {"files": ["other.bvh"], "val_files": ["other.bvh"]}}
    assert evaluate.held_out_clips(elsewhere, bvh_dir)[0] == everything


class TeacherNetwork:
    """Predicts the clip's own outputs in order: a perfect network for the rollout wiring."""

    def __init__(self, clip, layouts):
        self.x_layout, self.y_layout = layouts
        self.outputs, self.calls = clip.y, 0

    def predict(self, x, phase):
        y = self.outputs[self.calls:self.calls + 1].astype(np.float64)
        self.calls += 1
        return y


def test_rollout_of_a_perfect_network_matches_the_mocap(bvh_dir):
    motion = bvh.load(bvh_dir / "dataset-2_walk-turn-left_normal_001.bvh.gz")
    layouts = features.make_layouts(motion.num_joints)
    clip = features.clip_features(motion, layouts)
    rollout = evaluate.rollout_on_clip(TeacherNetwork(clip, layouts), clip, DT, "turn")
    assert rollout.correlation == pytest.approx(1.0)
    assert rollout.length_ratio == pytest.approx(1.0)
    # the integrated path is the clip's root path (turning left), not a straight line.
    assert abs(rollout.mocap_path[-1, 0]) > 0.5


# ---------------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def quick_run(bvh_dir, walk_motion, tmp_path_factory):
    """pfnn-eval --quick on a randomly initialised small PFNN with the real layout and skeleton."""
    files = sorted(p.name for p in bvh.find_files(bvh_dir))
    folder = tmp_path_factory.mktemp("eval")
    checkpoint = make_random_checkpoint(
        walk_motion, folder / "random.safetensors",
        {"data": {"files": files}, "training": {"config": {"val_fraction": 0.1, "seed": 0}}})
    out = folder / "report"
    code = evaluate.main(["--model", str(checkpoint), "--out", str(out), "--quick"])
    return code, out


def test_quick_run_writes_report_plots_and_drives(quick_run, capsys):
    code, out = quick_run
    assert code == 0
    report = (out / "report.md").read_text()
    assert "| measure | value | mocap reference | target | result |" in report
    names = [d.name for d in evaluate.drive_suite(True)]
    for name in names + ["phase_consistency"]:
        png = out / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(plots/{name}.png)" in report
    for name in names:
        assert (out / "drives" / name / "log.csv").is_file()
        assert bvh.load(out / "drives" / name / "motion.bvh").num_frames > 0


def test_quick_run_numbers_are_finite(quick_run):
    _, out = quick_run
    results = json.loads((out / "results.json").read_text())
    measures = {row["measure"] for row in results["rows"]}
    for expected in ("non-finite values (all drives)", "foot penetration (deepest)",
                     "foot skating (near-ground speed)", "foot speed on contact frames", "joint jerk (mean)", "phase consistency (worst clip)",
                     "walk from standing: time to 90% of the speed change", "turn 90 deg: overshoot",
                     "strafe: facing error", "pose pops per minute", "tick time (mean)"):
        assert expected in measures
    for row in results["rows"]:
        # a random model may never reach a speed ("inf"); nothing may be nan.
        assert isinstance(row["value"], float) or row["value"] == "inf", row
        assert row["reference"] is None or isinstance(row["reference"], float), row
    assert results["checked"] >= 20 and 0 <= results["passed"] <= results["checked"]


def test_bad_model_path_is_a_clear_error(tmp_path, capsys):
    assert evaluate.main(["--model", str(tmp_path / "missing.safetensors"), "--out", str(tmp_path / "o")]) == 2
    assert "missing.safetensors" in capsys.readouterr().err


def test_foot_measures_leave_out_strafed_ticks():
    """The mocap has no side-stepping: ticks with a strafe facing are cut out of the pooled foot figures."""
    ticks = 10
    log = {"cmd_face_x": np.array([0, 0, 0, 1, 1, 0, 0, 0, 0, 1.0]), "cmd_face_z": np.zeros(ticks)}
    record = evaluate.DriveRecord(log, np.arange(ticks * 5 * 3, dtype=float).reshape(ticks, 5, 3),
                                  [f"j{i}" for i in range(5)], np.zeros(5), joint_contacts=np.ones((ticks, 4)))
    pieces = evaluate._forward_pieces(record, [0, 1, 2, 3], 0.5)
    assert [len(feet) for feet, _, _ in pieces] == [3, 4]
    np.testing.assert_array_equal(pieces[1][0], record.joint_positions[5:9, :4])
