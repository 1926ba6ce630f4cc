"""3-vector and 3x3 rotation-matrix math for the compiled (numba) kernels of the runtime tick.

Values are tuples of floats so a kernel keeps them in registers instead of allocating small arrays:
a vector is (x, y, z), a matrix is 9 floats in row-major order (m00, m01, m02, m10, ...). The
conventions are `quat.py`'s: right-handed, Y up, a rotation matrix acts on column vectors, and a
child's global rotation is parent_global @ child_local.

`njit` compiles with an on-disk cache (`cache=True`), so a process after the first pays only a
load of the compiled code, not a compilation; `kernel_cache` keys that cache by the source of every
module holding kernels (numba alone would not see an edit to a helper a kernel inlines).
"""
from __future__ import annotations

import math

import numba

from pfnn_core.math import kernel_cache, quat

njit = numba.njit(cache=kernel_cache.configure(numba), nogil=True, error_model="numpy")
wrap_angle = njit(quat.wrap_angle)  # quat.py's rule, compiled for the kernels


@njit
def load3(array, index):
    return (array[index, 0], array[index, 1], array[index, 2])


@njit
def store3(array, index, v):
    array[index, 0] = v[0]
    array[index, 1] = v[1]
    array[index, 2] = v[2]


@njit
def load33(array, index):
    m = array[index]
    return (m[0, 0], m[0, 1], m[0, 2], m[1, 0], m[1, 1], m[1, 2], m[2, 0], m[2, 1], m[2, 2])


@njit
def store33(array, index, m):
    out = array[index]
    out[0, 0], out[0, 1], out[0, 2] = m[0], m[1], m[2]
    out[1, 0], out[1, 1], out[1, 2] = m[3], m[4], m[5]
    out[2, 0], out[2, 1], out[2, 2] = m[6], m[7], m[8]


@njit
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit
def scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit
def lerp(a, b, t):
    return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]))


