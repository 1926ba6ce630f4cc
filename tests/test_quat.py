"""Quaternion math against scipy's Rotation, round trips, conventions, and the torch twin."""
import itertools

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pfnn_core.math import quat as Q

ALL_ORDERS = ["".join(p) for p in itertools.permutations("XYZ")] + [a + b + a for a in "XYZ" for b in "XYZ" if a != b]


def random_quats(shape, seed=0):
    return Q.quat_normalize(np.random.default_rng(seed).normal(size=shape + (4,)))


def scipy_rot(q):
    return Rotation.from_quat(q.reshape(-1, 4), scalar_first=True)


def same_rotation(a, b, atol=1e-9):
    return np.allclose(np.abs(np.sum(a * b, axis=-1)), 1.0, atol=atol)


def test_twelve_orders():
    assert len(ALL_ORDERS) == 12


@pytest.mark.parametrize("order", ALL_ORDERS)
def test_euler_matches_scipy_intrinsic(order):
    angles = np.random.default_rng(1).uniform(-np.pi, np.pi, size=(200, 3))
    q = Q.quat_from_euler(angles, order)
    expected = Rotation.from_euler(order, angles).as_quat(scalar_first=True)
    assert same_rotation(q, expected)
    recovered = Q.quat_to_euler(q, order)
    np.testing.assert_allclose(recovered, Rotation.from_quat(expected, scalar_first=True).as_euler(order), atol=1e-9)
    assert same_rotation(Q.quat_from_euler(recovered, order), q)


@pytest.mark.parametrize("order", ALL_ORDERS)
def test_euler_gimbal_lock_still_round_trips(order):
    middle = [0.0, np.pi] if order[0] == order[2] else [np.pi / 2, -np.pi / 2]
    angles = np.array([[0.3, m, -0.7] for m in middle])
    q = Q.quat_from_euler(angles, order)
    assert same_rotation(Q.quat_from_euler(Q.quat_to_euler(q, order), order), q, atol=1e-6)


def test_bvh_order_means_first_channel_outermost():
    # 'ZXY' with angles (a, b, c) is Rz(a) @ Rx(b) @ Ry(c).
    a, b, c = 0.4, -1.1, 2.0
    expected = Rotation.from_euler("z", a) * Rotation.from_euler("x", b) * Rotation.from_euler("y", c)
    assert same_rotation(Q.quat_from_euler(np.array([a, b, c]), "ZXY"), expected.as_quat(scalar_first=True))


def test_mul_inv_and_vectors_match_scipy():
    a, b = random_quats((50,), 2), random_quats((50,), 3)
    v = np.random.default_rng(4).normal(size=(50, 3))
    assert same_rotation(Q.quat_mul(a, b), (scipy_rot(a) * scipy_rot(b)).as_quat(scalar_first=True))
    np.testing.assert_allclose(Q.quat_mul_vec(a, v), scipy_rot(a).apply(v), atol=1e-12)
    np.testing.assert_allclose(Q.quat_inv_mul_vec(a, Q.quat_mul_vec(a, v)), v, atol=1e-12)
    assert same_rotation(Q.quat_inv_mul(a, Q.quat_mul(a, b)), b)
    np.testing.assert_allclose(Q.quat_to_matrix(a), scipy_rot(a).as_matrix(), atol=1e-12)
    assert same_rotation(Q.quat_from_matrix(Q.quat_to_matrix(a)), a)


def test_batched_equals_unbatched():
    q, r = random_quats((4, 5), 5), random_quats((4, 5), 6)
    v = np.random.default_rng(7).normal(size=(4, 5, 3))
    batched = {
        "mul": Q.quat_mul(q, r), "vec": Q.quat_mul_vec(q, v), "euler": Q.quat_to_euler(q, "ZXY"),
        "exp": Q.quat_to_expmap(q), "6d": Q.quat_to_6d(q), "mat": Q.quat_from_matrix(Q.quat_to_matrix(q)),
        "slerp": Q.quat_slerp(q, r, 0.3), "yaw": Q.quat_to_yaw(q),
    }
    for i, j in itertools.product(range(4), range(5)):
        single = {
            "mul": Q.quat_mul(q[i, j], r[i, j]), "vec": Q.quat_mul_vec(q[i, j], v[i, j]),
            "euler": Q.quat_to_euler(q[i, j], "ZXY"), "exp": Q.quat_to_expmap(q[i, j]), "6d": Q.quat_to_6d(q[i, j]),
            "mat": Q.quat_from_matrix(Q.quat_to_matrix(q[i, j])), "slerp": Q.quat_slerp(q[i, j], r[i, j], 0.3),
            "yaw": Q.quat_to_yaw(q[i, j]),
        }
        for key, value in single.items():
            np.testing.assert_allclose(batched[key][i, j], value, atol=1e-12, err_msg=key)


