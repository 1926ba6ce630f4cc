"""Quaternion and rotation math over numpy arrays: the conventions of the whole project live here.

Conventions (declared once, used everywhere):
- Right-handed coordinates, +Y up, metres, seconds, radians.
- A quaternion is an array ``[..., 4]`` in (w, x, y, z) order. Every function is batched over the
  leading dimensions and broadcasts them like numpy does.
- ``quat_mul(a, b)`` is the rotation "b first, then a" (the matrix product R_a @ R_b), so a child's
  global rotation is ``quat_mul(parent_global, child_local)``.
- ``quat_inv`` is the conjugate: inputs are unit quaternions.
- Euler angles follow BVH: ``order`` is a 3-letter string in channel order such as ``'ZXY'``, the
  angles are listed in that same order and the rotation is R = R_first @ R_second @ R_third (intrinsic,
  what scipy calls an uppercase sequence). Repeated-axis orders (``'ZXZ'``) work too.
- Exponential map: the rotation vector axis * angle with angle in [0, pi] (the quaternion is taken with
  w >= 0 first, so the angle is wrapped into (-pi, pi]).
- 6D form: the first two COLUMNS of the rotation matrix, ``[..., 6] = (c0x, c0y, c0z, c1x, c1y, c1z)``.
- Yaw is a rotation about +Y; a positive yaw turns +Z toward +X (``quat_from_yaw(pi/2)`` maps +Z to +X).
"""
from __future__ import annotations

import numpy as np

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def quat_identity(shape=()) -> np.ndarray:
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    q = np.zeros(shape + (4,))
    q[..., 0] = 1.0
    return q


def stack_last(*components) -> np.ndarray:
    """``np.stack(components, axis=-1)`` for a few arrays of one shape (later ones may broadcast to the
    first), without np.stack's per-call bookkeeping: the runtime tick stacks many tiny arrays."""
    first = np.asarray(components[0])
    out = np.empty(first.shape + (len(components),), dtype=np.result_type(*components))
    for index, component in enumerate(components):
        out[..., index] = component
    return out


def vector_length(v: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """``np.linalg.norm(v, axis=-1)`` (the same sum of squares and sqrt) without its dispatch overhead."""
    return np.sqrt(np.add.reduce(v * v, axis=-1, keepdims=keepdims))


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return stack_last(
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def quat_inv(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


# The product in term form, for a few dozen quaternions (the physics tick), where numpy's per-call cost
# is most of `quat_mul`'s: five calls instead of some thirty, the same numbers bit for bit (the same
# products, each component's terms added in `quat_mul`'s order; a sign on a's factor is exact). On
# thousands of quaternions the gathers make it several times slower: there `quat_mul`.
# Component i of a b = sum over k of _SIGN[k, i] * a[_A[k, i]] * b[_B[k, i]].
_A = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]])
_B = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_SIGN = np.array([[1, 1, 1, 1], [-1, 1, -1, 1], [-1, 1, 1, -1], [-1, -1, 1, 1]], dtype=float)
_INVERSE_SIGN = np.array([1.0, -1.0, -1.0, -1.0])[_A] * _SIGN


def signed_terms(a) -> np.ndarray:
    """[..., 4 terms, 4 components]: a's signed factor of each term of a product a b (a constant left
    factor can keep this and multiply with `quat_mul_terms`)."""
    return np.asarray(a)[..., _A] * _SIGN


def inverse_terms(a) -> np.ndarray:
    """`signed_terms(quat_inv(a))` in one multiplication (the conjugate's signs folded in: exact)."""
    return np.asarray(a)[..., _A] * _INVERSE_SIGN


def quat_mul_terms(terms, b) -> np.ndarray:
    """The product a b from `signed_terms(a)`: each component's four terms summed in order (a reduction
    over the second-last axis adds its rows one after another, never pairwise)."""
    return np.add.reduce(terms * np.asarray(b)[..., _B], axis=-2)


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of [..., 3] vectors; np.cross moves axes around and is several times slower on
    the small batches of a runtime tick."""
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return stack_last(ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx)


def quat_mul_vec(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v [..., 3]`` by unit quaternions ``q``."""
    qv = q[..., 1:]
    t = 2.0 * cross3(qv, v)
    return v + q[..., :1] * t + cross3(qv, t)


def quat_inv_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return quat_mul(quat_inv(a), b)


