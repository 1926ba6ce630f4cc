"""Clip editor (pfnn_core/edit.py): phase matching on synthetic labels with hand-computed cuts, the
transitions on synthetic motions (exact after the blend, continuous at the seam), bad edit lists, the BVH
round trip, the seam report's windows, and the targets on bundled clips (the measures themselves are the
evaluation's, tested in test_evaluation_measures.py)."""
import json

import numpy as np
import pytest

from pfnn_core import edit
from pfnn_core.data.statistics import floor_heights
from pfnn_core.evaluation import measures
from pfnn_core.math.quat import quat_from_angle_axis, quat_inv, quat_mul, quat_to_expmap
from pfnn_core.motion import bvh

WALK = "dataset-2_walk_normal_{:03d}.bvh.gz"
RUN = "dataset-2_run_normal_{:03d}.bvh.gz"
FPS = 60.0


def edit_list(bvh_dir, pieces, kind="inertialize", seconds=0.3, match="phase", search=0.5):
    data = {"name": "test", "fps": FPS, "transition": {"kind": kind, "seconds": seconds}, "match": match,
            "search_seconds": search,
            "pieces": [dict(piece, file=str(bvh_dir / piece["file"])) for piece in pieces]}
    return edit.parse_edit_list(data)


@pytest.fixture(scope="module")
def cache():
    return {}


# ---- phase matching ------------------------------------------------------------------------------

def stepping_labels(frames: int, cycle: float, phase0: float):
    """A stepping clip's labels: phase rising 1/cycle per frame; right foot (ankle, toe) down for phase
    in [0, 0.6), left foot for phase in [0.5, 1.1) (double support around each touchdown)."""
    phase = (phase0 + np.arange(frames) / cycle) % 1.0
    right = phase < 0.6
    left = (phase >= 0.5) | (phase < 0.1)
    return phase, np.stack([left, left, right, right], axis=-1)


def test_phase_distance_is_cyclic():
    np.testing.assert_allclose(edit.phase_distance([0.05, 0.5, 0.3], [0.95, 0.0, 0.3]), [0.1, 0.5, 0.0])


def test_phase_matching_picks_the_cut_where_the_phases_meet_nearest_to_the_asked_frames():
    # Outgoing: 60-frame cycle, phase 0 at frame 120. Incoming: 40-frame cycle, phase 0.55 at frame 50.
    # Within +-20 frames the phases meet exactly where 2*dout - 3*din = 66 or -54 (frames moved);
    # the least moving pair is dout = 0, din = +18: out frame 120 (phase 0), in frame 68 (phase 0).
    out_phase, out_contacts = stepping_labels(200, 60.0, 0.0)
    in_phase, in_contacts = stepping_labels(200, 40.0, 0.3)
    assert in_phase[50] == pytest.approx(0.55)
    match = edit.match_join(out_phase, out_contacts, in_phase, in_contacts, np.arange(100, 141), np.arange(30, 71),
                            120, 50, FPS)
    assert (match.out_frame, match.in_frame) == (120, 68)
    assert match.phase_difference == pytest.approx(0.0, abs=1e-9) and match.contacts_agree == 4


def test_contact_states_break_a_tie_of_equal_phases():
    out_phase, out_contacts = stepping_labels(200, 60.0, 0.0)
    in_phase, in_contacts = out_phase.copy(), out_contacts.copy()
    in_contacts[10] = ~in_contacts[10]  # same phase at frames 10 and 70 as out frame 70, but frame 10 disagrees
    match = edit.match_join(out_phase, out_contacts, in_phase, in_contacts, [70], [10, 70], 70, 10, FPS)
    assert match.in_frame == 70  # 60 frames further than asked, but the feet agree
    in_contacts[10] = out_contacts[10]
    assert edit.match_join(out_phase, out_contacts, in_phase, in_contacts, [70], [10, 70], 70, 10, FPS).in_frame == 10


# ---- transitions on synthetic motions ------------------------------------------------------------

