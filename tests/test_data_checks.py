"""Data checks before training: each bad file, made from a bundled walk, is named with its problem by the
dataset build, by `pfnn-train` (before any epoch) and by `pfnn-data inspect`; the repairs (joints in
another order, a reference-pose first frame) give the samples of the clean clip; clean bundled clips of
every kind raise nothing."""
import dataclasses
import gzip
import logging

import numpy as np
import pytest
from conftest import BVH_DIR

from pfnn_core.data import checks
from pfnn_core.data import inspector as inspect_module
from pfnn_core.data.build import build_training_data
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import resample
from pfnn_core.training import cli as train_cli

LEFT_LEG, RIGHT_LEG = slice(14, 18), slice(18, 22)


def with_frames(motion, frames):
    return dataclasses.replace(motion, rotations=motion.rotations[frames], positions=motion.positions[frames])


@pytest.fixture(scope="module")
def bad_set(tmp_path_factory, walk_motion):
    """A folder of one clean walk and one file per problem, and the clean walk without its first frame."""
    folder = tmp_path_factory.mktemp("bad_set")
    walk = walk_motion.copy()
    bvh.save(walk, folder / "walk.bvh")
    (folder / "walk_again.bvh.gz").write_bytes(gzip.compress((folder / "walk.bvh").read_bytes()))

    tpose = walk.copy()
    tpose.rotations[0, 2:] = (1.0, 0.0, 0.0, 0.0)  # every joint below the hips at rest: a T-pose
    bvh.save(tpose, folder / "tpose_first_frame.bvh")
    bvh.save(with_frames(walk, slice(0, 10)), folder / "short.bvh")
    seconds = np.arange(walk.num_frames) * walk.frame_time
    sliding = walk.copy()
    sliding.positions[:, 1, 0] += 3.0 * seconds  # the whole body slides at 3 m/s: no foot ever stands still
    bvh.save(sliding, folder / "sliding.bvh")
    jittery = walk.copy()
    jittery.positions[:, 1, 1] += 0.05 * ((np.arange(walk.num_frames) // 2) % 2)  # 5 cm up and down at 7.5 Hz
    bvh.save(jittery, folder / "jittery.bvh")
    order = list(range(14)) + list(range(18, 22)) + list(range(14, 18))  # the right leg written first
    reordered = checks.reorder_joints(walk, [walk.names[j] for j in order])
    bvh.save(reordered, folder / "reordered.bvh")
    bvh.save(resample(walk, 60), folder / "walk_60fps.bvh")

    clean_tail = folder.parent / f"{folder.name}_clean"
    clean_tail.mkdir()
    bvh.save(with_frames(walk, slice(1, None)), clean_tail / "walk_from_frame_1.bvh")
    return folder, clean_tail


def messages_about(findings, name):
    return [f.message for f in findings if f.file.endswith(name)]


def test_the_build_names_each_bad_file(bad_set, caplog):
    folder, _ = bad_set
    files = [p for p in bvh.find_files(folder) if p.name != "short.bvh"]
    with caplog.at_level(logging.WARNING):
        data = build_training_data(files, mirror=False)
    findings = [checks.Finding.from_dict(item) for item in data.summary["findings"]]
    assert any("reference pose" in m for m in messages_about(findings, "tpose_first_frame.bvh"))
    assert any("no foot contacts detected on either foot" in m for m in messages_about(findings, "sliding.bvh"))
    assert any("fragmented contacts" in m for m in messages_about(findings, "jittery.bvh"))
    assert any("same content as" in m and "walk.bvh" in m for m in messages_about(findings, "walk_again.bvh.gz"))
    assert any("in another order" in m for m in messages_about(findings, "reordered.bvh"))
    rates = [f for f in findings if "frame rates differ" in f.message]
    assert len(rates) == 1 and "60 fps (1 file: walk_60fps.bvh)" in rates[0].message
    assert not messages_about(findings, "/walk.bvh")  # the clean walk raises nothing
    assert "sliding.bvh" in caplog.text and "fragmented contacts" in caplog.text  # warnings are logged too


def test_repairs_give_the_clean_clips_samples(bad_set):
    folder, clean_tail = bad_set
    walk, reordered, tpose = folder / "walk.bvh", folder / "reordered.bvh", folder / "tpose_first_frame.bvh"
    assert bvh.load(reordered).names != bvh.load(walk).names  # the file really lists its joints in another order
    pair = build_training_data([walk, reordered], mirror=True)
    first, second = pair.clip == 0, pair.clip == 1
    assert np.array_equal(pair.x[first], pair.x[second]) and np.array_equal(pair.y[first], pair.y[second])
    dropped = build_training_data([tpose], mirror=False)
    clean = build_training_data([clean_tail / "walk_from_frame_1.bvh"], mirror=False)
    np.testing.assert_allclose(dropped.x, clean.x, atol=1e-5)
    np.testing.assert_allclose(dropped.y, clean.y, atol=1e-5)


def test_files_that_cannot_be_trained_on_are_all_listed(bad_set, tmp_path):
    folder, _ = bad_set
    broken = tmp_path / "broken.bvh"
    broken.write_text("HIERARCHY\nROOT Hips\n{\n")
    with pytest.raises(ValueError) as raised:
        build_training_data([folder / "walk.bvh", folder / "short.bvh", broken], mirror=False)
    message = str(raised.value)
    assert message.startswith("2 problems stop training")
    assert "short.bvh: clip too short to window (0.30 s < 0.5 s)" in message and "broken.bvh" in message


def test_pfnn_train_stops_before_any_epoch(bad_set, tmp_path, capsys):
    folder, _ = bad_set
    cache = tmp_path / "cache"
    args = ["--epochs", "1", "--hidden", "16", "--device", "cpu", "--threads", "1", "--cache-dir", str(cache)]
    out = tmp_path / "model.safetensors"
    assert train_cli.main([str(folder), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert "short.bvh: clip too short to window" in err and "epoch" not in err and not out.exists()

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    unwritable = a_file / "model.safetensors"
    assert train_cli.main([str(folder / "walk.bvh"), "--out", str(unwritable), *args]) == 2
    err = capsys.readouterr().err
    assert f"{unwritable}: cannot write the model there" in err
    assert not cache.exists()  # refused before the dataset was built


def test_pfnn_data_inspect_reports_the_same_problems(bad_set, capsys):
    folder, _ = bad_set
    assert inspect_module.main(["inspect", str(folder)]) == 1  # a clip too short to train on
    out = capsys.readouterr().out
    expected = {"tpose_first_frame.bvh": "reference pose", "sliding.bvh": "no foot contacts detected",
                "jittery.bvh": "fragmented contacts", "short.bvh": "clip too short to window",
                "walk_again.bvh.gz": "same content as", "reordered.bvh": "in another order"}
    lines = out.splitlines()
    for name, problem in expected.items():
        assert any(name in line and problem in line for line in lines), name
    assert any("frame rates differ" in line and "walk_60fps.bvh" in line for line in lines)
    assert not any("mixed skeletons" in line for line in lines)  # the reordered file is the same skeleton


def test_clean_bundled_clips_of_every_kind_raise_nothing(bvh_dir):
    names = ["bandai-namco-ds2/dataset-2_walk_normal_001", "bandai-namco-ds2/dataset-2_run_normal_001",
             "bandai-namco-ds2/dataset-2_raise-up-both-hands_normal_001",
             "bandai-namco-ds1/dataset-1_dash_chimpira_001", "bandai-namco-ds1/dataset-1_walk-back_happy_001"]
    for name in names:
        path = BVH_DIR.parent / f"{name}.bvh.gz"
        assert inspect_module.clip_findings(path, bvh.load(path)) == [], name


def test_reorder_keeps_a_different_hierarchy_for_the_skeleton_check(walk_motion):
    names = list(walk_motion.names)
    child_first = names[:14] + [names[15], names[14]] + names[16:]  # LowerLeg_L before its parent
    assert checks.reorder_joints(walk_motion, child_first) is walk_motion
    assert checks.reorder_joints(walk_motion, names) is walk_motion
    assert checks.reorder_joints(walk_motion, names[:-1] + ["Other"]) is walk_motion


def test_output_path_checks(tmp_path):
    assert checks.output_findings(tmp_path / "new" / "folder" / "m.safetensors") == []
    assert (tmp_path / "new" / "folder").is_dir()
    [finding] = checks.output_findings(tmp_path)
    assert finding.severity == "error" and "is a folder" in finding.message
    (tmp_path / "f").write_text("")
    [finding] = checks.output_findings(tmp_path / "f" / "m.safetensors")
    assert finding.file == str(tmp_path / "f" / "m.safetensors") and "cannot write the model there" in finding.message