def quat_inv_mul_vec(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return quat_mul_vec(quat_inv(q), v)


def quat_normalize(q: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    return q / np.maximum(vector_length(q, keepdims=True), eps)


def quat_abs(q: np.ndarray) -> np.ndarray:
    """The same rotation with w >= 0."""
    return np.where(q[..., :1] < 0.0, -q, q)


def quat_unroll(q: np.ndarray) -> np.ndarray:
    """Flip signs along axis 0 so that consecutive quaternions lie in the same hemisphere."""
    q = np.asarray(q, dtype=float)
    if q.shape[0] < 2:
        return q.copy()
    dots = np.sum(q[1:] * q[:-1], axis=-1)
    flips = np.where(dots < 0.0, -1.0, 1.0)
    signs = np.concatenate([np.ones_like(flips[:1]), np.cumprod(flips, axis=0)], axis=0)
    return q * signs[..., None]


def quat_from_angle_axis(angle, axis) -> np.ndarray:
    angle = np.asarray(angle, dtype=float)
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.maximum(vector_length(axis, keepdims=True), 1e-12)
    half = angle[..., None] / 2.0
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def quat_to_angle_axis(q: np.ndarray, eps: float = 1e-12):
    """(angle [...] in [0, pi], unit axis [..., 3]); the axis is +X where the rotation is the identity."""
    q = quat_abs(q)
    sin_half = np.linalg.norm(q[..., 1:], axis=-1)
    angle = 2.0 * np.arctan2(sin_half, q[..., 0])
    safe = sin_half > eps
    axis = np.where(safe[..., None], q[..., 1:] / np.where(safe, sin_half, 1.0)[..., None],
                    np.array([1.0, 0.0, 0.0]))
    return angle, axis


def _parse_order(order: str) -> list[int]:
    order = order.upper()
    if len(order) != 3 or any(c not in _AXIS_INDEX for c in order) or order[0] == order[1] or order[1] == order[2]:
        raise ValueError(f"Euler order must be 3 letters from XYZ without consecutive repeats, got {order!r}")
    return [_AXIS_INDEX[c] for c in order]


def _axis_quat(axis_index: int, angle: np.ndarray) -> np.ndarray:
    q = np.zeros(angle.shape + (4,))
    q[..., 0] = np.cos(angle / 2.0)
    q[..., 1 + axis_index] = np.sin(angle / 2.0)
    return q


def quat_from_euler(angles: np.ndarray, order: str) -> np.ndarray:
    """Intrinsic Euler angles ``[..., 3]`` (radians, listed in ``order``) to quaternions."""
    axes = _parse_order(order)
    angles = np.asarray(angles, dtype=float)
    q = _axis_quat(axes[0], angles[..., 0])
    for k in (1, 2):
        q = quat_mul(q, _axis_quat(axes[k], angles[..., k]))
    return q


def quat_to_euler(q: np.ndarray, order: str) -> np.ndarray:
    """Quaternions to intrinsic Euler angles ``[..., 3]`` in ``order``, each in [-pi, pi).

    Direct quaternion method of Bernardes and Viollet (2022). It works on the equivalent extrinsic
    sequence (the reversed axes) and reverses the angles at the end. In gimbal lock the first
    intrinsic angle is set to zero.
    """
    i, j, k = _parse_order(order)[::-1]
    q = np.asarray(q, dtype=float)
    w, v = q[..., 0], [q[..., 1], q[..., 2], q[..., 3]]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = float((i - j) * (j - k) * (k - i) // 2)
    if symmetric:
        a, b, c, d = w, v[i], v[j], v[k] * sign
    else:
        a, b, c, d = w - v[j], v[i] + v[k] * sign, v[j] + w, v[k] * sign - v[i]
    middle = 2.0 * np.arctan2(np.hypot(c, d), np.hypot(a, b))
    half_sum = np.arctan2(b, a)
    half_diff = np.arctan2(d, c)
    eps = 1e-7
    near_zero = np.abs(middle) <= eps
    near_pi = np.abs(middle - np.pi) <= eps
    regular = ~(near_zero | near_pi)
    first = np.where(regular, half_sum - half_diff, np.where(near_zero, 2.0 * half_sum, -2.0 * half_diff))
    third = np.where(regular, half_sum + half_diff, 0.0)
    if not symmetric:
        third = third * sign
        middle = middle - np.pi / 2.0
    extrinsic = np.stack([first, middle, third], axis=-1)
    return (extrinsic[..., ::-1] + np.pi) % (2.0 * np.pi) - np.pi


def quat_to_expmap(q: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Rotation vectors ``[..., 3]`` = axis * angle with angle in [0, pi]."""
    q = quat_abs(q)
    sin_half = vector_length(q[..., 1:], keepdims=True)
    angle = 2.0 * np.arctan2(sin_half, q[..., :1])
    scale = np.where(sin_half > eps, angle / np.maximum(sin_half, eps), 2.0 / np.maximum(q[..., :1], eps))
    return q[..., 1:] * scale


def quat_from_expmap(rotvec: np.ndarray) -> np.ndarray:
    rotvec = np.asarray(rotvec, dtype=float)
    angle = np.linalg.norm(rotvec, axis=-1, keepdims=True)
    sin_half_over_angle = 0.5 * np.sinc(angle / (2.0 * np.pi))
    return np.concatenate([np.cos(angle / 2.0), rotvec * sin_half_over_angle], axis=-1)


def quat_slerp(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    """Shortest-path spherical interpolation; ``t`` broadcasts against the leading dims."""
    t = np.asarray(t, dtype=float)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)
    dot = np.abs(dot)
    close = dot > 0.9995
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.where(close, 1.0, np.sin(theta))
    wa = np.where(close, 1.0 - t, np.sin((1.0 - t) * theta) / sin_theta)
    wb = np.where(close, t, np.sin(t * theta) / sin_theta)
    return quat_normalize(wa * a + wb * b)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = [
        [1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)],
        [2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)],
        [2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)],
    ]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def quat_from_matrix(m: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[..., 3, 3]`` to unit quaternions (Shepperd's method, w >= 0 not enforced)."""
    m = np.asarray(m, dtype=float)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    x_diff, y_diff, z_diff = m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]
    xy_sum, xz_sum, yz_sum = m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1]
    candidates = np.stack([
        stack_last(1 + trace, x_diff, y_diff, z_diff),
        stack_last(x_diff, 1 + m00 - m11 - m22, xy_sum, xz_sum),
        stack_last(y_diff, xy_sum, 1 - m00 + m11 - m22, yz_sum),
        stack_last(z_diff, xz_sum, yz_sum, 1 - m00 - m11 + m22),
    ], axis=-2)
    best = np.argmax(stack_last(trace, m00, m11, m22), axis=-1)
    q = np.take_along_axis(candidates, best[..., None, None], axis=-2)[..., 0, :]
    return quat_normalize(q)


def quat_to_6d(q: np.ndarray) -> np.ndarray:
    m = quat_to_matrix(q)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def quat_from_6d(r6: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """6D (two matrix columns, need not be orthonormal) to quaternions by Gram-Schmidt."""
    r6 = np.asarray(r6, dtype=float)
    c0 = r6[..., :3] / np.maximum(np.linalg.norm(r6[..., :3], axis=-1, keepdims=True), eps)
    c1 = r6[..., 3:] - np.sum(c0 * r6[..., 3:], axis=-1, keepdims=True) * c0
    c1 = c1 / np.maximum(np.linalg.norm(c1, axis=-1, keepdims=True), eps)
    c2 = np.cross(c0, c1)
    return quat_from_matrix(np.stack([c0, c1, c2], axis=-1))


def quat_between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The shortest rotation taking direction ``u`` to direction ``v`` (both ``[..., 3]``).

    Opposite vectors turn half a circle about an axis orthogonal to ``u``; that case is only worked
    out when it occurs (this runs every tick in the leg IK).
    """
    u = np.asarray(u, dtype=float)
    v = np.asarray(v, dtype=float)
    uv_length = np.sqrt(np.sum(u * u, axis=-1) * np.sum(v * v, axis=-1))
    w = uv_length + np.sum(u * v, axis=-1)
    axis = cross3(u, v)
    opposite = w <= 1e-9 * np.maximum(uv_length, 1e-300)
    if np.any(opposite):
        helper = np.where(np.abs(u[..., :1]) < 0.9 * np.sqrt(np.sum(u * u, axis=-1, keepdims=True)),
                          np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        axis = np.where(opposite[..., None], cross3(u, helper), axis)
        w = np.where(opposite, 0.0, w)
    rotation = np.empty(w.shape + (4,))
    rotation[..., 0], rotation[..., 1:] = w, axis
    return quat_normalize(rotation)


def wrap_angle(angle) -> np.ndarray:
    """Angle(s) (radians) wrapped into [-pi, pi)."""
    return (np.asarray(angle, dtype=np.float64) + np.pi) % (2.0 * np.pi) - np.pi


def quat_from_yaw(yaw) -> np.ndarray:
    yaw = np.asarray(yaw, dtype=float)
    zero = np.zeros_like(yaw)
    return stack_last(np.cos(yaw / 2.0), zero, np.sin(yaw / 2.0), zero)


def quat_to_yaw(q: np.ndarray) -> np.ndarray:
    """Heading of the rotated +Z axis projected on the ground, atan2(x, z), in (-pi, pi]."""
    forward = quat_mul_vec(q, np.array([0.0, 0.0, 1.0]))
    return np.arctan2(forward[..., 0], forward[..., 2])