def linear_motion(frames, joints, velocity, spin, start=0.0, dt=1.0 / FPS):
    """Rotations turning at `spin` rad/s about a fixed axis per joint, translations moving at `velocity`."""
    rng = np.random.default_rng(3)
    axes = rng.normal(size=(joints, 3))
    angles = start + spin * dt * np.arange(frames)[:, None] + rng.uniform(0, 1, joints)
    rotations = quat_from_angle_axis(angles, axes)
    translations = rng.normal(size=(joints, 3)) * 0.1 + velocity * dt * np.arange(frames)[:, None, None]
    return rotations, translations


def test_offset_decay_keeps_the_gap_and_its_velocity_at_the_seam_and_is_zero_from_the_blend_time_on():
    offset, velocity, seconds = np.array([0.2, -0.1]), np.array([1.5, 0.4]), 0.3
    times = np.array([0.0, 1e-5, 0.3, 0.31, 1.0])
    decayed = edit.offset_decay(offset, velocity, times, seconds)
    np.testing.assert_allclose(decayed[0], offset)
    np.testing.assert_allclose((decayed[1] - decayed[0]) / 1e-5, velocity, rtol=1e-3)
    np.testing.assert_array_equal(decayed[2:], 0.0)


@pytest.mark.parametrize("dt", [1.0 / FPS, 1e-3])
def test_inertialization_is_exactly_the_incoming_motion_after_the_blend_and_continuous_at_the_seam(dt):
    seconds, joints = 0.3, 6
    frames = int(round(seconds / dt)) + 40
    out_rot, out_pos = linear_motion(40, joints, np.array([1.5, 0.0, 0.2]), 2.0, dt=dt)
    in_rot, in_pos = linear_motion(frames, joints, np.array([1.0, 0.05, -0.3]), -1.0, start=0.7, dt=dt)
    in_pos = in_pos - in_pos[10] + out_pos[-1] + 0.05  # 5 cm apart at the seam
    rotations, translations, shift = edit.inertialize((out_rot[-2], out_pos[-2]), (out_rot[-1], out_pos[-1]),
                                                      (in_rot[9], in_pos[9]), (in_rot[10], in_pos[10]),
                                                      (in_rot[11:], in_pos[11:]), dt, seconds, placement=0)
    np.testing.assert_array_equal(shift, 0.0)  # slowing down: the root falls back onto the incoming path
    after = int(round(seconds / dt))
    np.testing.assert_allclose(rotations[after:], in_rot[11 + after:], atol=1e-12)
    np.testing.assert_allclose(translations[after:], in_pos[11 + after:], atol=1e-12)
    # continuous in position and velocity: the first step after the seam is the outgoing motion's own
    # step, up to the offsets' acceleration (second order in dt; spring rate y: |a| <= y^2 |x0| + 2 y |v0|)
    rate = edit.SPRING_RATE / seconds
    bound = (rate ** 2 * 0.05 * np.sqrt(3) + 2 * rate * 0.6) * dt * dt
    np.testing.assert_allclose(translations[0] - out_pos[-1], out_pos[-1] - out_pos[-2], atol=bound)
    first_turn = quat_to_expmap(quat_mul(rotations[0], quat_inv(out_rot[-1])))
    last_turn = quat_to_expmap(quat_mul(out_rot[-1], quat_inv(out_rot[-2])))
    np.testing.assert_allclose(first_turn, last_turn, atol=(rate ** 2 * np.pi + 2 * rate * 3.0) * dt * dt)


