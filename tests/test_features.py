"""Root frames, trajectory windows, feature layout, training-set building on the bundled data."""

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.data.build import build_training_data
from pfnn_core.data.normalise import normalisation, split_by_clip
from pfnn_core.data.statistics import floor_heights
from pfnn_core.features.contract import FUTURE_OFFSETS, SIM_FPS, TRAJ_OFFSETS, gait_from_speed
from pfnn_core.features.layout import FeatureLayout, ModelLayout, make_layouts
from pfnn_core.features.samples import STAND_DRIFT_SPEED, clip_features
from pfnn_core.math.quat import quat_to_yaw
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import mirror, resample
from pfnn_core.motion.phase import cycle_lengths
from pfnn_core.motion.root import facing_directions, root_frames, trajectory_window
from pfnn_core.skeleton import body_lines

BVH_DIR = Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds2"
WALK = BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"
TURN = BVH_DIR / "dataset-2_walk-turn-left_normal_001.bvh.gz"
RUN = BVH_DIR / "dataset-2_run_normal_001.bvh.gz"
STAND = BVH_DIR / "dataset-2_raise-up-both-hands_normal_001.bvh.gz"


@pytest.fixture(scope="module")
def small_set():
    return build_training_data([WALK, TURN, RUN, STAND], mirror=True)


def test_layout_pack_unpack_round_trip():
    x_layout, y_layout = make_layouts(22)
    rng = np.random.default_rng(0)
    values = {name: rng.normal(size=(5, 3) + shape) for name, shape in y_layout.entries}
    packed = y_layout.pack(values, dtype=np.float64)
    assert packed.shape == (5, 3, y_layout.size)
    unpacked = y_layout.unpack(packed)
    for name in y_layout.names:
        np.testing.assert_array_equal(unpacked[name], values[name])
    assert np.shares_memory(unpacked["joint_rot"], packed)  # views, not copies
    assert packed[..., y_layout.slice("root_vel")].shape == (5, 3, 2)
    assert x_layout.shape("traj_pos") == (len(TRAJ_OFFSETS), 2) and len(TRAJ_OFFSETS) == 12
    assert y_layout.shape("future_pos") == (len(FUTURE_OFFSETS), 2) and len(FUTURE_OFFSETS) == 6


def test_layout_json_round_trip():
    layouts = make_layouts(7)
    assert FeatureLayout.from_json(layouts.x.to_json()) == layouts.x
    restored = FeatureLayout.from_json(layouts.to_json())
    assert isinstance(restored, ModelLayout) and restored == layouts
    x_layout, y_layout = restored
    assert x_layout.size == layouts.x.size and y_layout.size == layouts.y.size


def test_gait_labels():
    labels = gait_from_speed(np.array([0.0, 0.1, 0.5, 1.2, 1.5, 2.2, 3.5]))
    np.testing.assert_allclose(labels.sum(-1), 1.0)
    assert labels[0, 0] == 1 and labels[1, 0] == 1 and labels[2, 1] == 1 and labels[3, 1] == 1 and labels[4, 1] == 1
    assert labels[5, 2] == 1 and labels[6, 2] == 1
    # with a run flag (content labels) the speed only decides standing: an elderly run at 1.4 m/s is a run
    np.testing.assert_allclose(gait_from_speed(np.array([0.0, 1.4, 1.4]), np.array([1.0, 1.0, 0.0])),
                               [[1, 0, 0], [0, 0, 1], [0, 1, 0]], atol=1e-12)
    assert np.all(np.diff(gait_from_speed(np.linspace(0, 4, 100))[:, 2]) >= 0)


