"""The sun's shadow map: the light's view that holds every caster (sized and snapped so a moving
character's shadow does not shimmer), world -> shadow map coordinates, and the ground quads under each
character that its shadow can fall in (only those pixels pay for the shadow lookups)."""

import numpy as np


def light_basis(direction) -> np.ndarray:
    """[3, 3] rows: right, up and back (toward the sun) axes of the light's view."""
    back = np.asarray(direction, np.float64) / np.linalg.norm(direction)
    helper = np.array([0.0, 1.0, 0.0]) if abs(back[1]) < 0.99 else np.array([1.0, 0.0, 0.0])
    right = np.cross(helper, back)
    right /= np.linalg.norm(right)
    return np.stack([right, np.cross(back, right), back])


SHADOW_TEXEL_M = 0.006  # wanted world size of a shadow map texel
SHADOW_MAP_SIZES = (512, 1024)  # a 2048 map costs a software rasteriser ~4 ms more per crowd frame


def shadow_view_projection(direction, centres, radii, map_size: int | None = None) -> tuple[np.ndarray, int]:
    """(world -> light clip matrix [4, 4], map size) of an orthographic sun view that holds every
    sphere; the map size is the smallest of `SHADOW_MAP_SIZES` with texels of `SHADOW_TEXEL_M` unless
    given. The box size moves in steps of 2^(1/4) and its centre in whole texels, so that a moving
    character's shadow does not shimmer."""
    basis = light_basis(direction)
    local = np.asarray(centres, np.float64) @ basis.T
    radii = np.asarray(radii, np.float64)[:, None]
    low, high = (local - radii).min(axis=0), (local + radii).max(axis=0)
    extent = max(high[0] - low[0], high[1] - low[1], 0.5)
    extent = 2.0 ** (np.ceil(4.0 * np.log2(extent)) / 4.0)
    size = map_size or next((s for s in SHADOW_MAP_SIZES if extent / s <= SHADOW_TEXEL_M), SHADOW_MAP_SIZES[-1])
    texel = extent / size
    centre = np.round(0.5 * (low[:2] + high[:2]) / texel) * texel
    near, far = high[2] + 0.1, low[2] - 0.1  # distances along the light's back axis
    matrix = np.eye(4)
    matrix[:3, :3] = basis
    ortho = np.diag([2.0 / extent, 2.0 / extent, 2.0 / (near - far), 1.0])
    ortho[0, 3], ortho[1, 3] = -2.0 * centre[0] / extent, -2.0 * centre[1] / extent
    ortho[2, 3] = -(near + far) / (near - far)
    ortho[2] *= -1.0  # depth -1 nearest the sun
    return ortho @ matrix, size


def shadow_texture_matrix(light_clip: np.ndarray) -> np.ndarray:
    """World -> shadow map coordinates (x, y, depth in 0..1)."""
    bias = np.diag([0.5, 0.5, 0.5, 1.0])
    bias[:3, 3] = 0.5
    return bias @ light_clip


FOOTPRINT_MARGIN = 0.18  # metres around the joints' shadows: the body's half-thickness and the filter


def shadow_footprints(poses: np.ndarray, direction, margin: float = FOOTPRINT_MARGIN) -> np.ndarray:
    """[B, 6] ground quads (centre x, z, half-axis u x, z, half-axis v x, z) that hold each character's
    shadow: the box, aligned with the sun's direction on the ground, around its joints projected along
    the sun onto the ground (which also covers its feet), widened by `margin`."""
    light = np.asarray(direction, np.float64) / np.linalg.norm(direction)
    poses = np.asarray(poses, np.float64)
    horizontal = np.linalg.norm(light[[0, 2]])
    along = light[[0, 2]] / horizontal if horizontal > 1e-6 else np.array([1.0, 0.0])
    across = np.array([-along[1], along[0]])
    ground = poses[..., [0, 2]] - light[[0, 2]] * (np.maximum(poses[..., 1:2], 0.0) / light[1])
    u, v = ground @ along, ground @ across
    u_low, u_high = u.min(axis=-1) - margin, u.max(axis=-1) + margin
    v_low, v_high = v.min(axis=-1) - margin, v.max(axis=-1) + margin
    centre = 0.5 * (u_low + u_high)[:, None] * along + 0.5 * (v_low + v_high)[:, None] * across
    half_u = 0.5 * (u_high - u_low)[:, None] * along
    half_v = 0.5 * (v_high - v_low)[:, None] * across
    return np.concatenate([centre, half_u, half_v], axis=-1).astype(np.float32)