@njit
def smoothstep(t):
    """3 t^2 - 2 t^3 of t clipped to [0, 1] (a scalar; `features.smoothstep` is the array form)."""
    t = min(max(t, 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@njit
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit
def length(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit
def normalize(a):
    n = max(length(a), 1e-12)
    return (a[0] / n, a[1] / n, a[2] / n)


@njit
def mat_vec(m, v):
    return (m[0] * v[0] + m[1] * v[1] + m[2] * v[2],
            m[3] * v[0] + m[4] * v[1] + m[5] * v[2],
            m[6] * v[0] + m[7] * v[1] + m[8] * v[2])


@njit
def mat_t_vec(m, v):
    """transpose(m) @ v: the inverse rotation."""
    return (m[0] * v[0] + m[3] * v[1] + m[6] * v[2],
            m[1] * v[0] + m[4] * v[1] + m[7] * v[2],
            m[2] * v[0] + m[5] * v[1] + m[8] * v[2])


@njit
def mat_mul(a, b):
    return (a[0] * b[0] + a[1] * b[3] + a[2] * b[6], a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
            a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
            a[3] * b[0] + a[4] * b[3] + a[5] * b[6], a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
            a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
            a[6] * b[0] + a[7] * b[3] + a[8] * b[6], a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
            a[6] * b[2] + a[7] * b[5] + a[8] * b[8])


@njit
def axis_angle(axis, angle):
    """Rotation by `angle` (rad) about the unit `axis` (Rodrigues)."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    return (c + t * x * x, t * x * y - s * z, t * x * z + s * y,
            t * x * y + s * z, c + t * y * y, t * y * z - s * x,
            t * x * z - s * y, t * y * z + s * x, c + t * z * z)


@njit
def partial_rotation(m, share):
    """The rotation `m` (3x3) turned by `share` of its angle about its own axis, the short way round
    (a quaternion with a negative scalar part stands for the same rotation as its negation)."""
    w, x, y, z = quat_from_matrix(m)
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    angle = 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), w)
    return axis_angle(normalize((x, y, z)), share * angle)


@njit
def between(u, v):
    """The shortest rotation taking the direction of `u` to the direction of `v` (as
    `quat.quat_between`, including its choice of axis for opposite vectors)."""
    uv_length = math.sqrt(dot(u, u) * dot(v, v))
    w = uv_length + dot(u, v)
    axis = cross(u, v)
    if w <= 1e-9 * max(uv_length, 1e-300):
        helper = (1.0, 0.0, 0.0) if abs(u[0]) < 0.9 * length(u) else (0.0, 1.0, 0.0)
        axis = cross(u, helper)
        w = 0.0
    n = max(math.sqrt(w * w + dot(axis, axis)), 1e-12)
    return matrix_from_quat(w / n, axis[0] / n, axis[1] / n, axis[2] / n)


@njit
def matrix_from_quat(w, x, y, z):
    xx, yy, zz, xy, xz, yz, wx, wy, wz = x * x, y * y, z * z, x * y, x * z, y * z, w * x, w * y, w * z
    return (1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy),
            2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx),
            2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy))


@njit
def quat_from_matrix(m):
    """(w, x, y, z) of a rotation matrix, Shepperd's method as `quat.quat_from_matrix` (same branch
    choice, normalised)."""
    trace = m[0] + m[4] + m[8]
    x_diff, y_diff, z_diff = m[7] - m[5], m[2] - m[6], m[3] - m[1]
    xy_sum, xz_sum, yz_sum = m[1] + m[3], m[2] + m[6], m[5] + m[7]
    best, largest = 0, trace
    if m[0] > largest:
        best, largest = 1, m[0]
    if m[4] > largest:
        best, largest = 2, m[4]
    if m[8] > largest:
        best = 3
    if best == 0:
        q = (1.0 + trace, x_diff, y_diff, z_diff)
    elif best == 1:
        q = (x_diff, 1.0 + m[0] - m[4] - m[8], xy_sum, xz_sum)
    elif best == 2:
        q = (y_diff, xy_sum, 1.0 - m[0] + m[4] - m[8], yz_sum)
    else:
        q = (z_diff, xz_sum, yz_sum, 1.0 - m[0] - m[4] + m[8])
    n = max(math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), 1e-12)
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


@njit
def from_6d(r6, index):
    """Rotation matrix from the 6D form r6[index] (first two columns, Gram-Schmidt)."""
    c0 = normalize((r6[index, 0], r6[index, 1], r6[index, 2]))
    a1 = (r6[index, 3], r6[index, 4], r6[index, 5])
    c1 = normalize(sub(a1, scale(c0, dot(c0, a1))))
    c2 = cross(c0, c1)
    return (c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2])


@njit
def yaw_matrix(yaw):
    """Rotation about +Y (yaw 0 faces +Z; positive turns +Z toward +X)."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c, 0.0, s, 0.0, 1.0, 0.0, -s, 0.0, c)


@njit
def nearest_rotation(goal, rest, count, fallback, scratch):
    """The rotation R maximising sum_k goal_k . (R rest_k) over `count` vector pairs (Kabsch's
    problem, the same answer as an SVD of M = sum_k goal_k rest_k^T): the eigenvectors V of M^T M
    by Jacobi rotations, then U from M V, made right-handed, and R = U V^T. `fallback` is returned
    when the bones do not fix a rotation (fewer than two independent directions). `scratch` [3, 3, 3]."""
    m, a, v = scratch[0], scratch[1], scratch[2]
    for i in range(3):
        for j in range(3):
            total = 0.0
            for k in range(count):
                total += goal[k, i] * rest[k, j]
            m[i, j] = total
    for i in range(3):
        for j in range(3):
            a[i, j] = m[0, i] * m[0, j] + m[1, i] * m[1, j] + m[2, i] * m[2, j]
    _symmetric_eigen(a, v)
    first, second = 0, 1  # the two largest eigenvalues
    if a[1, 1] > a[0, 0]:
        first, second = 1, 0
    if a[2, 2] > a[first, first]:
        first, second = 2, first
    elif a[2, 2] > a[second, second]:
        second = 2
    w0 = (v[0, first], v[1, first], v[2, first])
    w1 = (v[0, second], v[1, second], v[2, second])
    largest = math.sqrt(max(a[first, first], 0.0))
    b0 = (m[0, 0] * w0[0] + m[0, 1] * w0[1] + m[0, 2] * w0[2], m[1, 0] * w0[0] + m[1, 1] * w0[1] + m[1, 2] * w0[2],
          m[2, 0] * w0[0] + m[2, 1] * w0[1] + m[2, 2] * w0[2])
    b1 = (m[0, 0] * w1[0] + m[0, 1] * w1[1] + m[0, 2] * w1[2], m[1, 0] * w1[0] + m[1, 1] * w1[1] + m[1, 2] * w1[2],
          m[2, 0] * w1[0] + m[2, 1] * w1[1] + m[2, 2] * w1[2])
    if largest == 0.0 or length(b0) <= 1e-12 * largest:
        return fallback
    u0 = normalize(b0)
    u1_raw = sub(b1, scale(u0, dot(u0, b1)))
    if length(u1_raw) <= 1e-9 * largest:
        return fallback
    u1 = normalize(u1_raw)
    u2 = cross(u0, u1)
    w2 = cross(w0, w1)
    # R = [u0 u1 u2] [w0 w1 w2]^T
    return (u0[0] * w0[0] + u1[0] * w1[0] + u2[0] * w2[0], u0[0] * w0[1] + u1[0] * w1[1] + u2[0] * w2[1],
            u0[0] * w0[2] + u1[0] * w1[2] + u2[0] * w2[2],
            u0[1] * w0[0] + u1[1] * w1[0] + u2[1] * w2[0], u0[1] * w0[1] + u1[1] * w1[1] + u2[1] * w2[1],
            u0[1] * w0[2] + u1[1] * w1[2] + u2[1] * w2[2],
            u0[2] * w0[0] + u1[2] * w1[0] + u2[2] * w2[0], u0[2] * w0[1] + u1[2] * w1[1] + u2[2] * w2[1],
            u0[2] * w0[2] + u1[2] * w1[2] + u2[2] * w2[2])


@njit
def _symmetric_eigen(a, v):
    """Diagonalise the symmetric 3x3 matrix `a` in place by cyclic Jacobi rotations (quadratic
    convergence, a few sweeps): afterwards its diagonal holds the eigenvalues and the columns of
    `v` the eigenvectors."""
    for i in range(3):
        for j in range(3):
            v[i, j] = 1.0 if i == j else 0.0
    for _ in range(32):
        off = a[0, 1] * a[0, 1] + a[0, 2] * a[0, 2] + a[1, 2] * a[1, 2]
        diagonal = a[0, 0] * a[0, 0] + a[1, 1] * a[1, 1] + a[2, 2] * a[2, 2]
        if off <= 1e-32 * diagonal or off == 0.0:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            apq = a[p, q]
            if apq == 0.0:
                continue
            theta = (a[q, q] - a[p, p]) / (2.0 * apq)
            t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
            if theta < 0.0:
                t = -t
            c = 1.0 / math.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):
                akp, akq = a[k, p], a[k, q]
                a[k, p], a[k, q] = c * akp - s * akq, s * akp + c * akq
            for k in range(3):
                apk, aqk = a[p, k], a[q, k]
                a[p, k], a[q, k] = c * apk - s * aqk, s * apk + c * aqk
            for k in range(3):
                vkp, vkq = v[k, p], v[k, q]
                v[k, p], v[k, q] = c * vkp - s * vkq, s * vkp + c * vkq
