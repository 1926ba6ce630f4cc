"""The whole pipeline on BVH sets of OTHER skeletons, built here from a few bundled clips.

The bundled files (22 joints with a `joint_Root` above the hips, 6 channels on every joint, cm, 30 fps,
spine along local +X) are retargeted, pose for pose, to skeletons like the ones people bring:
- Mixamo/CMU-like: `Hips` is the root (position + ZYX rotation channels), LeftUpLeg/LeftLeg/LeftFoot/
  LeftToeBase, Spine/Spine1/Neck/Head, LeftShoulder/LeftArm/LeftForeArm/LeftHand; every other joint 3
  rotation channels (ZXY); inches; 120 fps; rest pose = a standing pose with world-aligned joint axes.
- Poser-like: `hip` root, lower-case side prefixes (lThigh, lShin, lFoot, lCollar, lShldr, lForeArm,
  lHand), NO toe joints, metres, 24 fps, bone-local axes with every bone along its parent's +Y.
The retarget keeps global joint positions: with a constant per-joint frame change A_j, the new global
rotations are G_j A_j, local rotations A_parent^T R_j A_j and offsets A_parent^T o_j.

Then the real commands' functions run on each set: training data, a tiny training run, a scripted
drive written to BVH (loaded back on the same joint names) and a quick evaluation.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pfnn_core.data.build import build_training_data
from pfnn_core.math.quat import quat_between, quat_inv, quat_inv_mul_vec, quat_mul, quat_normalize
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import forward_kinematics, resample

BVH_DIR = Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds2"
SOURCE_CLIPS = ("dataset-2_walk_normal_001.bvh.gz", "dataset-2_walk_normal_002.bvh.gz",
                "dataset-2_walk-turn-left_normal_001.bvh.gz", "dataset-2_walk-turn-right_normal_001.bvh.gz",
                "dataset-2_run_normal_001.bvh.gz", "dataset-2_run_normal_002.bvh.gz",
                "dataset-2_raise-up-both-hands_normal_001.bvh.gz")

# new name, source name; parents follow from the source hierarchy (joint_Root is dropped).
MIXAMO = {
    "Hips": "Hips", "Spine": "Spine", "Spine1": "Chest", "Neck": "Neck", "Head": "Head",
    "LeftShoulder": "Shoulder_L", "LeftArm": "UpperArm_L", "LeftForeArm": "LowerArm_L", "LeftHand": "Hand_L",
    "RightShoulder": "Shoulder_R", "RightArm": "UpperArm_R", "RightForeArm": "LowerArm_R", "RightHand": "Hand_R",
    "LeftUpLeg": "UpperLeg_L", "LeftLeg": "LowerLeg_L", "LeftFoot": "Foot_L", "LeftToeBase": "Toes_L",
    "RightUpLeg": "UpperLeg_R", "RightLeg": "LowerLeg_R", "RightFoot": "Foot_R", "RightToeBase": "Toes_R",
}
POSER_NO_TOES = {
    "hip": "Hips", "abdomen": "Spine", "chest": "Chest", "neck": "Neck", "head": "Head",
    "lCollar": "Shoulder_L", "lShldr": "UpperArm_L", "lForeArm": "LowerArm_L", "lHand": "Hand_L",
    "rCollar": "Shoulder_R", "rShldr": "UpperArm_R", "rForeArm": "LowerArm_R", "rHand": "Hand_R",
    "lThigh": "UpperLeg_L", "lShin": "LowerLeg_L", "lFoot": "Foot_L",
    "rThigh": "UpperLeg_R", "rShin": "LowerLeg_R", "rFoot": "Foot_R",
}


def _frame_changes(reference: bvh.Motion, keep: list[int], new_parents: np.ndarray, axes: str) -> np.ndarray:
    """Per kept joint the constant rotation A_j [K, 4] from the source joint frame to the new one."""
    global_rot, global_pos = forward_kinematics(reference.rotations[0], reference.positions[0], reference.parents)
    if axes == "world":
        # New frames world-aligned in the reference pose: identity rotations give that standing pose.
        return quat_normalize(quat_inv(global_rot[keep]))
    # 'bone_y': each joint's first kept child lies along the new local +Y.
    changes = np.tile([1.0, 0.0, 0.0, 0.0], (len(keep), 1))
    for k in range(len(keep)):
        children = np.flatnonzero(new_parents == k)
        if len(children):
            bone = global_pos[keep[children[0]]] - global_pos[keep[k]]
            changes[k] = quat_between(np.array([0.0, 1.0, 0.0]), quat_inv_mul_vec(global_rot[keep[k]], bone))
    return changes


def retarget(motion: bvh.Motion, mapping: dict, changes: np.ndarray | None, axes: str, root_channels: list,
             joint_channels: list, unit_m: float, fps: float):
    """The motion on a new skeleton (names from `mapping`), same global joint positions."""
    keep = [motion.joint_index(source) for source in mapping.values()]
    order = np.argsort(keep)
    keep = [keep[i] for i in order]
    names = [list(mapping)[i] for i in order]
    position_of = {j: k for k, j in enumerate(keep)}

    def kept_parent(j):
        p = int(motion.parents[j])
        while p >= 0 and p not in position_of:
            p = int(motion.parents[p])
        return position_of.get(p, -1)

    parents = np.array([kept_parent(j) for j in keep])
    if changes is None:
        changes = _frame_changes(motion, keep, parents, axes)
    motion = resample(motion, fps)
    global_rot, global_pos = forward_kinematics(motion.rotations, motion.positions, motion.parents)
    new_global = quat_mul(global_rot[:, keep], changes)
    new_local = new_global.copy()
    has_parent = parents >= 0
    new_local[:, has_parent] = quat_mul(quat_inv(new_global[:, parents[has_parent]]), new_global[:, has_parent])
    # Offsets from the source's bind offsets, expressed in the new parent frames (constant per skeleton).
    src_rot, src_pos = forward_kinematics(np.tile([1.0, 0, 0, 0], (motion.num_joints, 1)), motion.offsets, motion.parents)
    offsets = np.zeros((len(keep), 3))
    for k, j in enumerate(keep):
        if parents[k] >= 0:
            parent_source = keep[parents[k]]
            bone_in_parent = quat_inv_mul_vec(src_rot[parent_source], src_pos[j] - src_pos[parent_source])
            offsets[k] = quat_inv_mul_vec(changes[parents[k]], bone_in_parent)
    positions = np.broadcast_to(offsets, new_local.shape[:-1] + (3,)).copy()
    positions[:, 0] = global_pos[:, keep[0]]
    end_sites = {}
    for k, j in enumerate(keep):
        if not np.any(parents == k):
            dropped = [c for c in range(motion.num_joints) if motion.parents[c] == j]
            if dropped:  # e.g. the toe of a skeleton without toe joints: an End Site there
                site = quat_inv_mul_vec(src_rot[j], src_pos[dropped[0]] - src_pos[j])
                end_sites[k] = quat_inv_mul_vec(changes[k], site)
            else:
                end_sites[k] = np.array([0.0, 0.05, 0.0])
    channels = [list(root_channels)] + [list(joint_channels) for _ in keep[1:]]
    new = bvh.Motion(names=names, parents=parents, offsets=offsets, channels=channels,
                     rotations=quat_normalize(new_local), positions=positions, frame_time=motion.frame_time,
                     end_sites=end_sites, scale=unit_m, source=motion.source)
    return new, changes, keep


SKELETONS = {
    "mixamo_in_120fps": dict(mapping=MIXAMO, axes="world", unit_m=0.0254, fps=120.0,
                             root_channels=["Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"],
                             joint_channels=["Zrotation", "Xrotation", "Yrotation"]),
    "poser_no_toes_m_24fps": dict(mapping=POSER_NO_TOES, axes="bone_y", unit_m=1.0, fps=24.0,
                                  root_channels=["Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"],
                                  joint_channels=["Zrotation", "Yrotation", "Xrotation"]),
}


def write_skeleton_set(folder: Path, kind: str) -> list[Path]:
    spec = SKELETONS[kind]
    folder.mkdir(parents=True, exist_ok=True)
    changes, written = None, []
    for name in SOURCE_CLIPS:
        source = bvh.load(BVH_DIR / name)
        motion, changes, _ = retarget(source, spec["mapping"], changes, spec["axes"], spec["root_channels"],
                                      spec["joint_channels"], spec["unit_m"], spec["fps"])
        path = folder / name.replace("dataset-2_", f"{kind}_").replace(".bvh.gz", ".bvh")
        bvh.save(motion, path)
        written.append(path)
    return written


# ----------------------------------------------------------------------------------------------
# The tests


@pytest.fixture(scope="module")
def skeleton_sets(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("other_skeletons")
    return {kind: root / kind for kind in SKELETONS if write_skeleton_set(root / kind, kind)}


@pytest.fixture(scope="module")
def trained(skeleton_sets, tmp_path_factory) -> dict:
    """One tiny model per skeleton, trained with the `pfnn-train` command's own entry point."""
    from pfnn_core.training import cli as train_cli

    models = {}
    for kind, folder in skeleton_sets.items():
        out = tmp_path_factory.mktemp(f"model_{kind}") / "m.safetensors"
        assert train_cli.main([str(folder), "--out", str(out), "--hidden", "32", "--epochs", "2",
                           "--device", "cpu", "--seed", "3", "--threads", "1"]) == 0
        models[kind] = out
    return models


