import csv
import json
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.drive.cli import LOG_COLUMNS, ScriptError, load_script, main, parse_script, run_drive
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.motion import bvh

ROOT = Path(__file__).resolve().parents[1]
SHORT_SCRIPT = {"name": "short", "segments": [
    {"duration": 0.25, "move": [0, 0]},
    {"duration": 0.5, "move": [0, 1]},
    {"duration": 0.5, "move": [1, 0], "run": True},
    {"duration": 0.5, "move": [0.6, 0.0], "face": [0, 1]},
]}


def test_drive_writes_a_bvh_the_loader_reads_back_and_the_exact_log(random_checkpoint, tmp_path):
    result = run_drive(SHORT_SCRIPT, load_checkpoint(random_checkpoint), tmp_path)
    ticks = int(round(1.75 * 60))
    assert result.joint_positions.shape == (ticks, 22, 3)
    with open(tmp_path / "log.csv", newline="") as stream:
        rows = list(csv.reader(stream))
    assert rows[0] == ("t,cmd_vx,cmd_vz,cmd_face_x,cmd_face_z,root_x,root_z,root_yaw,phase,contact_left,contact_right,"
                       "tick_ms,infer_ms,style").split(",")
    assert tuple(rows[0][:-1]) == LOG_COLUMNS and len(rows) == ticks + 1
    assert {row[-1] for row in rows[1:]} == {""}  # a model without styles has no style name
    table = np.array([row[:-1] for row in rows[1:]], dtype=float)
    np.testing.assert_allclose(table[:, 0], np.arange(ticks) / 60, atol=1e-6)
    # Commanded velocity before smoothing; facing only while strafing.
    at = {name: table[:, i] for i, name in enumerate(LOG_COLUMNS)}
    assert at["cmd_vz"][20] == pytest.approx(1.2) and at["cmd_vx"][60] == pytest.approx(3.4)
    assert at["cmd_face_z"][-1] == 1.0 and at["cmd_face_x"][:90].tolist() == [0.0] * 90
    # The BVH is in the data's units (cm) and loads back to the displayed pose.
    assert "OFFSET -0.726466 93.313900 -2.000620" in (tmp_path / "motion.bvh").read_text()
    loaded = bvh.load(tmp_path / "motion.bvh")
    assert loaded.num_frames == ticks and loaded.frame_time == pytest.approx(1 / 60)
    assert loaded.names == result.joint_names
    np.testing.assert_allclose(loaded.global_positions(), result.joint_positions, atol=2e-4)


def test_scripted_runs_are_deterministic_on_cpu(random_checkpoint):
    runs = [run_drive(SHORT_SCRIPT, load_checkpoint(random_checkpoint), device="cpu") for _ in range(2)]
    for name in LOG_COLUMNS:
        if name not in ("tick_ms", "infer_ms"):
            np.testing.assert_array_equal(runs[0].log[name], runs[1].log[name])
    np.testing.assert_array_equal(runs[0].joint_positions, runs[1].joint_positions)


@pytest.mark.parametrize("script, message", [
    ({"segments": [{"duration": 1, "move": [0, 1]}, {"duration": 1, "move": [0, 0]}, {"duration": 2, "move": [3, 0]}]},
     "segments[2].move: expected 2 numbers with length <= 1, got [3, 0]"),
    ({"segments": [{"duration": -1, "move": [0, 1]}]}, "segments[0].duration"),
    ({"segments": [{"move": [0, 1]}]}, "segments[0].duration: missing"),
    ({"segments": [{"duration": 1, "move": [0, 1], "run": "yes"}]}, "segments[0].run"),
    ({"segments": [{"duration": 1, "move": [0, 1], "face": [0, 0]}]}, "segments[0].face"),
    ({"segments": [{"duration": 1, "move": [0, "a"]}]}, "segments[0].move"),
    ({"segments": [{"duration": 1, "move": [0, 1], "speed": 2}]}, "segments[0].speed: unknown field"),
    ({"segments": []}, "segments: expected a non-empty list"),
    ([1, 2], "expected a JSON object"),
])
def test_bad_scripts_name_the_field(script, message):
    with pytest.raises(ScriptError) as error:
        parse_script(script)
    assert message in str(error.value)


def test_cli_exit_codes(tmp_path, capsys, random_checkpoint):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"segments": [{"duration": 1, "move": [3, 0]}]}))
    assert main(["--script", str(bad), "--out", str(tmp_path / "o"), "--model", str(random_checkpoint)]) == 2
    assert "segments[0].move" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{ nope")
    assert main(["--script", str(broken), "--out", str(tmp_path / "o")]) == 2
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"segments": [{"duration": 0.1, "move": [0, 1]}]}))
    assert main(["--script", str(good), "--out", str(tmp_path / "o"), "--model", str(tmp_path / "none.safetensors")]) == 2
    assert "pfnn-train" in capsys.readouterr().err
    assert main(["--script", str(good), "--out", str(tmp_path / "o"), "--model", str(random_checkpoint),
                 "--device", "cpu"]) == 0
    assert (tmp_path / "o" / "motion.bvh").is_file() and (tmp_path / "o" / "log.csv").is_file()


def test_example_scripts_parse():
    paths = sorted((ROOT / "scripts" / "drives").glob("*.json"))
    assert paths
    for path in paths:
        script = load_script(path)
        assert script.duration > 0 and script.segments