def test_trajectory_window_straight_line():
    dt, speed, frames = 1 / 60, 1.5, 30  # a short clip: most of the window is extrapolated
    for yaw in (0.0, np.pi / 2, -2.0):
        heading = np.array([np.sin(yaw), np.cos(yaw)])
        root_xz = np.arange(frames)[:, None] * dt * speed * heading + np.array([3.0, -1.0])
        positions, directions, speeds = trajectory_window(root_xz, np.full(frames, yaw), TRAJ_OFFSETS, dt)
        expected = np.zeros((len(TRAJ_OFFSETS), 2))
        expected[:, 1] = np.array(TRAJ_OFFSETS) * dt * speed  # straight ahead in the root frame
        for frame in (0, 15, 29):
            np.testing.assert_allclose(positions[frame], expected, atol=1e-9)
            np.testing.assert_allclose(directions[frame], np.tile([0.0, 1.0], (12, 1)), atol=1e-9)
        np.testing.assert_allclose(speeds, speed, atol=1e-6)


def test_trajectory_window_extrapolates_turning_path():
    dt, frames, yaw_rate, speed = 1 / 60, 40, 0.5, 1.0
    yaw = np.arange(frames) * dt * yaw_rate
    root_xz = np.cumsum(np.stack([np.sin(yaw), np.cos(yaw)], -1) * speed * dt, axis=0)
    positions, directions, _ = trajectory_window(root_xz, yaw, (50,), dt)
    relative = 50 * dt * yaw_rate  # the last frame's window: 50 frames of extrapolated turning
    np.testing.assert_allclose(directions[-1, 0], [np.sin(relative), np.cos(relative)], atol=1e-3)
    assert positions[-1, 0, 0] > 0.05  # it keeps turning toward +X (yaw increases), not straight


def test_root_facing_matches_walking_direction():
    motion = resample(bvh.load(str(WALK)), 60)
    root_pos, root_rot = root_frames(motion)
    assert np.all(root_pos[:, 1] == 0)
    velocity = np.gradient(root_pos[:, [0, 2]], 1 / 60, axis=0)
    yaw = quat_to_yaw(root_rot)
    facing = np.stack([np.sin(yaw), np.cos(yaw)], -1)
    speed = np.linalg.norm(velocity, axis=-1)
    moving = speed > 0.5  # this clip starts from rest: the first frames have no direction
    cosine = (velocity[moving] * facing[moving]).sum(-1) / speed[moving]
    assert moving.mean() > 0.9 and np.mean(cosine) > 0.95 and np.min(cosine) > 0.8


def test_real_walk_phase_and_contacts():
    features = clip_features(bvh.load(str(WALK)))
    cycles = cycle_lengths(features.labels.phase)
    assert len(cycles) >= 6 and 62 <= np.median(cycles) <= 70  # ~66 frames at 60 Hz (DESIGN 8)
    toe_share = features.labels.contacts[:, [1, 3]].mean()
    assert 0.45 < toe_share < 0.65
    run = clip_features(bvh.load(str(RUN)))
    assert 0.12 < run.labels.contacts[:, [1, 3]].mean() < 0.35
    assert 40 <= np.median(cycle_lengths(run.labels.phase)) <= 52


def test_mirrored_root_velocity_flips_x():
    motion = bvh.load(str(TURN))
    layouts = make_layouts(motion.num_joints)
    original = layouts.y.unpack(clip_features(motion, layouts).y)
    mirrored = layouts.y.unpack(clip_features(mirror(motion), layouts).y)
    np.testing.assert_allclose(mirrored["root_vel"][:, 0], -original["root_vel"][:, 0], atol=0.02)
    np.testing.assert_allclose(mirrored["root_vel"][:, 1], original["root_vel"][:, 1], atol=0.02)
    np.testing.assert_allclose(mirrored["root_yaw_rate"], -original["root_yaw_rate"], atol=0.05)


def test_split_by_clip_keeps_mirrors_together(small_set):
    data = small_set
    assert data.mirrored.any() and len(data.clip_names) == 4
    for seed in range(4):
        train, val = split_by_clip(data, 0.25, seed)
        assert len(np.intersect1d(data.clip[train], data.clip[val])) == 0
        assert len(train) + len(val) == len(data.x) and len(val) > 0
        for clip in np.unique(data.clip[val]):
            assert data.mirrored[data.clip == clip].any() and (~data.mirrored[data.clip == clip]).any()