@pytest.mark.parametrize("kind", list(SKELETONS))
def test_files_load_back_in_metres_at_their_rate_with_the_source_positions(skeleton_sets, kind):
    spec = SKELETONS[kind]
    path = sorted(skeleton_sets[kind].glob("*walk_normal_001.bvh"))[0]
    motion = bvh.load(path)
    assert motion.names == [name for name in spec["mapping"] if name in motion.names]
    assert len(motion.names) == len(spec["mapping"])
    assert motion.scale == spec["unit_m"]  # detected from the skeleton's size
    assert motion.fps == pytest.approx(spec["fps"], rel=0.01)
    assert motion.channels[0] == spec["root_channels"] and motion.channels[1] == spec["joint_channels"]
    source = resample(bvh.load(BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"), motion.fps)
    ours = motion.global_positions()[:, [motion.names.index(n) for n in spec["mapping"]]]
    theirs = source.global_positions()[:, [source.names.index(n) for n in spec["mapping"].values()]]
    assert np.abs(ours - theirs).max() < 2e-3  # 6 decimals in the file


def test_training_samples_equal_the_source_clips_samples(skeleton_sets):
    """Units, frame rate, channel orders and bone axes must not change what the network sees."""

    other = build_training_data(skeleton_sets["mixamo_in_120fps"], mirror=False)
    source = build_training_data([BVH_DIR / name for name in SOURCE_CLIPS], mirror=False)
    assert other.skeleton["hips"] == 0 and not other.skeleton["root_joint_is_control_root"]
    names = other.skeleton["names"]
    assert [names[j] for j in other.skeleton["contact_joints"]] == ["LeftFoot", "LeftToeBase", "RightFoot", "RightToeBase"]
    assert other.x.shape[0] == source.x.shape[0]
    kept = [source.skeleton["names"].index(MIXAMO[name]) for name in names]
    for layout_part, rows_other, rows_source in (("y", other.y, source.y),):
        ours = other.layout.y.unpack(rows_other)
        theirs = source.layout.y.unpack(rows_source)
        assert np.abs(ours["joint_pos"] - theirs["joint_pos"][:, kept]).max() < 5e-3
        assert np.abs(ours["root_vel"] - theirs["root_vel"]).max() < 0.05
        assert np.mean(ours["contacts"] == theirs["contacts"]) > 0.98
    assert other.gait_speeds["walk"] == pytest.approx(source.gait_speeds["walk"], rel=0.02)
    assert other.stride["stride_length"][0] == pytest.approx(source.stride["stride_length"][0], rel=0.02)


def test_no_toe_skeleton_uses_the_feet_as_contact_joints(skeleton_sets):

    data = build_training_data(skeleton_sets["poser_no_toes_m_24fps"], mirror=True)
    names = data.skeleton["names"]
    assert [names[j] for j in data.skeleton["contact_joints"]] == ["lFoot", "lFoot", "rFoot", "rFoot"]
    assert data.mirrored.any() and 0.9 < data.gait_speeds["walk"] < 1.3


@pytest.mark.parametrize("kind", list(SKELETONS))
def test_drive_writes_bvh_on_the_other_skeleton(trained, skeleton_sets, kind, tmp_path):
    from pfnn_core.drive import cli

    out = tmp_path / "drive"
    assert cli.main(["--script", "scripts/drives/walk_forward.json", "--out", str(out),
                       "--model", str(trained[kind]), "--device", "cpu"]) == 0
    written = bvh.load(out / "motion.bvh")
    training_clip = bvh.load(sorted(skeleton_sets[kind].glob("*.bvh"))[0])
    assert written.names == training_clip.names
    assert [list(c) for c in written.channels] == training_clip.channels
    assert written.scale == training_clip.scale  # same file units as the training set
    np.testing.assert_allclose(written.offsets, training_clip.offsets, atol=1e-5)
    positions = written.global_positions()
    assert np.isfinite(positions).all() and positions[-1, 0, [0, 2]].any()


@pytest.mark.parametrize("kind", list(SKELETONS))
def test_quick_evaluation_finds_the_training_clips_by_itself(trained, kind, tmp_path, capsys):
    from pfnn_core.evaluation import cli

    assert cli.main(["--model", str(trained[kind]), "--out", str(tmp_path), "--quick",
                     "--drives", "walk_start", "run_walk_stop"]) == 0
    report = (tmp_path / "report.md").read_text()
    assert kind in report  # the mocap reference came from the model's own training folder
    import json
    rows = {(row["measure"], row["subject"]): row for row in json.loads((tmp_path / "results.json").read_text())["rows"]}
    assert isinstance(rows[("contacts: F1 against the labels", "network")]["value"], float)  # a clip was rolled out
    assert rows[("joint jerk (mean)", "runtime")]["reference"] > 0
    assert "floor levels stored in the checkpoint" in report  # this rig's own capture floor, from training


def test_a_skeleton_without_recognisable_feet_is_refused_naming_file_and_names(skeleton_sets, tmp_path, capsys):
    from pfnn_core.training import cli as train_cli

    source = sorted(skeleton_sets["mixamo_in_120fps"].glob("*walk_normal_001.bvh"))[0]
    paws = tmp_path / "paws"
    paws.mkdir()
    (paws / "clip.bvh").write_text(source.read_text().replace("LeftFoot", "LeftPaw").replace("RightFoot", "RightPaw"))
    assert train_cli.main([str(paws), "--out", str(tmp_path / "m.safetensors"), "--epochs", "1"]) == 2
    error = capsys.readouterr().err
    assert "clip.bvh" in error and "'foot' or 'ankle'" in error and "LeftPaw" in error