def test_speeding_up_the_root_keeps_its_velocity_and_the_incoming_piece_goes_on_shifted():
    dt, seconds, joints = 1.0 / FPS, 0.3, 6
    out_rot, out_pos = linear_motion(40, joints, np.array([1.0, 0.0, 0.0]), 1.0)
    in_rot, in_pos = linear_motion(60, joints, np.array([3.0, 0.0, 0.0]), 1.0)
    in_pos = in_pos - in_pos[10] + out_pos[-1]  # aligned at the seam, as the roots are
    rotations, translations, shift = edit.inertialize((out_rot[-2], out_pos[-2]), (out_rot[-1], out_pos[-1]),
                                                      (in_rot[9], in_pos[9]), (in_rot[10], in_pos[10]),
                                                      (in_rot[11:], in_pos[11:]), dt, seconds, placement=0)
    after = int(round(seconds / dt))
    np.testing.assert_allclose(rotations[after:], in_rot[11 + after:], atol=1e-12)
    moved = translations[after:, 0] - in_pos[11 + after:, 0]  # the root: one constant ground shift
    np.testing.assert_allclose(moved, np.broadcast_to(moved[0], moved.shape), atol=1e-12)
    np.testing.assert_allclose(moved[0], [shift[0], 0.0, shift[1]], atol=1e-12)
    assert shift[0] < -0.05  # it lagged behind the faster clip instead of racing to catch up
    root_speed = np.diff(np.concatenate([out_pos[-2:, 0, 0], translations[:, 0, 0]])) / dt
    assert root_speed.max() <= 3.0 + 1e-9 and root_speed[0] == pytest.approx(1.0, abs=0.05)
    assert np.all(np.diff(root_speed[:after + 1]) > -1e-9)  # rising smoothly from the old speed to the new


def test_crossfade_is_exactly_the_incoming_motion_after_the_blend_and_starts_from_the_outgoing():
    blend, joints = 18, 6
    out_rot, out_pos = linear_motion(60, joints, np.array([1.5, 0.0, 0.0]), 2.0)
    in_rot, in_pos = linear_motion(60, joints, np.array([1.2, 0.0, 0.1]), -1.0, start=0.4)
    twin = out_pos[20, 0, [0, 2]]
    in_pos = in_pos - in_pos[10, 0] + out_pos[20, 0]  # aligned at the twin frame
    rotations, translations, shift = edit.crossfade((out_rot[21:21 + blend + 1], out_pos[21:21 + blend + 1]),
                                                    (in_rot[11:], in_pos[11:]), twin, blend, placement=0)
    np.testing.assert_array_equal(shift, 0.0)  # slowing down: positions blend
    np.testing.assert_allclose(rotations[blend:], in_rot[11 + blend:], atol=1e-12)
    np.testing.assert_allclose(translations[blend:], in_pos[11 + blend:], atol=1e-12)
    assert np.linalg.norm(translations[0] - out_pos[21]) < 0.01  # the first frame is almost the outgoing's next
    step = np.linalg.norm(np.diff(np.concatenate([out_pos[19:21], translations]), axis=0), axis=-1)
    assert step.max() < 1.6 / FPS  # no faster than the faster clip: no jump


# ---- bad input -------------------------------------------------------------------------------------

def test_an_empty_edit_list_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"name": "empty", "pieces": []}))
    out = tmp_path / "out.bvh"
    assert edit.main([str(path), "--out", str(out)]) == edit.EXIT_BAD_INPUT
    assert not out.exists()
    with pytest.raises(edit.EditError, match=r"pieces: the edit list is empty"):
        edit.load_edit_list(path)


@pytest.mark.parametrize("seconds", [0, -0.2])
def test_a_zero_or_negative_transition_is_refused(seconds):
    with pytest.raises(edit.EditError, match=r"transition\.seconds: expected a positive time"):
        edit.parse_edit_list({"pieces": [{"file": "a.bvh"}], "transition": {"seconds": seconds}})


@pytest.mark.parametrize("field, value, message", [
    ("kind", "wipe", r"transition\.kind: expected one of \"inertialize\", \"crossfade\""),
    ("speed", 0, r"pieces\[0\] \(a\.bvh\)\.speed: expected a positive time scale"),
    ("start", -1, r"pieces\[0\] \(a\.bvh\)\.start: -1 s is before the clip's start"),
    ("colour", 1, r"pieces\[0\] \(a\.bvh\)\.colour: unknown field"),
])
def test_bad_fields_are_named(field, value, message):
    data = {"pieces": [{"file": "a.bvh"}]}
    if field == "kind":
        data["transition"] = {"kind": value}
    else:
        data["pieces"][0][field] = value
    with pytest.raises(edit.EditError, match=message):
        edit.parse_edit_list(data)


