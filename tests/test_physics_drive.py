"""`pfnn-drive --physics` and `pfnn-eval --physics` with the shipped model and a real MuJoCo body: the
physics-off path is bit-identical, the simulated body writes motion.bvh with kinematic.bvh beside it,
a script's push changes the simulated motion and never the kinematic one, a crowd works, and the
evaluation reports the physics measures."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DEFAULT_MODEL

from pfnn_core.drive.cli import LOG_COLUMNS, ScriptError, main, parse_script, run_drive
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.motion import bvh
from pfnn_core.physics.settings import PhysicsSettings

WALK = {"name": "physics_walk", "segments": [{"duration": 0.5, "move": [0, 0]}, {"duration": 4.5, "move": [0, 1]}]}
PUSHED = dict(WALK, events=[{"at": 1.5, "push": [30, 0, 0]}])
TICKS = 300

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checkpoint():
    return load_checkpoint(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def drives(checkpoint, tmp_path_factory):
    """The same walk without physics, with physics, and with physics and a push (each in its folder)."""
    out = {}
    for name, script, physics in (("off", PUSHED, None), ("plain", WALK, None), ("on", WALK, True),
                                  ("pushed", PUSHED, PhysicsSettings())):
        folder = tmp_path_factory.mktemp(name)
        out[name] = (run_drive(script, checkpoint, folder, device="cpu", physics=physics), folder)
    return out


def test_the_physics_off_path_is_bit_identical(drives):
    """Push events without physics change nothing; with physics the kinematic motion and the log are
    exactly the physics-off drive's (the physics never feeds back into the runtime)."""
    off, off_folder = drives["off"]
    plain, plain_folder = drives["plain"]
    on, on_folder = drives["on"]
    assert (off_folder / "motion.bvh").read_bytes() == (plain_folder / "motion.bvh").read_bytes()
    assert (on_folder / "kinematic.bvh").read_bytes() == (plain_folder / "motion.bvh").read_bytes()
    np.testing.assert_array_equal(on.kinematic_motion.rotations, plain.motion.rotations)
    for name in LOG_COLUMNS:
        if name not in ("tick_ms", "infer_ms"):
            np.testing.assert_array_equal(on.log[name], plain.log[name])
    assert plain.kinematic_motion is None and plain.physics_log is None and not (plain_folder / "physics.csv").exists()


def test_motion_bvh_is_the_simulated_body_close_to_the_kinematic_one_and_on_the_floor(drives, checkpoint):
    on, folder = drives["on"]
    simulated, kinematic = bvh.load(folder / "motion.bvh"), bvh.load(folder / "kinematic.bvh")
    assert simulated.num_frames == kinematic.num_frames == TICKS and simulated.names == kinematic.names
    sim, kin = simulated.global_positions(), kinematic.global_positions()
    np.testing.assert_allclose(sim, on.joint_positions, atol=2e-4)  # what the result holds is what was written
    distance = np.linalg.norm(sim - kin, axis=-1)[:, 1:].mean(axis=1)
    assert 0.0 < np.median(distance) < 0.03 and np.percentile(distance, 95) < 0.08
    floor = checkpoint.card.floor_heights
    feet = sim[:, checkpoint.card.skeleton["contact_joints"]]
    assert np.max(floor - feet[..., 1]) < 0.01
    rows = (folder / "physics.csv").read_text().splitlines()
    assert rows[0].startswith("t,tracking_error_m,root_force_n") and len(rows) == TICKS + 1


def test_a_scripted_push_moves_the_simulated_body_and_not_the_kinematic_one(drives):
    on, _ = drives["on"]
    pushed, _ = drives["pushed"]
    np.testing.assert_array_equal(pushed.kinematic_motion.rotations, on.kinematic_motion.rotations)
    frame = int(1.5 * 60)
    moved = np.linalg.norm(pushed.joint_positions - on.joint_positions, axis=-1).max(axis=1)
    assert moved[:frame].max() < 1e-9 and moved[frame:frame + 60].max() > 0.05
    error = pushed.physics_log["tracking_error_m"]
    assert error[frame:frame + 60].max() > 0.05 and error[frame + 120:].max() < 0.05  # recovered within 2 s


def test_a_crowd_gets_a_simulated_and_a_kinematic_bvh_per_character(checkpoint, tmp_path):
    script = {"name": "crowd", "segments": [{"duration": 0.5, "move": [0, 1]}]}
    result = run_drive(script, checkpoint, tmp_path, device="cpu", crowd=2, crowd_bvh=True, physics=True)
    simulated = [bvh.load(path) for path in result.files["crowd"]]
    kinematic = [bvh.load(path) for path in result.files["crowd_kinematic"]]
    assert len(simulated) == len(kinematic) == 2 and all(m.num_frames == 30 for m in simulated + kinematic)
    for sim, kin in zip(simulated, kinematic):
        gap = np.linalg.norm(sim.global_positions() - kin.global_positions(), axis=-1)[:, 1:].mean(axis=1)
        assert 0.0 < gap.max() < 0.05
    start = [m.global_positions()[0, 1, [0, 2]] for m in simulated]
    assert np.linalg.norm(start[1] - start[0]) > 1.0  # each body tracks its own character


def test_the_command_line_takes_physics_and_refuses_bad_physics_settings(tmp_path, capsys):
    script = tmp_path / "walk.json"
    script.write_text(json.dumps(dict(WALK, segments=WALK["segments"][:1])))
    common = ["--script", str(script), "--out", str(tmp_path / "out"), "--model", str(DEFAULT_MODEL), "--device", "cpu"]
    assert main(common + ["--physics-set", "root_help=0.5"]) == 2
    assert "--physics-set needs --physics" in capsys.readouterr().err
    assert main(common + ["--physics", "--physics-set", "stiffness=3"]) == 2
    assert "unknown physics setting 'stiffness'" in capsys.readouterr().err
    assert main(common + ["--physics", "--physics-set", "substeps=0"]) == 0
    captured = capsys.readouterr()
    assert "using 1" in captured.err and "physics: tracking error median" in captured.out
    assert (tmp_path / "out" / "kinematic.bvh").is_file()


def test_a_bad_push_in_a_script_names_the_event():
    with pytest.raises(ScriptError, match=r"events\[0\].push"):
        parse_script(dict(WALK, events=[{"at": 1.0, "push": [0, "up", 0]}]))


def test_the_evaluation_reports_the_physics_beside_the_kinematic_motion(tmp_path):
    from pfnn_core.evaluation.cli import evaluate

    result = evaluate(DEFAULT_MODEL, tmp_path, quick=True, drives=["idle", "walk_turn"], physics=True)
    rows = {(row.drive, row.measure, row.subject): row for row in result["physics_rows"]}
    assert rows[("suite", "tracking error (median)", "runtime")].passed
    assert rows[("suite", "deepest foot below the floor", "network")].kinematic is not None
    assert rows[("walk_turn + push", "time to recover after the push", "runtime")].physics <= 2.0
    assert rows[("idle", "centre of mass over the feet while standing", "runtime")].physics > 90.0
    assert "## Physics (`--physics`)" in (tmp_path / "report.md").read_text()
    saved = json.loads((tmp_path / "physics.json").read_text())
    assert len(saved["rows"]) == len(result["physics_rows"]) and saved["settings"]["substeps"] == 8
