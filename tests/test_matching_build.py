"""Building a motion-matching database from bundled clips: what it keeps, its file round trip, the mirrored
copies made at load against the pipeline's own mirror, a query from a frame's own future, bad input."""
from pathlib import Path

import numpy as np
import pytest
import torch

from pfnn_core.features.layout import make_layouts
from pfnn_core.features.samples import clip_features
from pfnn_core.math.quat import quat_mul, quat_normalize
from pfnn_core.models.checkpoint import CheckpointError, read_checkpoint_file, write_checkpoint
from pfnn_core.models.matching.build import build_database, build_matching, segment_rows
from pfnn_core.models.matching.database import KIND, MatchingDatabase
from pfnn_core.models.matching.features import POSE_PART, TRAJECTORY_PART, asked_trajectory, query_trajectory
from pfnn_core.models.registry import build_model, load_checkpoint
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import mirror_keep_skeleton
from pfnn_core.skeleton import skeleton_dict

ROOT = Path(__file__).resolve().parents[1] / "assets" / "bvh"
CLIPS = ("bandai-namco-ds2/dataset-2_walk_normal_001.bvh.gz", "bandai-namco-ds2/dataset-2_walk-turn-left_normal_001.bvh.gz",
         "bandai-namco-ds2/dataset-2_run_normal_001.bvh.gz", "bandai-namco-ds2/dataset-2_raise-up-both-hands_normal_001.bvh.gz",
         "bandai-namco-ds2-styles/dataset-2_walk_elderly_001.bvh.gz")
SHORT = ("bandai-namco-ds1/dataset-1_run_normal_001.bvh.gz", "bandai-namco-ds1/dataset-1_walk_normal_002.bvh.gz")


def linked_folder(folder, names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name.split("/")[-1]).symlink_to(ROOT / name)
    return folder


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = linked_folder(tmp_path_factory.mktemp("clips"), CLIPS)
    out = folder.parent / "mm.safetensors"
    build_matching(folder, out, say=lambda message: None)
    return folder, out


def angle_between(a, b):
    """Degrees between unit quaternions [..., 4]."""
    return np.degrees(2.0 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0.0, 1.0)))