def test_expmap_angle_range_and_scipy():
    q = random_quats((300,), 8)
    rotvec = Q.quat_to_expmap(q)
    angle = np.linalg.norm(rotvec, axis=-1)
    assert np.all(angle <= np.pi + 1e-12) and np.all(angle >= 0.0)
    np.testing.assert_allclose(rotvec, scipy_rot(q).as_rotvec(), atol=1e-9)
    assert same_rotation(Q.quat_from_expmap(rotvec), q)
    # Angles beyond pi wrap: a 3/2 pi turn about +Y is a -pi/2 turn.
    wrapped = Q.quat_to_expmap(Q.quat_from_angle_axis(1.5 * np.pi, np.array([0.0, 1.0, 0.0])))
    np.testing.assert_allclose(wrapped, [0.0, -np.pi / 2, 0.0], atol=1e-12)
    np.testing.assert_allclose(Q.quat_from_expmap(np.zeros(3)), [1, 0, 0, 0])


def test_6d_round_trip_and_gram_schmidt():
    q = random_quats((100,), 9)
    r6 = Q.quat_to_6d(q)
    np.testing.assert_allclose(r6[:, :3], Q.quat_to_matrix(q)[:, :, 0])
    np.testing.assert_allclose(r6[:, 3:], Q.quat_to_matrix(q)[:, :, 1])
    assert same_rotation(Q.quat_from_6d(r6), q)
    noisy = r6 * 3.0 + np.concatenate([np.zeros((100, 3)), 0.5 * r6[:, :3]], axis=-1)  # scaled, skewed
    assert same_rotation(Q.quat_from_6d(noisy), q)


def test_slerp_endpoints_midpoint_and_shortest_path():
    a = Q.quat_from_angle_axis(0.2, np.array([0.0, 1.0, 0.0]))
    b = Q.quat_from_angle_axis(1.4, np.array([0.0, 1.0, 0.0]))
    assert same_rotation(Q.quat_slerp(a, b, 0.0), a)
    assert same_rotation(Q.quat_slerp(a, b, 1.0), b)
    assert same_rotation(Q.quat_slerp(a, b, 0.5), Q.quat_from_angle_axis(0.8, np.array([0.0, 1.0, 0.0])))
    assert same_rotation(Q.quat_slerp(a, -b, 0.5), Q.quat_from_angle_axis(0.8, np.array([0.0, 1.0, 0.0])))
    nearly = Q.quat_from_angle_axis(0.2 + 1e-6, np.array([0.0, 1.0, 0.0]))
    assert np.isfinite(Q.quat_slerp(a, nearly, 0.5)).all()


def test_yaw_convention_and_between():
    np.testing.assert_allclose(Q.quat_mul_vec(Q.quat_from_yaw(np.pi / 2), np.array([0.0, 0.0, 1.0])), [1, 0, 0], atol=1e-12)
    yaws = np.linspace(-3.0, 3.0, 13)
    np.testing.assert_allclose(Q.quat_to_yaw(Q.quat_from_yaw(yaws)), yaws, atol=1e-12)
    u = np.random.default_rng(10).normal(size=(20, 3))
    v = np.random.default_rng(11).normal(size=(20, 3))
    turned = Q.quat_mul_vec(Q.quat_between(u, v), u)
    np.testing.assert_allclose(turned / np.linalg.norm(turned, axis=-1, keepdims=True),
                               v / np.linalg.norm(v, axis=-1, keepdims=True), atol=1e-9)
    x = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(Q.quat_mul_vec(Q.quat_between(x, -x), x), -x, atol=1e-12)


def test_unroll_abs_identity():
    q = random_quats((30,), 12)
    q = q * np.where(np.arange(30) % 3 == 0, -1.0, 1.0)[:, None]
    unrolled = Q.quat_unroll(Q.quat_slerp(q[:1], q[1:2], np.linspace(0, 1, 30)) * np.where(np.arange(30) % 2, -1.0, 1.0)[:, None])
    assert np.all(np.sum(unrolled[1:] * unrolled[:-1], axis=-1) > 0)
    assert np.all(Q.quat_abs(q)[:, 0] >= 0) and same_rotation(Q.quat_abs(q), q)
    assert Q.quat_identity((2, 3)).shape == (2, 3, 4) and np.all(Q.quat_identity((2, 3))[..., 0] == 1)


def test_stack_last_and_vector_length_match_numpy():
    from pfnn_core.math.quat import stack_last, vector_length
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5)).astype(np.float32)
    b = rng.normal(size=(1, 5)).astype(np.float32)  # broadcast against a
    expected = np.stack(np.broadcast_arrays(a, b), axis=-1)
    got = stack_last(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    v = rng.normal(size=(7, 3))
    np.testing.assert_array_equal(vector_length(v), np.linalg.norm(v, axis=-1))
    np.testing.assert_array_equal(vector_length(v, keepdims=True), np.linalg.norm(v, axis=-1, keepdims=True))
