"""The body measures of the evaluation against hand-computed values and deliberately bad motion."""
import numpy as np
import pytest

from pfnn_core.data.statistics import floor_heights
from pfnn_core.evaluation import measures
from pfnn_core.motion import bvh
from pfnn_core.motion.gait_labels import gait_labels
from pfnn_core.motion.root import body_frames, to_body_frame
from pfnn_core.skeleton import hips_joint

DT = 1.0 / 30.0
FLOOR = np.array([0.12, 0.04, 0.12, 0.04])


def feet_track(frames, x_speed=(0.0, 0.0, 0.0, 0.0), height=(0.0, 0.0, 0.0, 0.0), dt=DT):
    """Contact joints [T, 4, 3] moving along +x at the given speeds, at `height` above their floor level."""
    t = np.arange(frames)[:, None] * dt
    feet = np.zeros((frames, 4, 3))
    feet[..., 0] = t * np.asarray(x_speed)
    feet[..., 1] = FLOOR + np.asarray(height)
    feet[..., 2] = np.arange(4) * 0.1
    return feet


def test_contacts_need_the_band_and_a_tenth_of_a_second():
    heights = np.array([0.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.05, -0.01, -0.01, -0.01, -0.01])
    feet = np.zeros((len(heights), 1, 3))
    feet[:, 0, 1] = 0.04 + heights
    contact, height = measures.floor_contacts(feet, [0.04], DT)
    # 3 frames at 30 Hz last 0.1 s: the first run counts, the 2-frame run does not, below the floor counts.
    assert contact[:, 0].tolist() == [True] * 3 + [False] * 4 + [True] * 4
    np.testing.assert_allclose(height[:, 0], heights, atol=1e-12)


def test_skating_is_the_mann_weighted_mean_speed_of_contact_steps():
    # joint 0 still and flat; joint 1 slides at 1 m/s 1 cm up (weight 2 - 2^0.5); joints 2, 3 in the air.
    feet = feet_track(30, x_speed=(0.0, 1.0, 3.0, 3.0), height=(0.0, 0.01, 0.10, 0.05))
    skating = measures.foot_skating(feet, FLOOR, DT)
    w = 2.0 - 2.0 ** 0.5
    assert skating.mean() == pytest.approx(w * 1.0 / (1.0 + w), rel=1e-9)
    assert skating.fast_share() == pytest.approx(0.5)  # half the contact steps are faster than 0.25 m/s
    assert skating.ground_share() == pytest.approx(0.5)  # two of the four joints on the floor throughout
    # the sliding joint lifted 3 cm, out of the 2 cm band: it no longer skates, and the feet are down less
    lifted = measures.foot_skating(feet_track(30, x_speed=(0.0, 1.0, 3.0, 3.0), height=(0.0, 0.03, 0.10, 0.05)),
                                   FLOOR, DT)
    assert lifted.mean() == 0.0 and lifted.ground_share() == pytest.approx(0.25)
    # a clean walk (planted feet) scores 0; sliding every planted foot at 0.6 m/s scores 0.6.
    assert measures.foot_skating(feet_track(30), FLOOR, DT).mean() == 0.0
    assert measures.foot_skating(feet_track(30, x_speed=(0.6,) * 4), FLOOR, DT).mean() == pytest.approx(0.6)
    # selecting steps and pooling motions
    steps = np.zeros(29, bool)
    steps[:10] = True
    assert skating.mean(steps) == pytest.approx(skating.mean())
    pooled = measures.pool_skating([skating, measures.foot_skating(feet_track(30), FLOOR, DT)])
    assert pooled.mean() == pytest.approx(w / (1.0 + w + 4.0))  # the second motion adds 4 still joints per step


def test_skating_of_the_bundled_mocap_is_small_and_sliding_it_is_caught(bundled_bvh_files):
    motion = bvh.load(next(p for p in bundled_bvh_files if "walk_normal" in p.name))
    labels = gait_labels(motion)
    joints = labels.contact_joints
    floor = np.asarray(floor_heights([(labels.global_positions[:, joints, 1], labels.contacts)]))
    feet = labels.global_positions[:, joints]
    clean = measures.foot_skating(feet, floor, motion.frame_time).mean()
    slid = feet.copy()
    slid[..., 0] += 0.5 * np.arange(len(feet))[:, None] * motion.frame_time  # every joint drifts at 0.5 m/s
    assert clean < 0.35 and measures.foot_skating(slid, floor, motion.frame_time).mean() > clean + 0.3


