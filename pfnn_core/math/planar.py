"""Yaw rotations of (x, z) pairs [..., 2] (yaw about +Y; yaw 0 faces +Z, positive yaw turns +Z toward +X)."""

from __future__ import annotations

import numpy as np


def rotate_xz(yaw, vectors):
    """Rotate (x, z) pairs [..., 2] by yaw [...]: local root frame -> world."""
    c, s = np.cos(yaw), np.sin(yaw)
    x, z = vectors[..., 0], vectors[..., 1]
    return np.stack([c * x + s * z, -s * x + c * z], axis=-1)


def inverse_rotate_xz(yaw, vectors):
    """Rotate (x, z) pairs [..., 2] by -yaw: world -> local root frame."""
    c, s = np.cos(yaw), np.sin(yaw)
    x, z = vectors[..., 0], vectors[..., 1]
    return np.stack([c * x - s * z, s * x + c * z], axis=-1)
