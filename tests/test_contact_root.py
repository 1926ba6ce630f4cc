"""The root's velocity from the model's contact feet (`runtime.contact_root`): hand-computed steps, the
world invariant it exists for, the bare preset and the runtime's default without it (the shipped model's
side-steps with it: tests/test_runtime.py)."""
from pathlib import Path

import numpy as np

from pfnn_core.math.planar import rotate_xz
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.runtime.contact_root import contact_root_velocity
from pfnn_core.runtime.root_motion import START_SHAPE, start_lean
from pfnn_core.runtime.settings import RuntimeSettings

DT = 1.0 / 60.0
DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "assets" / "models" / "default.safetensors"
FEET = [0, 1, 2, 3]


def poses(before_xz, now_xz):
    """[1, 4, 3] poses from (x, z) of the four contact joints, at 5 cm height."""
    def pose(xz):
        out = np.full((1, 4, 3), 0.05)
        out[0, :, [0, 2]] = np.asarray(xz, float).T
        return out
    return pose(before_xz), pose(now_xz)


def test_a_planted_foot_moving_back_in_the_root_frame_moves_the_root_forward():
    """Left foot planted (contact 1), the others up: the foot went from z 0.30 to 0.29 in the root frame in
    one tick, so the root went 1 cm forward: 0.01 m * 60 / s = 0.6 m/s along +z, whatever the model said."""
    before, now = poses([(0.1, 0.30), (0.1, 0.45), (-0.1, 0.0), (-0.1, 0.1)],
                        [(0.1, 0.29), (0.1, 0.44), (-0.1, 0.2), (-0.1, 0.3)])
    velocity = contact_root_velocity(np.array([[0.3, 1.5]]), np.zeros(1), now, before,
                                     np.array([[1.0, 0.0, 0.0, 0.0]]), FEET, DT, 1.0)
    np.testing.assert_allclose(velocity, [[0.0, 0.6]], atol=1e-12)


def test_half_a_contact_or_half_the_amount_blends_halfway_and_none_keeps_the_models_velocity():
    before, now = poses([(0.0, 0.3)] * 4, [(0.0, 0.29)] * 4)
    model = np.array([[0.2, 1.0]])
    still = np.array([0.0, 0.6])
    half = contact_root_velocity(model, np.zeros(1), now, before, np.array([[0.5, 0.0, 0.0, 0.0]]), FEET, DT, 1.0)
    np.testing.assert_allclose(half[0], 0.5 * model[0] + 0.5 * still, atol=1e-12)
    amount = contact_root_velocity(model, np.zeros(1), now, before, np.ones((1, 4)), FEET, DT, 0.5)
    np.testing.assert_allclose(amount[0], 0.5 * model[0] + 0.5 * still, atol=1e-12)
    for contacts, share in ((np.zeros((1, 4)), 1.0), (np.ones((1, 4)), 0.0)):
        same = contact_root_velocity(model, np.zeros(1), now, before, contacts, FEET, DT, share)
        np.testing.assert_array_equal(same, model)


def test_the_amount_is_per_character():
    before, now = poses([(0.0, 0.3)] * 4, [(0.0, 0.29)] * 4)
    model = np.array([[0.2, 1.0], [0.2, 1.0], [0.2, 1.0]])
    out = contact_root_velocity(model, np.zeros(3), np.repeat(now, 3, 0), np.repeat(before, 3, 0), np.ones((3, 4)),
                                FEET, DT, np.array([1.0, 0.0, 0.25]))
    np.testing.assert_allclose(out, [[0.0, 0.6], [0.2, 1.0], [0.15, 0.9]], atol=1e-12)


def test_a_start_from_standing_leans_on_the_command_as_root_motion_does():
    """`start_lean`: (share of the last second stood) ** START_SHAPE, none while strafing or with starts
    left to the model; the tick scales the contact root by 1 - this (a start is the command's)."""
    settings = RuntimeSettings()
    stood = np.array([[1.0] * 10, [1.0] * 5 + [0.0] * 5, [0.0] * 10, [1.0] * 10])
    lean = start_lean(stood, np.array([False, False, False, True]), settings)
    np.testing.assert_allclose(lean, [1.0, 0.5 ** START_SHAPE, 0.0, 0.0])
    settings.start_from_command = False
    np.testing.assert_array_equal(start_lean(stood, np.zeros(4, bool), settings), np.zeros(4))


def test_a_fully_planted_foot_keeps_its_world_position_through_a_turning_step():
    """Random poses, turns and root velocities: with one foot planted, placing both poses in the world
    (the root stepping by the returned velocity in the last root frame, turning by yaw rate * dt) puts the
    planted joint where it was."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        before, now = rng.normal(0, 0.3, (1, 4, 3)), rng.normal(0, 0.3, (1, 4, 3))
        yaw_before, yaw_rate = rng.uniform(-np.pi, np.pi), rng.uniform(-6.0, 6.0)
        planted = rng.integers(4)
        contacts = np.zeros((1, 4))
        contacts[0, planted] = 1.0
        velocity = contact_root_velocity(rng.normal(0, 1, (1, 2)), np.array([yaw_rate]), now, before, contacts,
                                         FEET, DT, 1.0)
        root_before = rng.normal(0, 1, 2)
        root_now = root_before + rotate_xz(yaw_before, velocity[0] * DT)
        world_before = root_before + rotate_xz(yaw_before, before[0, planted, [0, 2]])
        world_now = root_now + rotate_xz(yaw_before + yaw_rate * DT, now[0, planted, [0, 2]])
        np.testing.assert_allclose(world_now, world_before, atol=1e-9)


def test_the_bare_network_preset_leaves_the_root_to_the_model_and_the_runtime_moves_it_with_the_feet():
    card = load_checkpoint(DEFAULT_MODEL).card
    assert RuntimeSettings.bare_network(card).root_from_contacts == 0.0
    assert RuntimeSettings.for_model(card).root_from_contacts == 1.0
