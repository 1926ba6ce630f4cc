"""The lean stage (`pfnn_core.runtime.lean`): the upper body tilted toward the commanded acceleration,
checked against hand-computed rotations, and in a real drive: only the joints above the hips move."""

import math

import numpy as np
import pytest

from pfnn_core.runtime.lean import lean_roots_of, lean_upper_body

# root(0) -> hips(1) -> spine(2) -> head(3); hips -> leg(4) -> foot(5); hips -> leg(6) -> foot(7)
PARENTS = np.array([-1, 0, 1, 2, 1, 4, 1, 6])
LEGS = np.array([[4, 4, 5, 5], [6, 6, 7, 7]])
REST = np.array([[0, 0, 0], [0, 1.0, 0], [0, 1.1, 0], [0, 1.7, 0], [0.1, 1.0, 0], [0.1, 0.1, 0],
                 [-0.1, 1.0, 0], [-0.1, 0.1, 0]], dtype=float)


def _pose():
    return REST[None].copy(), np.tile(np.eye(3), (1, len(PARENTS), 1, 1))


def test_only_the_subtrees_hanging_from_the_anchor_that_start_no_leg_lean():
    assert lean_roots_of(PARENTS, 1, LEGS).tolist() == [-1, -1, 2, 2, -1, -1, -1, -1]


def test_the_head_turns_about_the_spine_toward_the_acceleration_by_the_degrees_asked():
    pos, rot = _pose()
    lean_upper_body(pos, rot, np.array([[2.0, 0.0]]), 1.5, 10.0, lean_roots_of(PARENTS, 1, LEGS))  # 3 degrees
    angle = math.radians(3.0)
    assert pos[0, 3] == pytest.approx([0.6 * math.sin(angle), 1.1 + 0.6 * math.cos(angle), 0.0], abs=1e-12)
    assert np.array_equal(pos[0, [0, 1, 2, 4, 5, 6, 7]], REST[[0, 1, 2, 4, 5, 6, 7]])  # spine root stays
    # the rotation turns up (y) toward +x about -z, the same for the spine and the head
    expected = np.array([[math.cos(angle), math.sin(angle), 0], [-math.sin(angle), math.cos(angle), 0], [0, 0, 1]])
    assert rot[0, 2] == pytest.approx(expected, abs=1e-12) and rot[0, 3] == pytest.approx(expected, abs=1e-12)
    assert np.array_equal(rot[0, [0, 1, 4, 5, 6, 7]], np.tile(np.eye(3), (6, 1, 1)))


def test_the_lean_is_capped_and_follows_the_direction_and_nothing_moves_without_acceleration():
    roots = lean_roots_of(PARENTS, 1, LEGS)
    pos, rot = _pose()
    lean_upper_body(pos, rot, np.array([[0.0, -30.0]]), 2.0, 6.0, roots)  # 60 degrees asked, 6 allowed, toward -z
    assert pos[0, 3] == pytest.approx([0.0, 1.1 + 0.6 * math.cos(math.radians(6)), -0.6 * math.sin(math.radians(6))])
    for acceleration, per, most in (([0.0, 0.0], 2.0, 6.0), ([3.0, 1.0], 0.0, 6.0), ([3.0, 1.0], 2.0, 0.0)):
        pos, rot = _pose()
        lean_upper_body(pos, rot, np.array([acceleration]), per, most, roots)
        assert np.array_equal(pos[0], REST) and np.array_equal(rot[0], np.tile(np.eye(3), (len(PARENTS), 1, 1)))


def test_in_a_drive_the_lean_moves_the_upper_body_forward_at_a_start_and_leaves_legs_and_root_as_they_were(
        random_checkpoint):
    from pfnn_core.drive.cli import run_drive, settings_from_arguments
    from pfnn_core.models.registry import load_checkpoint

    checkpoint = load_checkpoint(random_checkpoint)
    script = {"segments": [{"duration": 0.5, "move": [0, 0]}, {"duration": 0.5, "move": [0, 1]}]}
    runs = {}
    for lean in ("0", "2"):
        settings, _ = settings_from_arguments([f"lean_per_acceleration={lean}"], checkpoint)
        runs[lean] = run_drive(script, checkpoint, settings=settings)
    names = runs["0"].joint_names
    upper = {"Spine", "Chest", "Neck", "Head"} | {f"{part}_{side}" for part in ("Shoulder", "UpperArm", "LowerArm", "Hand")
                                                   for side in "LR"}
    rest = [j for j, name in enumerate(names) if name not in upper]
    assert len(rest) == len(names) - 12
    still, leaned = runs["0"].joint_positions, runs["2"].joint_positions
    assert np.array_equal(still[:, rest], leaned[:, rest])  # hips, legs, feet and the root: bit-identical
    assert np.array_equal(runs["0"].log["root_z"], runs["2"].log["root_z"])
    assert np.array_equal(still[:30], leaned[:30])  # standing: no acceleration, no lean
    head = names.index("Head")
    ahead = leaned[30:40, head, 2] - still[30:40, head, 2]  # the command accelerates toward +z
    assert ahead[0] > 0.005 and np.all(np.diff(ahead[:3]) > 0)  # from the tick that reads the stick, growing
    assert ahead.max() < 0.6 * math.sin(math.radians(6.0))  # at most the 6 degrees of `lean_max` (head 0.5 m up)