def test_pose_features_do_not_depend_on_where_the_character_is_or_faces(bundled_bvh_files):
    motion = bvh.load(next(p for p in bundled_bvh_files if "walk_normal" in p.name))
    positions = motion.global_positions()[:40]
    base = measures.pose_features(positions, motion.frame_time, motion.names, motion.parents)
    yaw = 1.1
    c, s = np.cos(yaw), np.sin(yaw)
    moved = positions.copy()
    moved[..., 0], moved[..., 2] = c * positions[..., 0] + s * positions[..., 2] + 3.0, \
        -s * positions[..., 0] + c * positions[..., 2] - 7.0
    np.testing.assert_allclose(measures.pose_features(moved, motion.frame_time, motion.names, motion.parents), base,
                               atol=1e-9)
    joints = measures.body_joints(motion.names, motion.parents)
    assert "joint_Root" not in [motion.names[j] for j in joints] and base.shape == (40, len(joints), 6)
    hips = list(joints).index(hips_joint(motion.names, motion.parents))
    np.testing.assert_allclose(base[:, hips, [0, 2]], 0.0, atol=1e-9)  # origin under the hips
    np.testing.assert_allclose(base[:, hips, 1], positions[:, hips_joint(motion.names, motion.parents), 1])


def test_the_body_frame_puts_x_along_the_hip_line():
    # hips at the origin, left hip joint 10 cm along world +z: the character faces world -x.
    names = ["Hips", "UpLeg_L", "Foot_L", "UpLeg_R", "Foot_R"]
    parents = np.array([-1, 0, 1, 0, 3])
    pose = np.array([[0, 1, 0], [0, 0.9, 0.1], [0, 0.1, 0.1], [0, 0.9, -0.1], [0.3, 0.1, -0.1]], float)[None]
    origin, yaw = body_frames(pose, names, parents)
    local = to_body_frame(pose, origin, yaw)
    np.testing.assert_allclose(local[0, 1], [0.1, 0.9, 0.0], atol=1e-12)   # left hip on +x
    np.testing.assert_allclose(local[0, 4], [-0.1, 0.1, -0.3], atol=1e-12)  # right foot 30 cm behind


def test_nearest_neighbour_is_exact_and_rms_over_joints():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(500, 7, 6))
    database = measures.PoseDatabase(base, labels=np.arange(500) % 3, block=64)
    query = base[[3, 10, 400]] + 0.03  # every coordinate 3 cm off: RMS over joints of |(.03,) * 6|
    distance, index = database.nearest(query)
    assert index.tolist() == [3, 10, 400]
    np.testing.assert_allclose(distance, 0.03 * np.sqrt(6), rtol=1e-9)
    masked, picked = database.nearest(base[[4]], mask=database.labels == 2)
    assert database.labels[picked[0]] == 2 and masked[0] > 0


def test_nearest_neighbour_matches_brute_force_float64():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(300, 5, 6))
    queries = rng.normal(size=(25, 5, 6))
    database = measures.PoseDatabase(base, block=7)
    distance, index = database.nearest(queries)
    brute = np.sqrt(((queries.reshape(25, 1, -1) - base.reshape(1, 300, -1)) ** 2).sum(-1) / 5)
    np.testing.assert_array_equal(index, brute.argmin(1))
    np.testing.assert_allclose(distance, brute.min(1), rtol=1e-12)


def test_pops_are_joints_off_their_own_three_frame_trend():
    t = np.arange(20) * DT
    positions = np.zeros((20, 3, 3))
    positions[..., 0] = (1.3 * t + 2.0 * t * t)[:, None]  # smooth, accelerating: 1 mm off the trend
    assert not measures.pose_pops(positions).any()
    spiked = positions.copy()
    spiked[7, 2, 1] += 0.06
    assert np.flatnonzero(measures.pose_pops(spiked)).tolist() == [7]  # the spike, not its neighbours (3 cm off)
    spiked[7, 2, 1] -= 0.02  # 4 cm: below the 5 cm limit
    assert not measures.pose_pops(spiked).any()
    deviation = measures.trend_deviation(spiked)
    assert deviation.shape == (20, 3) and deviation[7, 2] == pytest.approx(0.04, abs=2e-3)
    assert deviation[[0, -1]].max() == 0.0 and np.delete(deviation, 7, axis=0).max() < 0.021  # neighbours: half