def test_a_missing_file_is_named_with_its_piece(bvh_dir, tmp_path):
    edits = edit_list(bvh_dir, [{"file": WALK.format(1), "end": 3.0}, {"file": "no_such_clip.bvh"}])
    out = tmp_path / "out.bvh"
    with pytest.raises(edit.EditError, match=r"pieces\[1\] \(no_such_clip\.bvh\)\.file: .*no such file"):
        edit.export(edits, out)
    assert not out.exists()


@pytest.mark.parametrize("start, end, message", [
    (1.0, 30.0, r"pieces\[0\] \(dataset-2_walk_normal_001\.bvh\.gz\)\.end: 30 s is past the clip's end \(9\.067 s\)"),
    (9.5, None, r"pieces\[0\] \(dataset-2_walk_normal_001\.bvh\.gz\)\.start: 9\.5 s is not before the clip's end"),
])
def test_a_range_outside_the_clip_is_named(bvh_dir, tmp_path, start, end, message):
    piece = {"file": WALK.format(1), "start": start}
    if end is not None:
        piece["end"] = end
    with pytest.raises(edit.EditError, match=message):
        edit.export(edit_list(bvh_dir, [piece]), tmp_path / "out.bvh")
    assert not (tmp_path / "out.bvh").exists()


def test_pieces_on_another_skeleton_name_the_file_and_the_joints(bvh_dir, tmp_path):
    other = bvh.load(bvh_dir / WALK.format(2))
    other.offsets[other.joint_index("LowerLeg_L")] *= 1.2
    other.positions[:, other.joint_index("LowerLeg_L")] *= 1.2
    bvh.save(other, tmp_path / "long_legged.bvh")
    edits = edit.parse_edit_list({"pieces": [{"file": str(bvh_dir / WALK.format(1)), "end": 3.0},
                                             {"file": str(tmp_path / "long_legged.bvh")}]})
    with pytest.raises(edit.EditError, match=r"pieces\[1\] \(long_legged\.bvh\)\.file: .*another skeleton than "
                                             r"pieces\[0\] \(dataset-2_walk_normal_001\.bvh\.gz\).*LowerLeg_L"):
        edit.build(edits)


def test_dataset_1_and_dataset_2_clips_join_as_one_skeleton(bvh_dir, cache):
    """They differ only in the hips' OFFSET (each take's start position), which is not a bone: the
    editor's skeleton check is training's (`skeleton_difference`)."""
    ds1 = bvh_dir.parent / "bandai-namco-ds1" / "dataset-1_walk_normal_001.bvh.gz"
    assert not np.allclose(bvh.load(ds1).offsets, bvh.load(bvh_dir / WALK.format(1)).offsets)
    edits = edit.parse_edit_list({"pieces": [{"file": str(bvh_dir / WALK.format(1)), "start": 0.5, "end": 3.0},
                                             {"file": str(ds1)}]})
    result = edit.build(edits, cache)
    assert len(result.joins) == 1 and result.pops == 0


def test_a_piece_shorter_than_the_transition_is_refused(bvh_dir):
    edits = edit_list(bvh_dir, [{"file": WALK.format(1), "end": 3.0}, {"file": WALK.format(2), "start": 1.0, "end": 1.2}])
    with pytest.raises(edit.EditError, match=r"pieces\[1\] .*0\.20 s long .*shorter than the transition \(0\.3 s\)"):
        edit.build(edits)


# ---- real clips ------------------------------------------------------------------------------------

