"""The quaternion products and rotation vectors of the physics tick, with fewer numpy calls than
`pfnn_core.math.quat` (the tick works on a few dozen quaternions, where each call's overhead is most of
its cost) and the same numbers bit for bit: every product is the same product and every sum is added
in the same order (a - b is a + (-b) exactly in floating point)."""
from __future__ import annotations

import numpy as np

from pfnn_core.math.quat import quat_abs, vector_length

# Hamilton product component i = sum over k of SIGN[k, i] * a[_A[k, i]] * b[_B[k, i]], the terms k in
# `quat_mul`'s order (a sign on a's factor gives the same product: (-x) y = -(x y) exactly)
_A = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]])
_B = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_SIGN = np.array([[1, 1, 1, 1], [-1, 1, -1, 1], [-1, 1, 1, -1], [-1, -1, 1, 1]], dtype=float)
_INVERSE_SIGN = np.array([1.0, -1.0, -1.0, -1.0])[_A] * _SIGN


def signed_terms(a) -> np.ndarray:
    """[..., 4 terms, 4 components]: a's signed factor of each term of a product a b (a constant left
    factor can keep this and multiply with `quat_mul_terms`)."""
    return np.asarray(a)[..., _A] * _SIGN


def inverse_terms(a) -> np.ndarray:
    """`signed_terms(quat_inv(a))` in one multiplication: the conjugate's signs folded into the terms'
    (a product with +-1 is exact, whichever way it is grouped)."""
    return np.asarray(a)[..., _A] * _INVERSE_SIGN


def quat_mul_terms(terms, b) -> np.ndarray:
    """The product a b from `signed_terms(a)`: each component's four terms summed in order (a reduction
    over the second-last axis adds its rows one after another, never pairwise)."""
    return np.add.reduce(terms * np.asarray(b)[..., _B], axis=-2)


def quat_mul(a, b) -> np.ndarray:
    """`pfnn_core.math.quat.quat_mul` (a and b broadcast) in five numpy calls instead of some thirty."""
    return quat_mul_terms(signed_terms(a), b)


def quat_to_expmap(q, eps: float = 1e-8) -> np.ndarray:
    """`pfnn_core.math.quat.quat_to_expmap` (rotation vectors [..., 3], angle in [0, pi]), its norm
    taken as `vector_length` (np.linalg.norm's own sum of squares, without its dispatch)."""
    q = quat_abs(q)
    sin_half = vector_length(q[..., 1:], keepdims=True)
    w = q[..., :1]
    angle = 2.0 * np.arctan2(sin_half, w)
    scale = np.where(sin_half > eps, angle / np.maximum(sin_half, eps), 2.0 / np.maximum(w, eps))
    return q[..., 1:] * scale