def test_a_still_foot_above_the_floor_floats_a_moving_one_does_not():
    feet = feet_track(30, height=(0.05, 0.05, 0.0, 0.0))
    floating, lowest = measures.floating_feet(feet, FLOOR, DT)
    assert floating[:, 0].all() and not floating[:, 1].any()  # left foot hangs 5 cm up, right is planted
    np.testing.assert_allclose(lowest[:, 0], 0.05)
    swinging = feet_track(30, x_speed=(2.0, 2.0, 0, 0), height=(0.05, 0.05, 0.0, 0.0))
    assert not measures.floating_feet(swinging, FLOOR, DT)[0].any()
    heel_up = feet_track(30, height=(0.03, 0.0, 0.0, 0.0))  # toe on the floor: the foot touches it
    assert not measures.floating_feet(heel_up, FLOOR, DT)[0].any()
    assert measures.sunk_feet(feet_track(5, height=(-0.03, 0, -0.01, 0)), FLOOR)[0].tolist() == [True, False, False, False]


def test_settle_time_after_a_stop():
    frames = 60
    feet = feet_track(frames)
    feet[:15, :2, 0] += np.linspace(0.0, 0.3, 15)[:, None]  # the left foot steps until frame 15 (0.5 s)
    feet[15:, :2, 0] += 0.3
    assert measures.settle_time(feet, FLOOR, DT, start=0) == pytest.approx(15 * DT, abs=2 * DT)
    hanging = feet_track(frames, height=(0.06, 0.06, 0, 0))
    assert measures.settle_time(hanging, FLOOR, DT, start=0) == float("inf")


def test_stance_error_against_the_mocap_standing_pose():
    names = ["Hips", "UpLeg_L", "Foot_L", "Toes_L", "UpLeg_R", "Foot_R", "Toes_R"]
    parents = np.array([-1, 0, 1, 2, 0, 4, 5])
    pose = np.array([[0, 1, 0], [0.1, 0.9, 0], [0.1, 0.1, 0], [0.1, 0.04, 0.15],
                     [-0.1, 0.9, 0], [-0.1, 0.1, 0], [-0.1, 0.04, 0.15]])[None]
    feet = pose[:, [2, 3, 5, 6]]
    stance = feet[0].copy()
    np.testing.assert_allclose(measures.stance_error(feet, pose, names, parents, stance), 0.0, atol=1e-12)
    behind = stance.copy()
    behind[2:, 2] += 0.27  # the mocap would put the right foot 27 cm further forward
    np.testing.assert_allclose(measures.stance_error(feet, pose, names, parents, behind)[0], [0, 0, 0.27, 0.27])


def test_contact_f1_and_phase_drift():
    labelled = np.array([[1, 1, 0, 0]] * 4, bool)
    predicted = np.array([[1, 0, 0, 1]] * 4, bool)
    # precision 1/2, recall 1/2 -> F1 1/2
    assert measures.contact_f1(predicted, labelled) == pytest.approx(0.5)
    assert measures.contact_f1(labelled, labelled) == 1.0 and measures.contact_f1(~labelled, labelled) == 0.0
    np.testing.assert_allclose(measures.phase_drift([0.95, 0.1, 0.5], [0.05, 0.9, 0.0]), [0.1, 0.2, 0.5])