def test_sticks_a_hair_longer_than_one_from_rounding_are_normalised():
    script = parse_script({"segments": [{"duration": 1, "move": [0.3827, 0.9239]},
                                        {"duration": 1, "move": [0.7071, 0.7071], "face": [0.0, 2.0]}]})
    assert np.hypot(*script.segments[0].move) == pytest.approx(1.0, abs=1e-12)
    assert script.segments[0].move[0] == pytest.approx(0.3827 / np.hypot(0.3827, 0.9239))
    assert script.segments[1].face == (0.0, 2.0)  # a facing is a direction: its length is not limited
    with pytest.raises(ScriptError, match="length <= 1"):
        parse_script({"segments": [{"duration": 1, "move": [0.6, 0.802]}]})  # length 1.0016
    parse_script({"segments": [{"duration": 1, "move": [0.6, 0.8007]}]})  # length 1.0006: rounding


def test_cli_settings_are_validated_and_applied(tmp_path, capsys, random_checkpoint):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"segments": [{"duration": 0.2, "move": [0, 1]}]}))
    base = ["--script", str(good), "--out", str(tmp_path / "o"), "--model", str(random_checkpoint), "--device", "cpu"]
    assert main(base + ["--set", "betta=3"]) == 2
    assert "unknown setting 'betta'; known settings: beta" in capsys.readouterr().err
    assert main(base + ["--set", "contact_threshold=2"]) == 2
    assert "contact_threshold: 2 is outside its range 0.05..0.99" in capsys.readouterr().err
    assert main(base + ["--set", "drift_window"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err
    assert main(base + ["--set", "beta=64", "--set", "foot_locking=false", "--threads", "1"]) == 0
    assert "beta=64 is outside this model's range 4..16; using 16" in capsys.readouterr().err


def test_settings_change_the_drive(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    from pfnn_core.drive.cli import settings_from_arguments

    settings, notes = settings_from_arguments(["root_motion_from_command=1", "walk_speed=0.5"], checkpoint)
    assert not notes
    result = run_drive({"segments": [{"duration": 2.0, "move": [0, 1]}]}, checkpoint, settings=settings, device="cpu")
    speed = np.diff(result.log["root_z"][-30:]).mean() * 60
    assert speed == pytest.approx(0.5, rel=0.05)


def test_a_crowd_runs_the_script_with_offsets_and_writes_one_bvh_each(random_checkpoint, tmp_path):
    from pfnn_core.drive.cli import crowd_offsets

    np.testing.assert_allclose(crowd_offsets(5), [[0, 0], [1.6, 0], [3.2, 0], [0, 1.6], [1.6, 1.6]])
    checkpoint = load_checkpoint(random_checkpoint)
    script = {"segments": [{"duration": 0.5, "move": [0, 1]}]}
    single = run_drive(script, checkpoint, device="cpu")
    crowd = run_drive(script, checkpoint, tmp_path, device="cpu", crowd=5, crowd_bvh=True)
    files = crowd.files["crowd"]
    assert len(files) == 5 and all(f.is_file() for f in files)
    np.testing.assert_allclose(crowd.joint_positions, single.joint_positions, atol=1e-4)  # the first is the same
    for index in (0, 4):
        loaded = bvh.load(files[index]).global_positions()
        offset = np.array([crowd.crowd_offsets[index][0], 0.0, crowd.crowd_offsets[index][1]])
        np.testing.assert_allclose(loaded - offset, single.joint_positions, atol=2e-3)  # same motion, moved
    assert main(["--script", str(ROOT / "scripts" / "drives" / "idle.json"), "--out", str(tmp_path / "c"),
                 "--model", str(random_checkpoint), "--device", "cpu", "--crowd", "3"]) == 0
    assert (tmp_path / "c" / "motion.bvh").is_file() and not (tmp_path / "c" / "crowd").exists()
    assert main(["--script", str(ROOT / "scripts" / "drives" / "idle.json"), "--out", str(tmp_path / "c"),
                 "--model", str(random_checkpoint), "--crowd", "0"]) == 2


def test_a_style_segment_brings_the_styles_full_stick_speeds(random_checkpoint, tmp_path):
    import torch

    from pfnn_core.models.checkpoint import save_checkpoint
    from pfnn_core.models.pfnn.model import PFNN, ModelConfig

    base = load_checkpoint(random_checkpoint)
    stats = {"elderly": {"walk": 0.7, "run": 1.4, "slowest_walk": 0.5, "side_step": 0.6, "walk_back": 0.5},
             "normal": {"walk": 1.1, "run": 2.8, "slowest_walk": 1.0, "side_step": 1.0, "walk_back": 0.9}}
    torch.manual_seed(0)
    model = PFNN(ModelConfig(**{**base.config.to_dict(), "num_styles": 2}))
    path = save_checkpoint(tmp_path / "styles.safetensors", model, base.layout, base.norm,
                           {**base.meta, "styles": {"names": ["elderly", "normal"], "stats": stats}})
    script = {"name": "styles", "segments": [
        {"duration": 0.5, "move": [0, 1]},
        {"duration": 0.5, "move": [0, 1], "style": "elderly"},
        {"duration": 0.5, "move": [0, 1], "run": True},
        {"duration": 0.5, "move": [1, 0], "face": [0, 1], "style": {"elderly": 0.5, "normal": 0.5}},
    ]}
    result = run_drive(script, load_checkpoint(path), None)
    speed = np.hypot(result.log["cmd_vx"], result.log["cmd_vz"])
    np.testing.assert_allclose(speed[[0, 40, 70, 100]], [1.1, 0.7, 1.4, 0.8])  # normal walk, elderly walk and
    assert result.log["style"][0] == "normal" and result.log["style"][40] == "elderly"  # run, a half-half side-step
