"""The term form of the quaternion product (`quat.signed_terms` / `quat_mul_terms`, for the physics
tick's few dozen quaternions) gives `quat.quat_mul`'s numbers bit for bit, and `quat_to_expmap` (its
norm taken by `vector_length`) gives the numbers of its formula with np.linalg.norm."""
import numpy as np
import pytest

from pfnn_core.math import quat


def _mul_by_terms(a, b):
    return quat.quat_mul_terms(quat.signed_terms(a), b)


@pytest.mark.parametrize("shape_a,shape_b", [((4,), (4,)), ((22, 4), (22, 4)), ((1, 22, 4), (1, 22, 4)),
                                             ((1, 4), (8, 4)), ((2, 8, 19, 4), (2, 1, 19, 4))])
def test_quat_mul_is_bit_identical(shape_a, shape_b):
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    expected = quat.quat_mul(a, b)
    got = _mul_by_terms(a, b)
    assert got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()
    assert quat.quat_mul_terms(quat.inverse_terms(a), b).tobytes() == quat.quat_mul(quat.quat_inv(a), b).tobytes()


def test_quat_mul_hand_values():
    i, j, k = np.array([0.0, 1, 0, 0]), np.array([0.0, 0, 1, 0]), np.array([0.0, 0, 0, 1])
    np.testing.assert_array_equal(_mul_by_terms(i, j), k)  # i j = k
    np.testing.assert_array_equal(_mul_by_terms(j, i), -k)
    np.testing.assert_array_equal(_mul_by_terms(i, i), [-1.0, 0, 0, 0])


def _expmap_with_linalg_norm(q, eps=1e-8):
    q = quat.quat_abs(q)
    sin_half = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(sin_half, q[..., :1])
    scale = np.where(sin_half > eps, angle / np.maximum(sin_half, eps), 2.0 / np.maximum(q[..., :1], eps))
    return q[..., 1:] * scale


def test_quat_to_expmap_is_bit_identical():
    rng = np.random.default_rng(3)
    q = quat.quat_normalize(rng.normal(size=(50, 4)))
    q[:5] = [1.0, 0, 0, 0]  # no turn: the small-angle branch
    q[5:10, 1:] *= 1e-10
    q[10:15] *= -1.0  # w < 0: the same rotation
    assert quat.quat_to_expmap(q).tobytes() == _expmap_with_linalg_norm(q).tobytes()
    half_turn_about_y = np.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0])
    np.testing.assert_allclose(quat.quat_to_expmap(half_turn_about_y), [0.0, np.pi / 2, 0.0], atol=1e-15)


def _units(rng, *shape):
    q = rng.normal(size=shape + (4,))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _nlerp(start, end, share):
    end = np.where((start * end).sum(axis=-1, keepdims=True) < 0.0, -end, end)
    return quat.quat_normalize(start + share * (end - start))


def test_the_compiled_servo_targets_are_the_numpy_forms():
    """`servo_targets.joint_targets` gives the numpy form's targets bit for bit; `substep_targets` its
    substeps' spring and hips rotations and the hips' turn bit for bit (a joint turned into the other
    hemisphere included) and the damping's feed-forward within 1e-14 relative (arctan2's last bit)."""
    from pfnn_core.physics.servo_targets import joint_targets, substep_targets

    rng = np.random.default_rng(11)
    batch, joints, substeps, dt = 3, 20, 8, 1.0 / 60.0
    world = _units(rng, batch, joints + 1)
    parents = rng.integers(0, 6, joints)
    ball = np.arange(1, joints + 1)
    reference = _units(rng, joints)
    local = quat.quat_mul_terms(quat.inverse_terms(world[:, parents]), world[:, ball])
    expected = quat.quat_normalize(quat.quat_mul_terms(quat.signed_terms(reference)[None], local))
    got = np.empty((batch, joints, 4))
    joint_targets(world, parents, ball, reference, got)
    assert got.tobytes() == expected.tobytes()

    last = _units(rng, batch, joints)
    now = quat.quat_normalize(last + 0.05 * rng.normal(size=last.shape))
    now[0, 3] *= -1.0  # the same rotation, the other hemisphere
    last_hips, now_hips = _units(rng, batch), _units(rng, batch)
    order = rng.permutation(joints)
    gains = rng.uniform(0.1, 3.0, joints) * np.where(rng.random((batch, joints)) < 0.5, 0.7, 1.0)
    share = np.arange(1, substeps + 1) / substeps
    both = _nlerp(np.concatenate([last, last_hips[:, None]], axis=1)[:, None],
                  np.concatenate([now, now_hips[:, None]], axis=1)[:, None], share[None, :, None, None])
    spins = quat.quat_to_expmap(np.concatenate(
        [quat.quat_mul_terms(quat.inverse_terms(last), now),
         quat.quat_normalize(quat.quat_mul_terms(quat.signed_terms(now_hips), quat.quat_inv(last_hips)))[:, None]], axis=1))
    feed = (gains[:, :, None] * (spins[:, :-1] / dt))[:, order].reshape(batch, -1)
    springs, rotations = np.empty((batch, substeps, 4 * joints)), np.empty((batch, substeps, 4))
    got_feed, turn = np.empty((batch, 3 * joints)), np.empty((batch, 3))
    substep_targets(last, now, last_hips, now_hips, order, gains, dt, springs, rotations, got_feed, turn)
    assert springs.tobytes() == both[:, :, order].reshape(batch, substeps, -1).tobytes()
    assert rotations.tobytes() == both[:, :, -1].tobytes()
    assert turn.tobytes() == spins[:, -1].tobytes()
    np.testing.assert_allclose(got_feed, feed, rtol=1e-14, atol=1e-14 * np.abs(feed).max())


def test_the_compiled_hold_is_the_numpy_form():
    """`servo_targets.hold_targets`: the hold's force on the hips for every substep bit for bit, its
    torque within 1e-14 relative (arctan2's last bit), as the numpy form of the tick's start."""
    from pfnn_core.physics.servo_targets import hold_targets

    rng = np.random.default_rng(12)
    substeps, dt = 8, 1.0 / 60.0
    qpos, qvel = rng.normal(size=40), rng.normal(size=39)
    qpos[3:7] = _units(rng)
    positions, rotations = rng.normal(size=(substeps, 3)), _units(rng, substeps)
    push, root_kp = rng.normal(size=3), rng.uniform(10.0, 1000.0, 6)
    ahead = dt * np.arange(substeps)[:, None] / substeps
    forces = root_kp[0:3] * (positions - qpos[0:3] - ahead * qvel[0:3]) + push
    turns = quat.quat_to_expmap(quat.quat_mul_terms(quat.inverse_terms(qpos[3:7]), rotations)) - ahead * qvel[3:6]
    hold = np.empty((substeps, 6))
    hold_targets(qpos, qvel, positions, rotations, push, root_kp, dt, 0, 3, hold)
    assert hold[:, 0:3].tobytes() == forces.tobytes()
    np.testing.assert_allclose(hold[:, 3:6], root_kp[3:6] * turns, rtol=1e-14, atol=1e-14 * np.abs(root_kp[3:6] * turns).max())