def test_the_database_keeps_every_second_frame_of_each_clip_and_the_arms_down_standing(small):
    folder, out = small
    checkpoint = load_checkpoint(out)
    database = MatchingDatabase.from_tensors(out, read_checkpoint_file(out)[1], len(checkpoint.card.names),
                                             checkpoint.config.frame_step)
    assert checkpoint.kind == KIND and checkpoint.card.style_names == ("elderly", "normal")
    names = list(checkpoint.config.clips)
    for clip_id, name in enumerate(names):
        motion = bvh.load(str(folder / name))
        frames = int(round(motion.duration * 60)) + 1  # at 60 Hz
        rows = database.segments[database.segments[:, 2] == clip_id, 1].sum()
        if "raise-up" in name:  # only its arms-down runs, feet down and still
            standing = database.segments[:, 2] == clip_id
            assert database.segments[standing, 4].all() and 0 < rows < frames // 4
        else:
            assert abs(rows - frames // 2) <= 1
    standing = database.row_standing
    assert (database.contacts[standing] == 1).all() and (database.root_motion[standing] == 0).all()
    assert np.isfinite(checkpoint.card.floor_heights).all() and checkpoint.card.stance is not None
    assert 0.8 < checkpoint.card.gait_speeds["walk"] < 1.6 and checkpoint.card.gait_speeds["run"] > 2.0


def test_the_file_holds_exactly_the_built_database(small):
    folder, out = small
    built, _ = build_database(folder)
    loaded = MatchingDatabase.from_tensors(out, read_checkpoint_file(out)[1], built.num_joints, built.frame_step)
    for name in ("rotations", "hips", "root_motion", "contacts", "phase", "features", "segments", "mirror_pairs",
                 "mirror_reflections"):
        np.testing.assert_array_equal(np.asarray(getattr(loaded, name), np.float64),
                                      np.asarray(getattr(built, name), np.float64), err_msg=name)
    played = build_model(load_checkpoint(out)).database  # the model's: the file's rows, then their mirrors
    assert played.num_rows == 2 * built.num_rows
    np.testing.assert_array_equal(played.rotations[:built.num_rows], built.rotations)
    np.testing.assert_array_equal(played.features[:built.num_rows], built.features.astype(np.float32))


def test_a_model_from_the_file_answers_as_one_from_the_built_tensors(small, tmp_path):
    """The database rebuilt into a second file straight from `to_tensors` drives a walk to the same
    answers, tick by tick, as the first file."""
    folder, out = small
    built, meta = build_database(folder)
    info, _ = read_checkpoint_file(out)
    again = write_checkpoint(tmp_path / "again.safetensors", KIND, built.to_tensors(), make_layouts(built.num_joints),
                             {key: value for key, value in info.items()
                              if key not in ("format", "version", "kind", "model_config", "layout")})
    from pfnn_core.runtime.character import Character
    from pfnn_core.runtime.command import command_from_world_move

    runs = []
    for path in (out, again):
        character = Character(load_checkpoint(path), settle_ticks=5)
        command = command_from_world_move(np.array([0.0, 1.0]), False, character.settings)
        runs.append(np.stack([character.tick(command, 1 / 60).world_joint_pos[0] for _ in range(90)]))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_mirrored_rows_made_at_load_equal_the_pipelines_mirrored_clip(small):
    folder, _ = small
    path = folder / "dataset-2_walk-turn-left_normal_001.bvh.gz"
    database, _ = build_database([path])
    mirrored = database.with_mirrored()
    half = database.num_rows
    motion = bvh.load(str(path))
    layouts = make_layouts(motion.num_joints)
    expected = segment_rows(clip_features(mirror_keep_skeleton(motion), layouts, runs=False), layouts,
                            skeleton_dict(motion), database.frame_step)[0]
    rotations = mirrored.rotations[half:].astype(np.float64)
    assert angle_between(quat_normalize(rotations), quat_normalize(expected["rotations"].astype(np.float64))).max() < 0.5
    np.testing.assert_allclose(mirrored.features[half:, :6], expected["features"][:, :6], atol=3e-3)  # feet, m
    np.testing.assert_allclose(mirrored.features[half:, 6:15], expected["features"][:, 6:15], atol=3e-2)  # m/s
    np.testing.assert_allclose(mirrored.features[half:, 15:], expected["features"][:, 15:], atol=3e-3)
    np.testing.assert_allclose(mirrored.root_motion[half:], expected["root_motion"], atol=1e-3)
    np.testing.assert_array_equal(mirrored.contacts[half:], expected["contacts"])
    phase_gap = (mirrored.phase[half:].astype(float) - expected["phase"].astype(float) + 0.5) % 1.0 - 0.5
    assert np.abs(phase_gap).max() < 2e-3
    assert (mirrored.segments[len(database.segments):, 6] == 1).all()


def test_a_query_from_a_frames_own_future_finds_that_frame(small):
    folder, out = small
    model = build_model(load_checkpoint(out))
    database = model.database
    name = "dataset-2_walk-turn-left_normal_001.bvh.gz"
    clip_id = list(model.config.clips).index(name)
    segment = database.segments[(database.segments[:, 2] == clip_id) & (database.segments[:, 6] == 0)][0]
    motion = bvh.load(str(folder / name))
    x = clip_features(motion, make_layouts(motion.num_joints), runs=False).x.astype(np.float64)
    rows = np.arange(segment[0], segment[0] + segment[1])[database.candidates[segment[0]:segment[0] + segment[1]]]
    rows = rows[:: max(len(rows) // 12, 1)]
    queries = database.features[rows].astype(np.float64)
    queries[:, TRAJECTORY_PART] = query_trajectory(x[database.source_frame(rows) - 1], model.x_layout)
    style = np.zeros((len(rows), 2))
    style[:, model.style_names.index("normal")] = 1.0
    found = model.index.search(queries, style)
    assert (database.segment_of[found.rows] == database.segment_of[rows]).all()
    assert np.abs(found.rows - rows).max() <= 1
    assert np.allclose(queries[:, POSE_PART], database.features[rows][:, POSE_PART])


def test_the_future_answered_is_the_one_asked_for(small):
    _, out = small
    model = build_model(load_checkpoint(out))
    x = np.random.default_rng(0).normal(size=(3, model.x_layout.size))
    _, pos, facing = asked_trajectory(x, model.x_layout)
    asked = model.x_layout.unpack(x)
    np.testing.assert_array_equal(pos[:, :5], asked["traj_pos"][:, 7:])
    np.testing.assert_allclose(pos[:, 5], 2 * asked["traj_pos"][:, 11] - asked["traj_pos"][:, 10])
    np.testing.assert_allclose(np.linalg.norm(facing[:, 5], axis=-1), 1.0)


# ---- bad input -------------------------------------------------------------------------------------

def test_an_empty_folder_is_refused_naming_it(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty.*no BVH"):
        build_matching(tmp_path / "empty", tmp_path / "mm.safetensors", say=lambda message: None)
    assert not (tmp_path / "mm.safetensors").exists()


def test_clips_too_short_to_window_are_refused_naming_them(tmp_path):
    import dataclasses

    motion = bvh.load(str(ROOT / CLIPS[0]))
    (tmp_path / "short").mkdir()
    for k in (1, 2):
        cut = dataclasses.replace(motion, rotations=motion.rotations[:10], positions=motion.positions[:10])
        bvh.save(cut, tmp_path / "short" / f"dataset-2_walk_normal_90{k}.bvh")
    with pytest.raises(ValueError) as error:
        build_matching(tmp_path / "short", tmp_path / "mm.safetensors", say=lambda message: None)
    assert "dataset-2_walk_normal_901.bvh" in str(error.value) and "dataset-2_walk_normal_902.bvh" in str(error.value)
    assert "too short" in str(error.value)
    assert not (tmp_path / "mm.safetensors").exists()


def test_standing_clips_alone_are_refused_naming_them(tmp_path):
    folder = linked_folder(tmp_path / "standing", [CLIPS[3]])
    with pytest.raises(ValueError, match="no moving clip.*raise-up-both-hands_normal_001"):
        build_matching(folder, tmp_path / "mm.safetensors", say=lambda message: None)
    assert not (tmp_path / "mm.safetensors").exists()


def test_clips_shorter_than_the_future_are_searched_but_for_their_last_quarter_second(tmp_path, caplog):
    folder = linked_folder(tmp_path / "short", SHORT)
    database, meta = build_database(folder)
    warned = [f for f in meta["data"]["findings"] if "extrapolated past its end" in f["message"]]
    assert sorted(Path(f["file"]).name for f in warned) == sorted(name.split("/")[-1] for name in SHORT)
    for start, rows in database.segments[:, :2]:
        searchable = database.candidates[start:start + rows]
        assert searchable[: rows - 8].all() and not searchable[rows - 8:].any()  # 15 frames = 8 rows ahead


def test_an_output_path_that_is_a_folder_is_refused_before_building(tmp_path, small):
    folder, _ = small
    with pytest.raises(ValueError, match="is a folder"):
        build_matching(folder, tmp_path, say=lambda message: None)


def rewritten(source, target, change_tensors=None, change_meta=None):
    info, tensors = read_checkpoint_file(source)
    meta = {key: value for key, value in info.items() if key not in ("format", "version", "kind", "model_config", "layout")}
    if change_tensors:
        change_tensors(tensors)
    if change_meta:
        change_meta(meta)
    write_checkpoint(target, KIND, tensors, make_layouts(22), meta)
    return target


@pytest.mark.parametrize("change_tensors, change_meta, field", [
    (lambda t: t.pop("matching.features"), None, "matching.features"),
    (lambda t: t.__setitem__("matching.rotations", t["matching.rotations"][:, :5]), None, "matching.rotations"),
    (lambda t: t["matching.root_motion"].__setitem__((3, 0), float("nan")), None, "matching.root_motion"),
    (lambda t: t["matching.segments"].__setitem__((0, 1), 3), None, "matching.segments"),
    (lambda t: t["matching.segments"].__setitem__((0, 2), 99), None, "matching.segments"),
    (lambda t: t.__setitem__("matching.mirror_pairs", torch.zeros(22, dtype=torch.int64)), None, "mirror_pairs"),
    (None, lambda m: m.pop("matching"), "metadata 'matching'"),
    (None, lambda m: m["matching"].__setitem__("feature_groups", [["foot_position", 6]]), "feature_groups"),
    (None, lambda m: m["matching"].__setitem__("frame_step", "two"), "frame_step"),
])
def test_a_corrupt_database_is_refused_naming_the_file_and_field(small, tmp_path, change_tensors, change_meta, field):
    _, out = small
    bad = rewritten(out, tmp_path / "bad.safetensors", change_tensors, change_meta)
    with pytest.raises(CheckpointError) as error:
        build_model(load_checkpoint(bad))
    assert str(bad) in str(error.value) and field in str(error.value)


def test_a_file_that_is_not_a_database_is_refused_naming_it(small, tmp_path):
    _, out = small
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x07" * 300)
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(out.read_bytes()[: out.stat().st_size // 2])
    for path in (garbage, truncated):
        with pytest.raises(CheckpointError, match=str(path)):
            load_checkpoint(path)


def test_the_kernels_quaternions_agree_with_the_quaternion_module():
    """The kernel's tuple quaternions follow `math.quat` (w, x, y, z; a * b applies b first; rotation
    vectors as `quat_to_expmap`, the short way round)."""
    from pfnn_core.math.quat import quat_abs, quat_to_expmap
    from pfnn_core.models.matching.inertialize import quat_from_rotation_vector, quat_to_rotation_vector
    from pfnn_core.models.matching.inertialize import quat_mul as kernel_mul

    rng = np.random.default_rng(0)
    a, b = quat_normalize(rng.normal(size=4)), quat_normalize(rng.normal(size=4))
    np.testing.assert_allclose(kernel_mul(tuple(a), tuple(b)), quat_mul(a, b), atol=1e-12)
    for q in (a, -a, np.array([1.0, 0.0, 0.0, 0.0]), quat_normalize(np.array([1e-3, 1.0, 0.0, 0.0]))):
        vector = quat_to_rotation_vector(tuple(q))
        np.testing.assert_allclose(vector, quat_to_expmap(quat_abs(q)), atol=1e-9)
        np.testing.assert_allclose(np.abs(np.dot(quat_from_rotation_vector(vector), q)), 1.0, atol=1e-12)


def test_pfnn_train_builds_a_database_and_says_so_without_epochs(tmp_path, capsys):
    """`pfnn-train --kind matching` is a build: its size and time are said, no epoch count, no loss."""
    from pfnn_core.training import cli

    folder = linked_folder(tmp_path / "clips", CLIPS[:2])
    out = tmp_path / "mm.safetensors"
    assert cli.main([str(folder), "--kind", "matching", "--out", str(out), "--threads", "1"]) == 0
    said = capsys.readouterr()
    text = said.out + said.err
    assert "matching database of 2 clips" in text and str(out) in text
    assert "epoch" not in text and "validation" not in text and "batch/s" not in text
    assert load_checkpoint(out).card.kind == KIND