def test_next_index_chains_within_clip(small_set):
    data = small_set
    has_next = data.next_index >= 0
    assert np.all(data.clip[data.next_index[has_next]] == data.clip[has_next])
    assert np.all(data.mirrored[data.next_index[has_next]] == data.mirrored[has_next])
    moving = has_next & ~data.standing
    step = (data.phase[data.next_index[moving]] - data.phase[moving]) % 1.0
    assert np.all(step < 0.1)


def test_standing_samples_are_calm(small_set):
    data = small_set
    x_layout, y_layout = data.layout
    standing = data.standing
    assert standing.any()
    y = y_layout.unpack(data.y[standing])
    x = x_layout.unpack(data.x[standing])
    assert np.abs(y["root_vel"]).max() < 1e-6 and np.abs(y["dphase"]).max() < 1e-6
    assert np.all(y["contacts"] == 1) and np.all(x["traj_gait"][..., 0] == 1)
    # phases cover [0, 1): every quarter has samples
    assert len(np.unique(np.floor(data.phase[standing] * 4))) == 4
    # half the samples stand still after a little drift: the past moves (at most the drift speed,
    # straight behind the present), the present and the future do not, and the answer is still "stand"
    offsets = np.asarray(TRAJ_OFFSETS)
    past_speed = np.linalg.norm(x["traj_pos"][:, 0], axis=-1) / (-offsets[0] / SIM_FPS)
    drifting = past_speed > 1e-6
    assert 0.3 < drifting.mean() < 0.7 and past_speed.max() <= STAND_DRIFT_SPEED + 1e-6
    np.testing.assert_allclose(x["traj_pos"][:, offsets >= 0], 0.0, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(x["traj_dir"], axis=-1), 1.0, atol=1e-6)
    straight = x["traj_pos"][drifting][:, offsets < 0]  # every past sample on one line through the root
    cross = straight[:, :, 0] * straight[:, :1, 1] - straight[:, :, 1] * straight[:, :1, 0]
    np.testing.assert_allclose(cross, 0.0, atol=1e-6)
    # arms lower than in the clip's raised frames
    hands = [data.skeleton["names"].index(n) for n in ("Hand_L", "Hand_R")]
    raised = clip_features(bvh.load(str(STAND)), data.layout)
    raised_hands = y_layout.unpack(raised.y)["joint_pos"][:, hands, 1].max()
    assert y["joint_pos"][:, hands, 1].max() < raised_hands - 0.3


def test_normalisation(small_set):
    train, _ = split_by_clip(small_set, 0.25, 0)
    x_mean, x_std, y_mean, y_std = normalisation(small_set, train)
    np.testing.assert_allclose(x_mean, small_set.x[train].mean(0), atol=1e-4)
    assert x_std.min() >= 1e-3 and y_std.min() >= 1e-3 and x_mean.dtype == np.float32


def test_stride_and_gait_speeds(small_set):
    speeds = small_set.gait_speeds
    assert 0.9 < speeds["walk"] < 1.4 and 2.2 < speeds["run"] < 4.0
    assert small_set.stride["num_cycles"] > 5


def test_bad_inputs(tmp_path, caplog):
    with pytest.raises(ValueError, match="no BVH"):
        build_training_data(tmp_path)
    motion = bvh.load(str(WALK))
    short = dataclasses.replace(motion, rotations=motion.rotations[:10], positions=motion.positions[:10])
    bvh.save(short, tmp_path / "short.bvh")
    with pytest.raises(ValueError, match="short.bvh"):
        build_training_data([WALK, tmp_path / "short.bvh"], mirror=False)
    other = dataclasses.replace(motion, offsets=motion.offsets * 1.2)
    bvh.save(other, tmp_path / "other.bvh")
    with pytest.raises(ValueError, match="other.bvh"):
        build_training_data([WALK, tmp_path / "other.bvh"], mirror=False)
    fast = dataclasses.replace(motion, frame_time=motion.frame_time / 10)  # a wrong Frame Time
    bvh.save(fast, tmp_path / "fast.bvh")
    with caplog.at_level(logging.WARNING):
        build_training_data([tmp_path / "fast.bvh"], mirror=False)
    assert "fast.bvh" in caplog.text and "implausible" in caplog.text


