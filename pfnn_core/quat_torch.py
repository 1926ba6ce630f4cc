"""Quaternion and rotation math over torch tensors: the same names and conventions as ``quat.py``.

Everything is differentiable and batched over leading dimensions; see ``quat.py`` for the conventions
(w, x, y, z order, intrinsic BVH Euler orders, exponential map angle in [0, pi], 6D = first two matrix
columns, yaw about +Y turning +Z toward +X).
"""
from __future__ import annotations

import math

import torch

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def quat_identity(shape=(), dtype=torch.float32, device=None) -> torch.Tensor:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    q = torch.zeros(shape + (4,), dtype=dtype, device=device)
    q[..., 0] = 1.0
    return q


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], dim=-1)


def quat_inv(q: torch.Tensor) -> torch.Tensor:
    return q * q.new_tensor([1.0, -1.0, -1.0, -1.0])


def _cross(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ax, ay, az = a.unbind(-1)
    bx, by, bz = b.unbind(-1)
    return torch.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], dim=-1)


def quat_mul_vec(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    qv = q[..., 1:]
    t = 2.0 * _cross(qv.expand(torch.broadcast_shapes(qv.shape, v.shape)), v)
    return v + q[..., :1] * t + _cross(qv.expand(t.shape), t)


def quat_inv_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return quat_mul(quat_inv(a), b)


def quat_inv_mul_vec(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return quat_mul_vec(quat_inv(q), v)


def quat_normalize(q: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    return q / q.norm(dim=-1, keepdim=True).clamp_min(eps)


def quat_abs(q: torch.Tensor) -> torch.Tensor:
    return torch.where(q[..., :1] < 0.0, -q, q)


def quat_unroll(q: torch.Tensor) -> torch.Tensor:
    """Flip signs along dim 0 so that consecutive quaternions lie in the same hemisphere."""
    if q.shape[0] < 2:
        return q.clone()
    dots = (q[1:] * q[:-1]).sum(-1)
    flips = torch.where(dots < 0.0, -torch.ones_like(dots), torch.ones_like(dots))
    signs = torch.cat([torch.ones_like(flips[:1]), torch.cumprod(flips, dim=0)], dim=0)
    return q * signs[..., None]


def quat_from_angle_axis(angle: torch.Tensor, axis: torch.Tensor) -> torch.Tensor:
    axis = axis / axis.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    half = angle[..., None] / 2.0
    return torch.cat([torch.cos(half), torch.sin(half) * axis], dim=-1)


def _parse_order(order: str) -> list[int]:
    order = order.upper()
    if len(order) != 3 or any(c not in _AXIS_INDEX for c in order) or order[0] == order[1] or order[1] == order[2]:
        raise ValueError(f"Euler order must be 3 letters from XYZ without consecutive repeats, got {order!r}")
    return [_AXIS_INDEX[c] for c in order]


def _axis_quat(axis_index: int, angle: torch.Tensor) -> torch.Tensor:
    zero = torch.zeros_like(angle)
    parts = [torch.cos(angle / 2.0), zero, zero, zero]
    parts[1 + axis_index] = torch.sin(angle / 2.0)
    return torch.stack(parts, dim=-1)


def quat_from_euler(angles: torch.Tensor, order: str) -> torch.Tensor:
    axes = _parse_order(order)
    q = _axis_quat(axes[0], angles[..., 0])
    for k in (1, 2):
        q = quat_mul(q, _axis_quat(axes[k], angles[..., k]))
    return q


def quat_to_euler(q: torch.Tensor, order: str) -> torch.Tensor:
    """Same method and gimbal-lock choice as ``quat.quat_to_euler``."""
    i, j, k = _parse_order(order)[::-1]
    w, v = q[..., 0], [q[..., 1], q[..., 2], q[..., 3]]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = float((i - j) * (j - k) * (k - i) // 2)
    if symmetric:
        a, b, c, d = w, v[i], v[j], v[k] * sign
    else:
        a, b, c, d = w - v[j], v[i] + v[k] * sign, v[j] + w, v[k] * sign - v[i]
    middle = 2.0 * torch.atan2(torch.hypot(c, d), torch.hypot(a, b))
    half_sum = torch.atan2(b, a)
    half_diff = torch.atan2(d, c)
    eps = 1e-7
    near_zero = middle.abs() <= eps
    near_pi = (middle - math.pi).abs() <= eps
    regular = ~(near_zero | near_pi)
    first = torch.where(regular, half_sum - half_diff, torch.where(near_zero, 2.0 * half_sum, -2.0 * half_diff))
    third = torch.where(regular, half_sum + half_diff, torch.zeros_like(half_sum))
    if not symmetric:
        third = third * sign
        middle = middle - math.pi / 2.0
    extrinsic = torch.stack([third, middle, first], dim=-1)
    return torch.remainder(extrinsic + math.pi, 2.0 * math.pi) - math.pi


def quat_to_expmap(q: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    q = quat_abs(q)
    sin_half = q[..., 1:].norm(dim=-1, keepdim=True)
    angle = 2.0 * torch.atan2(sin_half, q[..., :1])
    scale = torch.where(sin_half > eps, angle / sin_half.clamp_min(eps), 2.0 / q[..., :1].clamp_min(eps))
    return q[..., 1:] * scale


def quat_from_expmap(rotvec: torch.Tensor) -> torch.Tensor:
    angle = rotvec.norm(dim=-1, keepdim=True)
    sin_half_over_angle = 0.5 * torch.sinc(angle / (2.0 * math.pi))
    return torch.cat([torch.cos(angle / 2.0), rotvec * sin_half_over_angle], dim=-1)


def quat_slerp(a: torch.Tensor, b: torch.Tensor, t) -> torch.Tensor:
    t = torch.as_tensor(t, dtype=a.dtype, device=a.device)[..., None]
    dot = (a * b).sum(-1, keepdim=True)
    b = torch.where(dot < 0.0, -b, b)
    dot = dot.abs()
    close = dot > 0.9995
    theta = torch.acos(dot.clamp(-1.0, 1.0))
    sin_theta = torch.where(close, torch.ones_like(theta), torch.sin(theta))
    wa = torch.where(close, 1.0 - t, torch.sin((1.0 - t) * theta) / sin_theta)
    wb = torch.where(close, t, torch.sin(t * theta) / sin_theta)
    return quat_normalize(wa * a + wb * b)


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    w, x, y, z = q.unbind(-1)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = [
        [1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)],
        [2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)],
        [2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)],
    ]
    return torch.stack([torch.stack(r, dim=-1) for r in rows], dim=-2)


def quat_from_matrix(m: torch.Tensor) -> torch.Tensor:
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    candidates = torch.stack([
        torch.stack([1 + trace, m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1),
        torch.stack([m[..., 2, 1] - m[..., 1, 2], 1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0]], -1),
        torch.stack([m[..., 0, 2] - m[..., 2, 0], m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1]], -1),
        torch.stack([m[..., 1, 0] - m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22], -1),
    ], dim=-2)
    best = torch.stack([trace, m00, m11, m22], dim=-1).argmax(dim=-1)
    q = torch.gather(candidates, -2, best[..., None, None].expand(best.shape + (1, 4)))[..., 0, :]
    return quat_normalize(q)


def quat_to_6d(q: torch.Tensor) -> torch.Tensor:
    m = quat_to_matrix(q)
    return torch.cat([m[..., :, 0], m[..., :, 1]], dim=-1)


def quat_from_6d(r6: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    c0 = r6[..., :3] / r6[..., :3].norm(dim=-1, keepdim=True).clamp_min(eps)
    c1 = r6[..., 3:] - (c0 * r6[..., 3:]).sum(-1, keepdim=True) * c0
    c1 = c1 / c1.norm(dim=-1, keepdim=True).clamp_min(eps)
    c2 = _cross(c0, c1)
    return quat_from_matrix(torch.stack([c0, c1, c2], dim=-1))


def quat_between(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    norms = u.norm(dim=-1) * v.norm(dim=-1)
    w = norms + (u * v).sum(-1)
    axis = _cross(u, v)
    opposite = w <= 1e-9 * norms.clamp_min(1e-30)
    helper = torch.where(u[..., :1].abs() < 0.9 * u.norm(dim=-1, keepdim=True),
                         u.new_tensor([1.0, 0.0, 0.0]), u.new_tensor([0.0, 1.0, 0.0]))
    axis = torch.where(opposite[..., None], _cross(u, helper), axis)
    w = torch.where(opposite, torch.zeros_like(w), w)
    return quat_normalize(torch.cat([w[..., None], axis], dim=-1))


def quat_from_yaw(yaw: torch.Tensor) -> torch.Tensor:
    zero = torch.zeros_like(yaw)
    return torch.stack([torch.cos(yaw / 2.0), zero, torch.sin(yaw / 2.0), zero], dim=-1)


def quat_to_yaw(q: torch.Tensor) -> torch.Tensor:
    forward = quat_mul_vec(q, q.new_tensor([0.0, 0.0, 1.0]))
    return torch.atan2(forward[..., 0], forward[..., 2])