def test_a_style_drive_is_held_to_its_own_styles_mocap_skating(monkeypatch):
    """Exhausted walks shuffle (feet low through the swing) and skate more by this measure than active
    ones; a style drive is compared with its own style's walks, other drives with every style's."""
    from conftest import DEFAULT_MODEL, ROOT

    from pfnn_core.evaluation import analysis, reference
    from pfnn_core.models.registry import load_checkpoint

    card = load_checkpoint(DEFAULT_MODEL).card
    folder = ROOT / "assets" / "bvh" / "bandai-namco-ds2-styles"
    paths = [p for style in ("exhausted", "active") for p in sorted(folder.glob(f"*_walk_{style}_*.bvh.gz"))]
    clips = reference.load_mocap(paths)
    monkeypatch.setattr(reference, "STYLE_SKATING_MIN_S", 5.0)
    ref = reference.mocap_reference(clips, clips[0].motion.names, clips[0].motion.parents, card)
    floor, joints = ref.floor, ref.contact_joints
    own = {style: measures.pool_skating([measures.foot_skating(c.positions[:, joints], floor, c.dt)
                                         for c in clips if c.style == style]).mean()
           for style in ("exhausted", "active")}
    assert ref.style_skating[("exhausted", "walk")] == pytest.approx(own["exhausted"])
    assert ref.style_skating[("active", "walk")] == pytest.approx(own["active"])
    assert own["exhausted"] > own["active"] + 0.08  # all their walks: 0.30 and 0.18 m/s
    assert min(own.values()) < ref.skating["walk"] < max(own.values())
    ground = {style: measures.pool_skating([measures.foot_skating(c.positions[:, joints], floor, c.dt) for c in clips
                                            if c.style == style]).ground_share() for style in own}
    assert ground["exhausted"] > ground["active"]  # the shuffling feet are down longer
    assert analysis.skating_reference(ref, "exhausted", "walk") == (own["exhausted"], ground["exhausted"],
                                                                    "the exhausted mocap's own walks")
    assert analysis.skating_reference(ref, None, "walk") == (ref.skating["walk"], ref.ground_share["walk"],
                                                             "all styles' mocap walks")
    # a style with too little of a kind falls back to every style's figure
    assert analysis.skating_reference(ref, "exhausted", "side")[2] == "all styles' mocap side-steps"
    monkeypatch.setattr(reference, "STYLE_SKATING_MIN_S", 1e9)
    strict = reference.mocap_reference(clips, clips[0].motion.names, clips[0].motion.parents, card)
    assert strict.style_skating == {}


def test_both_feet_up_counts_only_frames_where_every_contact_joint_is_off_the_floor():
    floor = np.array([0.10, 0.04, 0.10, 0.04])
    feet = np.zeros((4, 4, 3))
    feet[..., 1] = floor  # every joint on its floor level
    feet[1, 0:2, 1] += 0.05  # the left foot up: a walk's swing, the right foot still down
    feet[2, :, 1] += 0.03  # the whole body 3 cm up: a hop
    feet[3, :, 1] += 0.015  # 1.5 cm up: within the band
    np.testing.assert_allclose(measures.lowest_lift(feet, floor), [0.0, 0.0, 0.03, 0.015], atol=1e-12)
    assert measures.both_feet_up(feet, floor).tolist() == [False, False, True, False]


def test_the_mocaps_own_walks_keep_a_foot_down(bvh_dir):
    from pfnn_core.evaluation import reference

    clips = reference.load_mocap(sorted(bvh_dir.glob("dataset-2_walk_normal_*.bvh.gz"))[:2])
    ref = reference.mocap_reference(clips, clips[0].motion.names, clips[0].motion.parents)
    assert ref.airborne_share["walk"] < 0.01  # a walk has no flight phase
    assert 0.9 < ref.speed["walk"] < 1.4  # m/s, the bundled normal walks
    hovering = clips[0].positions[:, ref.contact_joints] + [0.0, 0.05, 0.0]  # the same walk 5 cm up
    assert measures.both_feet_up(hovering, ref.floor).mean() > 0.99


def test_near_floor_slide_is_the_speed_of_joints_low_over_the_floor():
    floor, dt = np.zeros(2), 0.1
    feet = np.zeros((3, 2, 3))
    feet[:, 0, 0] = [0.0, 0.1, 0.2]  # joint 0 scrapes along the floor at 1 m/s, 3 cm up
    feet[:, 0, 1] = 0.03
    feet[:, 1, 0] = [0.0, 0.5, 1.0]  # joint 1 swings at 5 m/s, 10 cm up: not near the floor
    feet[:, 1, 1] = 0.10
    speed, near = measures.near_floor_slide(feet, floor, dt)
    np.testing.assert_allclose(speed, [[1.0, 5.0], [1.0, 5.0]])
    assert near.tolist() == [[True, False], [True, False]]
    assert speed[near].mean() == pytest.approx(1.0)