def test_hip_line_skips_side_joints_sitting_on_the_hips():
    """CMU skeletons put LHipJoint/RHipJoint exactly on the hips: the hip line must use the upper legs."""
    names = ["Hips", "LHipJoint", "LeftUpLeg", "LeftLeg", "LeftFoot", "RHipJoint", "RightUpLeg", "RightLeg", "RightFoot"]
    parents = np.array([-1, 0, 1, 2, 3, 0, 5, 6, 7])
    positions = np.array([[0, 1, 0], [0, 1, 0], [0.1, 0.9, 0], [0.1, 0.5, 0], [0.1, 0.1, 0],
                          [0, 1, 0], [-0.1, 0.9, 0], [-0.1, 0.5, 0], [-0.1, 0.1, 0]], dtype=float)
    assert body_lines(names, parents, positions)["hips"] == (2, 6)
    # Walking towards +Z with the left leg at +X: the facing is +Z.
    walk = np.repeat(positions[None], 10, axis=0)
    facing = facing_directions(walk, names, parents, dt=1 / 60)
    np.testing.assert_allclose(facing, np.tile([0.0, 1.0], (10, 1)), atol=1e-9)


def test_floor_heights_are_the_median_height_over_labelled_contacts():
    heights = np.zeros((30, 3))
    heights[:, 0], heights[:, 1], heights[:, 2] = 0.117, np.linspace(0.04, 0.3, 30), 0.2
    contacts = np.zeros((30, 3), bool)
    contacts[:, 0], contacts[:10, 1] = True, True
    other = (np.full((4, 3), 0.05), np.ones((4, 3), bool))  # a second clip, pooled frame by frame
    floor = floor_heights([(heights, contacts)])
    assert floor[0] == pytest.approx(0.117) and floor[1] == pytest.approx(np.median(heights[:10, 1]))
    assert np.isnan(floor[2])  # never in contact: no level
    pooled = floor_heights([(heights, contacts), other])
    assert pooled[1] == pytest.approx(np.median(np.r_[heights[:10, 1], [0.05] * 4])) and pooled[2] == pytest.approx(0.05)


def test_side_steps_and_backward_walks_keep_their_direction_and_mirror_into_the_other_side():
    from pfnn_core.motion.kinematics import mirror_keep_skeleton

    folder = Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds1"
    left = bvh.load(folder / "dataset-1_walk-left_normal_001.bvh.gz")
    back = bvh.load(folder / "dataset-1_walk-back_normal_001.bvh.gz")
    layouts = make_layouts(left.num_joints)

    def mean_velocity(motion):
        return layouts.y.unpack(clip_features(motion, layouts, runs=False).y)["root_vel"].mean(axis=0)

    # Dataset 1's "walk-left" is a walk toward the character's left (+x in the root frame) with the body
    # and toes turned most of the way into it (15-47 degrees off the facing by style), not a side-step
    # at 90 degrees: the data has no true side-steps. Its mirror walks to the right.
    stepping_left, mirrored = mean_velocity(left), mean_velocity(mirror_keep_skeleton(left))
    assert stepping_left[0] > 0.2 and stepping_left[1] > 0.5
    np.testing.assert_allclose(mirrored, stepping_left * [-1.0, 1.0], atol=0.02)
    backwards = mean_velocity(back)
    assert backwards[1] < -0.4 and abs(backwards[1]) > 3 * abs(backwards[0])
