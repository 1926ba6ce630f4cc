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
