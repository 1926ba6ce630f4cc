"""The body's implicit surface: the signed distance of the round cones (a plain minimum within a blend
group, a smooth one between groups), meshed with marching cubes, vertices moved onto the surface after
decimation, normals from the field's gradient, and the outfit's material scores on the surface."""

from __future__ import annotations

import numpy as np

from app.render.body.primitives import SHIRT, SHOES, SKIN, TROUSERS, Primitives


def round_cone_distance(points: np.ndarray, a, b, ra, rb, stretch=1.0) -> np.ndarray:
    """Signed distance [N] from points [N, 3] to a round cone (spheres of radius ra at a and rb at b and
    the cone tangent to both), with its cross-section stretched `stretch` times along X (a distance
    bound, exact when stretch is 1)."""
    points = np.asarray(points, np.float64)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if stretch != 1.0:
        points = points.copy()
        axis_x = a[0]
        points[:, 0] = axis_x + (points[:, 0] - axis_x) / stretch
        b = b.copy()
        b[0] = axis_x + (b[0] - axis_x) / stretch
    ba = b - a
    l2 = float(ba @ ba)
    rr = ra - rb
    a2 = l2 - rr * rr
    if l2 < 1e-12 or a2 <= 0.0:  # one sphere contains the other
        return np.minimum(np.linalg.norm(points - a, axis=-1) - ra, np.linalg.norm(points - b, axis=-1) - rb)
    il2 = 1.0 / l2
    pa = points - a
    y = pa @ ba
    z = y - l2
    x2 = np.sum((pa * l2 - y[:, None] * ba) ** 2, axis=-1)
    y2 = y * y * l2
    z2 = z * z * l2
    k = np.sign(rr) * rr * rr * x2
    far_end = np.sign(z) * a2 * z2 > k
    near_end = np.sign(y) * a2 * y2 < k
    side = (np.sqrt(np.maximum(x2 * a2 * il2, 0.0)) + y * rr) * il2 - ra
    return np.where(far_end, np.sqrt(x2 + z2) * il2 - rb, np.where(near_end, np.sqrt(x2 + y2) * il2 - ra, side))


