"""The physics tick's quaternion helpers give `pfnn_core.math.quat`'s numbers bit for bit."""
import numpy as np
import pytest

from pfnn_core.math import quat
from pfnn_core.physics import quickquat


@pytest.mark.parametrize("shape_a,shape_b", [((4,), (4,)), ((22, 4), (22, 4)), ((1, 22, 4), (1, 22, 4)),
                                             ((1, 4), (8, 4)), ((2, 8, 19, 4), (2, 1, 19, 4))])
def test_quat_mul_is_bit_identical(shape_a, shape_b):
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    expected = quat.quat_mul(a, b)
    got = quickquat.quat_mul(a, b)
    assert got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_quat_mul_hand_values():
    i, j, k = np.array([0.0, 1, 0, 0]), np.array([0.0, 0, 1, 0]), np.array([0.0, 0, 0, 1])
    np.testing.assert_array_equal(quickquat.quat_mul(i, j), k)  # i j = k
    np.testing.assert_array_equal(quickquat.quat_mul(j, i), -k)
    np.testing.assert_array_equal(quickquat.quat_mul(i, i), [-1.0, 0, 0, 0])


def test_quat_to_expmap_is_bit_identical():
    rng = np.random.default_rng(3)
    q = quat.quat_normalize(rng.normal(size=(50, 4)))
    q[:5] = [1.0, 0, 0, 0]  # no turn: the small-angle branch
    q[5:10, 1:] *= 1e-10
    q[10:15] *= -1.0  # w < 0: the same rotation
    assert quickquat.quat_to_expmap(q).tobytes() == quat.quat_to_expmap(q).tobytes()
    half_turn_about_y = np.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0])
    np.testing.assert_allclose(quickquat.quat_to_expmap(half_turn_about_y), [0.0, np.pi / 2, 0.0], atol=1e-15)