def test_a_clip_cut_and_joined_again_at_the_same_instant_is_the_clip_itself(bvh_dir, cache):
    pieces = [{"file": WALK.format(1), "start": 0.5, "end": 3.0}, {"file": WALK.format(1), "start": 3.0, "end": 6.0}]
    for kind in ("inertialize", "crossfade"):
        result = edit.build(edit_list(bvh_dir, pieces, kind=kind, match="none"), cache)
        clip = result.pieces[0].clip
        source = clip.labels.global_positions[result.pieces[0].first_frame:result.pieces[1].last_frame + 1]
        output = result.motion.global_positions()
        legs = [result.motion.joint_index(n) for n in ("UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L",
                                                         "UpperLeg_R", "LowerLeg_R", "Foot_R", "Toes_R")]
        assert output.shape == source.shape
        np.testing.assert_allclose(np.delete(output, legs, axis=1), np.delete(source, legs, axis=1), atol=1e-9)
        assert np.abs(output - source).max() < 0.05  # feet held still across the seam, not sliding as captured
    matched = edit.build(edit_list(bvh_dir, pieces, match="phase", search=0.3), cache)
    assert matched.joins[0].match.out_frame == matched.joins[0].match.in_frame  # the very same instant


def test_the_seam_report_measures_the_half_second_centred_on_the_join(bvh_dir, cache):
    """A clip joined to itself at one instant: the source figure is that clip's own skating over the 0.5 s
    centred there (against the floor of its labelled contacts), and the seam, its feet held, skates less."""
    pieces = [{"file": WALK.format(1), "start": 0.5, "end": 3.0}, {"file": WALK.format(1), "start": 3.0, "end": 6.0}]
    result = edit.build(edit_list(bvh_dir, pieces, match="none"), cache)
    join, labels = result.joins[0], result.pieces[0].clip.labels
    feet = labels.global_positions[:, labels.contact_joints]
    floor = floor_heights([(feet[..., 1], labels.contacts)])
    steps = np.zeros(len(feet) - 1, bool)
    steps[join.match.out_frame - 15:join.match.out_frame + 15] = True  # 30 steps of 1/60 s
    expected = measures.foot_skating(feet, floor, 1.0 / FPS).mean(steps)
    assert join.source_skating == pytest.approx(expected, rel=1e-12) and expected > 0.05
    assert join.seam_skating < join.source_skating
    assert result.mocap_skating == pytest.approx(measures.foot_skating(feet, floor, 1.0 / FPS).mean(), rel=1e-12)


def test_speed_and_mirror_change_the_piece_as_asked(bvh_dir, cache):
    plain = edit.build(edit_list(bvh_dir, [{"file": WALK.format(3), "start": 1.0, "end": 5.0}]), cache)
    fast = edit.build(edit_list(bvh_dir, [{"file": WALK.format(3), "start": 1.0, "end": 5.0, "speed": 2.0}]), cache)
    assert fast.motion.num_frames == (plain.motion.num_frames - 1) // 2 + 1
    hips = plain.motion.joint_index("Hips")
    path = lambda m: np.linalg.norm(np.diff(m.global_positions()[:, hips, [0, 2]], axis=0), axis=-1).sum()
    assert path(fast.motion) == pytest.approx(path(plain.motion), rel=0.02)  # same ground covered, in half the time
    mirrored = edit.build(edit_list(bvh_dir, [{"file": WALK.format(3), "start": 1.0, "end": 5.0, "mirror": True}]), cache)
    left, right = plain.motion.joint_index("Hand_L"), plain.motion.joint_index("Hand_R")
    plain_pos, mirrored_pos = plain.motion.global_positions(), mirrored.motion.global_positions()
    # the left hand now swings as the right one did (heights are unchanged by a mirror)
    np.testing.assert_allclose(mirrored_pos[:, left, 1], plain_pos[:, right, 1], atol=0.01)


def test_an_exported_sequence_round_trips_through_the_bvh_loader(bvh_dir, tmp_path, cache):
    edits = edit_list(bvh_dir, [{"file": WALK.format(1), "start": 0.5, "end": 3.0},
                                {"file": RUN.format(1), "start": 0.3}], kind="crossfade")
    for name in ("walk_run.bvh", "walk_run.bvh.gz"):
        result = edit.export(edits, tmp_path / name, cache)
        loaded = bvh.load(tmp_path / name)
        assert loaded.names == result.motion.names and loaded.num_frames == result.motion.num_frames
        assert loaded.frame_time == pytest.approx(1.0 / FPS)
        np.testing.assert_allclose(loaded.global_positions(), result.motion.global_positions(), atol=1e-4)
    assert (tmp_path / "walk_run.bvh.gz").read_bytes()[:2] == b"\x1f\x8b"