def smooth_min(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth minimum: min(a, b) where they differ by more than k, a fillet of radius ~k
    where they meet."""
    h = np.maximum(k - np.abs(a - b), 0.0) / k
    return np.minimum(a, b) - h * h * k * 0.25


def primitive_distances(points: np.ndarray, prims: Primitives) -> np.ndarray:
    """[N, P] signed distance of every point to every round cone."""
    return np.stack([round_cone_distance(points, prims.a[p], prims.b[p], prims.ra[p], prims.rb[p], prims.stretch[p])
                     for p in range(len(prims.a))], axis=-1)


def body_field(points: np.ndarray, prims: Primitives, blend: float) -> np.ndarray:
    """The body's signed distance at points [N, 3]: plain minimum within a group, smooth between groups."""
    distances = primitive_distances(points, prims)
    field = None
    for group in np.unique(prims.group):
        group_distance = distances[:, prims.group == group].min(axis=-1)
        field = group_distance if field is None else smooth_min(field, group_distance, blend)
    return field


def _field_on_grid(prims: Primitives, origin, shape, voxel, blend, band) -> np.ndarray:
    """The field on a regular grid, evaluated per group only inside that group's box (elsewhere the
    group is farther than `band` and cannot move the surface); values are clamped at `band`."""
    field = np.full(shape, band, np.float64)
    for group in np.unique(prims.group):
        members = np.flatnonzero(prims.group == group)
        reach = np.maximum(prims.ra[members], prims.rb[members]) * np.maximum(prims.stretch[members], 1.0)
        low = np.minimum(prims.a[members], prims.b[members]) - reach[:, None] - band - blend
        high = np.maximum(prims.a[members], prims.b[members]) + reach[:, None] + band + blend
        lo = np.clip(np.floor((low.min(axis=0) - origin) / voxel).astype(int), 0, np.array(shape) - 1)
        hi = np.clip(np.ceil((high.max(axis=0) - origin) / voxel).astype(int) + 1, 1, np.array(shape))
        axes = [origin[d] + voxel * np.arange(lo[d], hi[d]) for d in range(3)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        group_distance = np.full(len(grid), np.inf)
        for p in members:
            group_distance = np.minimum(group_distance, round_cone_distance(
                grid, prims.a[p], prims.b[p], prims.ra[p], prims.rb[p], prims.stretch[p]))
        block = (slice(lo[0], hi[0]), slice(lo[1], hi[1]), slice(lo[2], hi[2]))
        field[block] = smooth_min(field[block], group_distance.reshape(field[block].shape), blend)
    return np.minimum(field, band)



def marching_cubes_surface(prims: Primitives, voxel: float, blend: float) -> tuple[np.ndarray, np.ndarray]:
    """(vertices [V, 3], triangles [T, 3]) of the field's zero level, outward-wound."""
    from skimage.measure import marching_cubes

    reach = np.maximum(prims.ra, prims.rb) * np.maximum(prims.stretch, 1.0)
    low = np.minimum(prims.a, prims.b).min(axis=0) - reach.max() - 3 * voxel - blend
    high = np.maximum(prims.a, prims.b).max(axis=0) + reach.max() + 3 * voxel + blend
    shape = tuple(int(v) for v in np.ceil((high - low) / voxel) + 1)
    field = _field_on_grid(prims, low, shape, voxel, blend, band=3 * voxel)
    vertices, triangles, _, _ = marching_cubes(field, level=0.0, spacing=(voxel,) * 3)
    vertices = vertices + low
    triangles = triangles.astype(np.int64)
    if _signed_volume(vertices, triangles) < 0:
        triangles = triangles[:, ::-1]
    return vertices, np.ascontiguousarray(triangles)


def _signed_volume(vertices, triangles) -> float:
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6.0)


def field_normals(points: np.ndarray, prims: Primitives, blend: float, step: float) -> np.ndarray:
    """Unit gradients of the field (outward normals) by central differences."""
    gradient = np.zeros_like(points)
    for axis in range(3):
        delta = np.zeros(3)
        delta[axis] = step
        gradient[:, axis] = body_field(points + delta, prims, blend) - body_field(points - delta, prims, blend)
    return gradient / np.maximum(np.linalg.norm(gradient, axis=-1, keepdims=True), 1e-12)


def project_to_surface(points: np.ndarray, prims: Primitives, blend: float, step: float,
                       iterations: int = 2) -> np.ndarray:
    """Points moved onto the field's zero level along its gradient (decimation leaves vertices a few
    millimetres off the surface, which shows as dents in the shading)."""
    for _ in range(iterations):
        points = points - body_field(points, prims, blend)[:, None] * field_normals(points, prims, blend, step)
    return points



def material_scores(points: np.ndarray, prims: Primitives, head: int, head_base: np.ndarray,
                    scale: float) -> np.ndarray:
    """[V, 4] scores of shirt, trousers, shoes and hair against skin: positive where that material's
    parts are nearer than the skin's (hair: above a hairline plane on the head). They vary smoothly over
    the surface, so the fragment shader's largest-score choice draws straight hems between vertices."""
    # a part's distance grows with how far the point lies beyond the ends of its cone's axis: where two
    # cones of a profile meet (a sleeve's hem, the waist) the scores then change sign linearly across
    # the plane of the joint instead of hovering near zero (which draws a saw-tooth hem)
    axis = prims.b - prims.a
    length = np.maximum(np.linalg.norm(axis, axis=-1), 1e-9)
    along = np.einsum("npk,pk->np", points[:, None, :] - prims.a[None], axis) / length ** 2
    distances = primitive_distances(points, prims) + np.maximum(np.maximum(-along, along - 1.0), 0.0) * length
    far = 1.0

    def nearest(mask):
        return distances[:, mask].min(axis=-1) if mask.any() else np.full(len(points), far)

    skin = nearest(prims.material == SKIN)
    scores = np.stack([np.clip(skin - nearest(prims.material == m), -far, far) for m in (SHIRT, TROUSERS, SHOES)], -1)
    on_head = nearest(prims.joint != head) - nearest(prims.joint == head)
    relative = points - head_base
    # the hairline: high over the forehead, down to the nape at the back, a little lower at the sides
    line = 0.095 + 0.058 * np.tanh(relative[:, 2] / (0.03 * scale)) - 0.012 * (relative[:, 0] / (0.07 * scale)) ** 2
    hairline = relative[:, 1] - scale * line
    hair = np.clip(np.minimum(hairline, on_head), -far, far)
    return np.concatenate([scores, hair[:, None]], axis=-1).astype(np.float32)


def decimate(vertices, triangles, count) -> tuple[np.ndarray, np.ndarray]:
    """Quadric edge-collapse decimation down to about `count` triangles (unchanged when already fewer)."""
    if len(triangles) <= count:
        return vertices, triangles
    import fast_simplification

    points, faces = fast_simplification.simplify(np.asarray(vertices, np.float64), np.asarray(triangles, np.int32),
                                                 target_count=int(count))
    used = np.unique(faces)
    remap = np.full(len(points), -1, np.int64)
    remap[used] = np.arange(len(used))
    return points[used], remap[faces]
