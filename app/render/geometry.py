"""Pure geometry of a frame: the unit capsule and ground grid meshes, where the horizon crosses the
screen, the screen outside the panel, and view culling with bounding spheres of the characters."""

import numpy as np

from app.render.scene import SceneFrame


def capsule_mesh(segments: int = 12, rings: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Unit capsule: vertices [V, 7] (position xyz, normal xyz, end flag) and triangle indices [T*3].
    A unit sphere split at the equator; the upper half carries end flag 1, so the band between the
    two equator rings becomes the cylinder when the ends are moved apart."""
    latitudes = [(-np.pi / 2 + np.pi / 2 * i / rings, 0.0) for i in range(rings + 1)]
    latitudes += [(np.pi / 2 * i / rings, 1.0) for i in range(rings + 1)]
    vertices = []
    for latitude, end in latitudes:
        for k in range(segments + 1):
            longitude = 2 * np.pi * k / segments
            normal = [np.cos(latitude) * np.cos(longitude), np.sin(latitude), np.cos(latitude) * np.sin(longitude)]
            vertices.append(normal + normal + [end])
    indices = []
    row = segments + 1
    for r in range(len(latitudes) - 1):
        for k in range(segments):
            a, b = r * row + k, (r + 1) * row + k
            indices += [a, b, a + 1, a + 1, b, b + 1]
    return np.array(vertices, np.float32), np.array(indices, np.int32)



def ground_grid(half_size: float, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """A square plane [-half_size, half_size]^2 split into cells x cells quads: vertices [V, 2] (x, z)
    and triangle indices, so per-vertex effects (distance fade) interpolate smoothly."""
    ticks = np.linspace(-half_size, half_size, cells + 1, dtype=np.float32)
    xs, zs = np.meshgrid(ticks, ticks)
    vertices = np.stack([xs.ravel(), zs.ravel()], axis=-1)
    row = cells + 1
    corner = (np.arange(cells)[:, None] * row + np.arange(cells)[None, :]).ravel()
    indices = np.stack([corner, corner + row, corner + 1, corner + 1, corner + row, corner + row + 1], axis=-1)
    return vertices, indices.astype(np.int32).ravel()


def horizon_ndc_y(proj: np.ndarray, view: np.ndarray) -> float:
    """Screen height (NDC y) of the horizon for a camera without roll: where the horizontal direction
    straight ahead projects. Above 1 the whole view is below the horizon."""
    forward = -view[2, :3].astype(np.float64)
    ahead = np.array([forward[0], 0.0, forward[2]])
    length = np.linalg.norm(ahead)
    if length < 1e-6:  # looking straight up or down
        return -1.0 if forward[1] > 0 else 2.0
    clip = np.asarray(proj, np.float64) @ np.append(np.asarray(view, np.float64)[:3, :3] @ (ahead / length), 0.0)
    return float(clip[1] / clip[3]) if clip[3] > 1e-9 else 2.0


def uncovered_rects(size: tuple[int, int], covered) -> list[tuple[int, int, int, int]]:
    """The framebuffer minus one covered rectangle (x, y, w, h in pixels, GL origin bottom-left), as up
    to four non-overlapping scissor rectangles: left and right full-height columns, then below and above
    the covered span. Without a cover (or an empty one) the whole framebuffer."""
    width, height = size
    if covered is None:
        return [(0, 0, width, height)]
    x0, y0 = max(int(covered[0]), 0), max(int(covered[1]), 0)
    x1, y1 = min(int(covered[0] + covered[2]), width), min(int(covered[1] + covered[3]), height)
    if x1 <= x0 or y1 <= y0:
        return [(0, 0, width, height)]
    rects = [(0, 0, x0, height), (x1, 0, width - x1, height), (x0, 0, x1 - x0, y0), (x0, y1, x1 - x0, height - y1)]
    return [rect for rect in rects if rect[2] > 0 and rect[3] > 0]


def spheres_in_view(centres: np.ndarray, radii: np.ndarray, view_proj: np.ndarray) -> np.ndarray:
    """[B] bool: which spheres (centres [B, 3], radii [B], world) touch the view frustum of the clip
    matrix `view_proj` (its six planes taken from the matrix rows)."""
    m = np.asarray(view_proj, np.float64)
    planes = np.stack([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] + m[2], m[3] - m[2]])
    planes /= np.linalg.norm(planes[:, :3], axis=1, keepdims=True)
    distance = np.asarray(centres, np.float64) @ planes[:, :3].T + planes[:, 3]
    return np.all(distance > -np.asarray(radii, np.float64)[..., None], axis=-1)


CHARACTER_MARGIN = 0.6  # metres around the joints' box for view culling: capsules, hands, feet, shadows
BODY_MARGIN = 0.25  # metres around the joints' box that the body surface can reach (shadow casters)


def character_bounds(frames: list[SceneFrame], margin: float = CHARACTER_MARGIN) -> tuple[np.ndarray, np.ndarray]:
    """Bounding spheres (centres [B, 3], radii [B]) of the characters, reaching down to the ground."""
    if len({np.shape(frame.joint_pos) for frame in frames}) == 1:
        poses = np.stack([frame.joint_pos for frame in frames])
        low, high = poses.min(axis=1), poses.max(axis=1)
    else:
        low = np.array([np.min(frame.joint_pos, axis=0) for frame in frames])
        high = np.array([np.max(frame.joint_pos, axis=0) for frame in frames])
    low[:, 1] = np.minimum(low[:, 1], 0.0)  # the shadows lie on the ground
    return 0.5 * (low + high), 0.5 * np.linalg.norm(high - low, axis=-1) + margin