@pytest.fixture(scope="module")
def walking_figure(bvh_dir):
    """The mocap's walking skating: every bundled normal walk at the edit rate, the same measure (the
    evaluation's, against the floor of the clips' labelled contacts; 0.27 m/s at 60 Hz, 0.25 at 30)."""
    clips = [edit.prepare_clip(bvh.load(path), FPS) for path in sorted(bvh_dir.glob("dataset-2_walk_normal_*.bvh.gz"))]
    feet = clips[0].labels.contact_joints
    floor = floor_heights([(c.labels.global_positions[:, feet, 1], c.labels.contacts) for c in clips])
    figure = measures.pool_skating([measures.foot_skating(c.labels.global_positions[:, feet], floor, 1.0 / FPS)
                                    for c in clips]).mean()
    assert 0.1 < figure < 0.5
    return figure


@pytest.mark.parametrize("kind", ["inertialize", "crossfade"])
@pytest.mark.parametrize("pieces", [
    [{"file": WALK.format(1), "start": 0.5, "end": 4.0}, {"file": WALK.format(2), "start": 1.0, "end": 5.0}],
    [{"file": WALK.format(5), "start": 0.5, "end": 3.2}, {"file": WALK.format(9), "start": 2.0, "end": 6.0, "mirror": True}],
    [{"file": WALK.format(1), "start": 0.5, "end": 4.0}, {"file": RUN.format(1), "start": 0.3}],
    [{"file": WALK.format(10), "start": 0.5, "end": 3.5}, {"file": RUN.format(8), "start": 0.6}],
], ids=["walk-walk", "walk-mirrored-walk", "walk-run", "walk-run-2"])
def test_joins_of_bundled_clips_meet_the_targets(bvh_dir, walking_figure, cache, kind, pieces):
    result = edit.build(edit_list(bvh_dir, pieces, kind=kind), cache)
    join = result.joins[0]
    assert join.match.phase_difference < 0.1 and join.match.contacts_agree >= 3
    assert result.root_step_max <= result.source_root_step_max + 1e-9  # no root jump
    # Within 1.5x the mocap's walking figure, or (where the captured feet already skate there, a toe
    # swinging through low at 3 m/s counts as contact) no worse than the source clips at the cut.
    assert join.seam_skating <= max(1.5 * walking_figure, 1.05 * join.source_skating)
    assert result.pops == 0 and result.max_trend_deviation <= measures.POP_DISTANCE  # no pose pop
    report = "\n".join(result.report_lines())
    assert "phase diff" in report and f"{join.seam_skating:.3f}" in report


def test_the_command_writes_the_sequence_and_the_report(bvh_dir, tmp_path, capsys):
    data = {"name": "cli", "pieces": [{"file": str(bvh_dir / WALK.format(1)), "start": 0.5, "end": 3.0},
                                      {"file": str(bvh_dir / WALK.format(2)), "start": 1.0, "end": 3.5}]}
    (tmp_path / "cli.json").write_text(json.dumps(data))
    out, report = tmp_path / "out" / "cli.bvh.gz", tmp_path / "report.json"
    assert edit.main([str(tmp_path / "cli.json"), "--out", str(out), "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "cli: 2 pieces" in printed and "0->1" in printed and str(out) in printed
    written = json.loads(report.read_text())
    assert written["frames"] == bvh.load(out).num_frames and len(written["joins"]) == 1


def test_the_example_edit_lists_build(cache, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)  # their files are named from the repository root
    folder = root / "scripts" / "edits"
    paths = sorted(folder.glob("*.json"))
    assert paths
    for path in paths:
        result = edit.build(edit.load_edit_list(path), cache)
        assert result.motion.num_frames > 60 and result.pops == 0, path.name
