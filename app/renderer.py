"""moderngl rendering: sky, ground, the characters in one of three views (skinned body meshes, capsules,
thin skeletons), the sun's shadow map, and overlay lines/points. Programs are loaded from
`shaders/*.glsl` (one file per program, split with `#if defined VERTEX_SHADER` / `FRAGMENT_SHADER`,
`#include "file"` for shared code, extra `#define`s for variants such as `SHADOW_PASS`); uniforms
`m_proj`, `m_view`, `m_model`.

A frame: cull the characters, upload their pose data once (joint matrices into a texture for the
meshes, capsule instances for the other views), draw the casters into the shadow map from the sun,
then the sky and ground, the ground again inside each character's shadow footprint (only those pixels
pay for the shadow lookups), the characters and the overlays. Each mesh kind is one instanced draw call
for all the characters that use it.

The renderer only reads `SceneFrame`s and `OverlayGeometry`; it owns GPU objects, nothing else.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path

import moderngl
import numpy as np

from app.body_mesh import (
    BodyModel,
    Rig,
    load_or_build_body,
    rig_from_positions,
    rotation_plan,
    rotations_from_positions,
    skinning_matrices,
)
from app.camera import OrbitCamera, gl_bytes
from app.overlays import OverlayGeometry
from app.scene import SceneFrame, drawn_bones, drawn_joints
from pfnn_core.skeleton import joint_side

SHADER_DIR = Path(__file__).resolve().parent.parent / "shaders"
VIEW_MODES = ("mesh", "capsules", "skeleton")


@dataclass(frozen=True)
class Palette:
    """Colours of the scene (sRGB 0..1) and the sun."""
    horizon: tuple = (0.80, 0.83, 0.87)
    zenith: tuple = (0.42, 0.55, 0.72)
    ground_a: tuple = (0.70, 0.72, 0.75)
    ground_b: tuple = (0.62, 0.64, 0.68)
    left: tuple = (0.33, 0.63, 0.88)
    right: tuple = (0.94, 0.50, 0.40)
    centre: tuple = (0.90, 0.89, 0.86)
    joint_shade: float = 0.62
    light_sky: tuple = (0.42, 0.48, 0.60)  # linear ambient from above
    light_ground: tuple = (0.22, 0.20, 0.18)  # linear ambient from below
    sun: tuple = (1.25, 1.18, 1.06)  # linear
    sun_direction: tuple = (0.60, 0.75, 0.22)  # toward the sun (normalised where used)
    shadow_ground: tuple = (0.56, 0.60, 0.70)  # the ground's colour is multiplied by this in full shadow
    skin: tuple = (0.87, 0.69, 0.57)
    shirts: tuple = ((0.30, 0.52, 0.78), (0.80, 0.36, 0.30), (0.36, 0.62, 0.40), (0.86, 0.70, 0.32),
                     (0.55, 0.42, 0.70), (0.85, 0.85, 0.82), (0.30, 0.60, 0.65), (0.70, 0.45, 0.55))
    trousers: tuple = (0.25, 0.27, 0.33)
    shoes: tuple = (0.16, 0.15, 0.15)
    hair: tuple = (0.30, 0.21, 0.15)


def load_program(ctx: moderngl.Context, path: Path, defines=()) -> moderngl.Program:
    """Compile a single-file GLSL program (the `#version` line stays first); `#include "name"` lines
    are replaced by that file from the same folder, `defines` are added as `#define NAME`."""
    path = Path(path)
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("#include"):
            lines += (path.parent / line.split('"')[1]).read_text().splitlines()
        else:
            lines.append(line)
    version, body = lines[0], "\n".join(lines[1:])
    extra = "".join(f"#define {name}\n" for name in defines)

    def stage(define):
        return f"{version}\n#define {define}\n{extra}{body}"

    return ctx.program(vertex_shader=stage("VERTEX_SHADER"), fragment_shader=stage("FRAGMENT_SHADER"))


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


def is_software_renderer(ctx: moderngl.Context) -> bool:
    renderer = ctx.info.get("GL_RENDERER", "").lower()
    return any(name in renderer for name in ("llvmpipe", "softpipe", "swrast", "software"))


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


# ---------------------------------------------------------------------------------------------
# The sun's shadow map


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


# ---------------------------------------------------------------------------------------------
# Capsule and skeleton views


BONE_RADII = (  # keyword in the PARENT joint's name -> capsule radius in metres (first match wins)
    ("upperleg", 0.058), ("upleg", 0.058), ("thigh", 0.058), ("lowerleg", 0.045), ("leg", 0.045),
    ("toe", 0.024), ("foot", 0.034), ("ankle", 0.034), ("hips", 0.07), ("pelvis", 0.07),
    ("spine", 0.085), ("chest", 0.075), ("neck", 0.042), ("head", 0.05), ("shoulder", 0.04),
    ("clavicle", 0.04), ("upperarm", 0.042), ("lowerarm", 0.034), ("forearm", 0.034), ("hand", 0.026),
    ("arm", 0.04),
)
STICK_RADIUS, STICK_JOINT_RADIUS, STICK_HEAD_RADIUS = 0.011, 0.022, 0.075  # the skeleton view


def bone_radius(parent_name: str) -> float:
    lowered = parent_name.lower()
    return next((radius for keyword, radius in BONE_RADII if keyword in lowered), 0.035)


@dataclass
class SkeletonStyle:
    """Per-skeleton instance attributes that do not change from frame to frame."""
    bones: np.ndarray  # [K, 2] (child, parent)
    bone_radius: np.ndarray  # [K]
    bone_colour: np.ndarray  # [K, 3]
    joints: np.ndarray  # [M] joint indices drawn as spheres
    joint_radius: np.ndarray  # [M]
    joint_colour: np.ndarray  # [M, 3]


def skeleton_style(parents: np.ndarray, names, palette: Palette, sticks: bool = False) -> SkeletonStyle:
    """Capsules sized by bone (the capsule view), or with `sticks` thin bones and small joints (the
    skeleton view); left / right / centre colours from the joint names."""
    parents = np.asarray(parents)
    names = list(names) if names is not None else [f"joint{j}" for j in range(len(parents))]
    side_colour = {"left": np.array(palette.left), "right": np.array(palette.right), None: np.array(palette.centre)}
    bones = drawn_bones(parents)
    radius = np.array([bone_radius(names[p]) for _, p in bones], np.float32)
    colour = np.array([side_colour[joint_side(names[c])] for c, _ in bones], np.float32).reshape(-1, 3)
    joints = drawn_joints(parents)
    joint_radius = np.full(len(joints), 0.03, np.float32)
    for index, j in enumerate(joints):
        touching = [radius[k] for k, (c, p) in enumerate(bones) if c == j or p == j]
        joint_radius[index] = 1.12 * max(touching) if touching else 0.04
        if "head" in names[j].lower():
            joint_radius[index] = 0.115
    joint_colour = np.array([side_colour[joint_side(names[j])] * palette.joint_shade for j in joints],
                            np.float32).reshape(-1, 3)
    head = np.array(["head" in names[j].lower() for j in joints], bool)
    joint_colour[head] = np.array(palette.centre, np.float32)
    if sticks:
        radius = np.full_like(radius, STICK_RADIUS)
        joint_radius = np.where(head, STICK_HEAD_RADIUS, STICK_JOINT_RADIUS).astype(np.float32)
    return SkeletonStyle(bones, radius, colour, joints, joint_radius, joint_colour)


def capsule_instances(style: SkeletonStyle, poses: np.ndarray) -> np.ndarray:
    """[B * (K + M), 10] capsule/sphere instances (a, b, radius, colour) of B poses [B, J, 3]."""
    count = len(poses)

    def constant(values):
        return np.broadcast_to(values, (count,) + values.shape)

    bones = np.concatenate([poses[:, style.bones[:, 1]], poses[:, style.bones[:, 0]],
                            constant(style.bone_radius[:, None]), constant(style.bone_colour)], axis=-1)
    joints = poses[:, style.joints]
    spheres = np.concatenate([joints, joints, constant(style.joint_radius[:, None]), constant(style.joint_colour)],
                             axis=-1)
    return np.concatenate([bones.reshape(-1, 10), spheres.reshape(-1, 10)]).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# GPU helpers


class _InstanceStream:
    """A growable dynamic instance buffer and the vertex arrays (by name) that read it. `counts` may
    limit a pass to the first instances (capsules: the shadow pass skips the joint spheres)."""

    def __init__(self, ctx, make_vaos, stride: int):
        self._ctx, self._make_vaos, self._stride = ctx, make_vaos, stride
        self._capacity, self.buffer, self.vaos, self.count, self.counts = 0, None, {}, 0, {}

    @property
    def vao(self):
        return next(iter(self.vaos.values()))

    def upload(self, data: np.ndarray) -> int:
        data = np.ascontiguousarray(data, np.float32)
        count = len(data)
        if count > self._capacity:
            for old in [*self.vaos.values(), self.buffer]:
                if old is not None:
                    old.release()
            self._capacity = max(64, 2 * count)
            self.buffer = self._ctx.buffer(reserve=self._capacity * self._stride, dynamic=True)
            self.vaos = self._make_vaos(self.buffer)
        if count:
            self.buffer.write(data.tobytes())
        self.count, self.counts = count, {}
        return count

    def render(self, name, mode=moderngl.TRIANGLES) -> None:
        count = self.counts.get(name, self.count)
        if count:
            self.vaos[name].render(mode, instances=count)


BODY_VERTEX = np.dtype([("position", np.float32, 3), ("normal", np.float32, 3), ("joints", np.int32, 4),
                        ("weights", np.float32, 4), ("materials", np.float32, 4)])
BODY_FORMAT = ("3f 3f 4i 4f 4f", "in_position", "in_normal", "in_joints", "in_weights", "in_material")
BODY_INSTANCE = ("1f 3f/i", "in_row", "in_shirt")


# Detail tiers: the followed character, crowd members near the camera, the rest of a crowd. Each tier is
# one instanced draw per pass, with a coarser mesh in the shadow pass (its soft edge hides the facets).
LOD_NEAR_DISTANCE = 8.0  # metres from the camera
BODY_TIER_LODS = ((0, 1), (1, 2), (2, 2))  # (main pass, shadow pass) body level of detail per tier
CAPSULE_MESHES = {"high": (12, 4), "low": (8, 2), "coarse": (6, 1)}  # (segments, rings)
CAPSULE_TIER_MESHES = (("high", "low"), ("low", "coarse"), ("coarse", "coarse"))


class _BodyBuffers:
    """One skeleton's body model on the GPU: its levels of detail, and one instance stream per detail
    tier, each with a main-pass and a shadow-pass vertex array."""

    def __init__(self, ctx, programs, model: BodyModel):
        self.model = model
        meshes = []
        for lod in model.lods:
            vertices = np.zeros(len(lod.vertices), BODY_VERTEX)
            vertices["position"], vertices["normal"] = lod.vertices, lod.normals
            vertices["joints"], vertices["weights"], vertices["materials"] = lod.joints, lod.weights, lod.materials
            meshes.append((ctx.buffer(vertices.tobytes()), ctx.buffer(lod.triangles.astype(np.int32).tobytes())))

        def factory(lods):
            lods = [min(lod, len(meshes) - 1) for lod in lods]

            def make(instances):
                return {pass_name: ctx.vertex_array(programs[program], [
                    (meshes[lod][0], *BODY_FORMAT), (instances, *BODY_INSTANCE)], meshes[lod][1], skip_errors=True)
                    for pass_name, program, lod in (("main", "body", lods[0]), ("shadow", "body_shadow", lods[1]))}
            return make

        self.tiers = [_InstanceStream(ctx, factory(lods), 4 * 4) for lods in BODY_TIER_LODS]


@dataclass
class _SkeletonEntry:
    """What the renderer keeps per skeleton: the frames' own arrays (to recognise the skeleton without
    hashing every frame), the capsule and stick styles, the body (built on first use) and its rig."""
    parents: np.ndarray
    offsets: np.ndarray | None
    names: tuple | None
    capsules: SkeletonStyle
    sticks: SkeletonStyle
    rig: Rig | None = None
    body: _BodyBuffers | None = None
    body_error: str = ""
    positions_only: bool = False
    rotation_fit: object = None


@dataclass
class _Group:
    """The characters of one skeleton in this frame, the followed one first when it is among them."""
    entry: _SkeletonEntry
    frames: list = field(default_factory=list)
    crowd_index: list = field(default_factory=list)  # each frame's index in the source (shirt colours)
    tier: list = field(default_factory=list)  # each frame's detail tier


class _PassClock:
    """Waits for the GPU and appends each pass's time (ms, by `now`: wall time, or the process's CPU
    time where a software rasteriser runs in the calling thread) to `times[name]`; does nothing without
    `times`."""

    def __init__(self, ctx, times: dict | None, now):
        self._ctx, self._times, self._now = ctx, times, now
        if times is not None:
            ctx.finish()
            self._last = self._now()

    def lap(self, name: str) -> None:
        if self._times is None:
            return
        self._ctx.finish()
        now = self._now()
        self._times.setdefault(name, []).append(1000.0 * (now - self._last))
        self._last = now


class Renderer:
    """Draws a list of character frames and their overlays for a camera into the current framebuffer."""

    def __init__(self, ctx: moderngl.Context, shader_dir: Path = SHADER_DIR, palette: Palette = Palette(),
                 samples: int | None = None, cache_dir: Path | None = None):
        self.ctx, self.palette, self.cache_dir = ctx, palette, cache_dir
        # MSAA through an offscreen framebuffer resolved into the window; software rasterisers pay
        # several times the frame time for it, so they rely on the shaders' own anti-aliasing
        self.samples = (0 if is_software_renderer(ctx) else 4) if samples is None else int(samples)
        self._msaa_fbo, self._msaa_size = None, None
        shader_dir = Path(shader_dir)
        variants = {"sky": ("sky", ()), "ground": ("ground", ()), "footprint": ("ground", ("SHADOW_FOOTPRINT",)),
                    "footprint_hard": ("ground", ("SHADOW_FOOTPRINT", "HARD_SHADOW")),
                    "mesh": ("mesh", ()), "mesh_shadow": ("mesh", ("SHADOW_PASS",)), "body": ("body", ()),
                    "body_shadow": ("body", ("SHADOW_PASS",)), "lines": ("lines", ()), "points": ("points", ())}
        self.programs = {name: load_program(ctx, shader_dir / f"{file}.glsl", defines)
                         for name, (file, defines) in variants.items()}
        self._skeletons: list[_SkeletonEntry] = []
        self._entry_by_arrays: dict = {}
        self._bodies: dict[str, BodyModel] = {}  # by skeleton key: the in-memory cache
        self.light_direction = np.asarray(palette.sun_direction, np.float64) / np.linalg.norm(palette.sun_direction)
        self._init_static_uniforms()

        quad = ctx.buffer(np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32).tobytes())
        rows = np.linspace(-1.0, 1.0, 33, dtype=np.float32)
        sky_strip = np.stack([np.tile([-1.0, 1.0], len(rows)), np.repeat(rows, 2)], axis=-1).astype(np.float32)
        self._sky_vao = ctx.vertex_array(self.programs["sky"], [(ctx.buffer(sky_strip.tobytes()), "2f", "in_position")])
        # just past the fade-out distance (70 m); 18 m cells are enough for the per-vertex fade, and fewer,
        # larger triangles bin faster in a software rasteriser
        ground_vertices, ground_indices = ground_grid(72.0, 8)
        self._ground_vao = ctx.vertex_array(self.programs["ground"], [(ctx.buffer(ground_vertices.tobytes()), "2f", "in_position")],
                                            ctx.buffer(ground_indices.tobytes()))
        meshes = {detail: tuple(ctx.buffer(array.tobytes()) for array in capsule_mesh(*shape))
                  for detail, shape in CAPSULE_MESHES.items()}
        line_corners = ctx.buffer(np.array([[0, -1], [1, -1], [0, 1], [1, 1]], np.float32).tobytes())

        def capsule_vaos(tier_meshes):
            return lambda instances: {name: ctx.vertex_array(self.programs[program], [
                (meshes[mesh][0], "3f 3f 1f", "in_position", "in_normal", "in_end"),
                (instances, "3f 3f 1f 3f/i", "in_a", "in_b", "in_radius", "in_colour")], meshes[mesh][1],
                skip_errors=True) for name, program, mesh in zip(("main", "shadow"), ("mesh", "mesh_shadow"), tier_meshes)}

        def footprint_vaos(instances):
            return {name: ctx.vertex_array(self.programs[name], [
                (quad, "2f", "in_corner"), (instances, "2f 2f 2f/i", "in_centre", "in_axis_u", "in_axis_v")])
                for name in ("footprint", "footprint_hard")}

        def lines_vaos(instances):
            return {"main": ctx.vertex_array(self.programs["lines"], [
                (line_corners, "2f", "in_corner"), (instances, "3f 3f 4f/i", "in_start", "in_end", "in_colour")])}

        def points_vaos(instances):
            return {"main": ctx.vertex_array(self.programs["points"], [
                (quad, "2f", "in_corner"), (instances, "3f 4f 1f/i", "in_centre", "in_colour", "in_size")])}

        self._capsules = [_InstanceStream(ctx, capsule_vaos(tier), 10 * 4) for tier in CAPSULE_TIER_MESHES]
        # the followed character's shadow with the soft filter, a crowd's with one lookup per pixel
        self._footprints = [_InstanceStream(ctx, footprint_vaos, 6 * 4) for _ in range(2)]
        self._lines = []  # one stream per line batch (each batch has its own width)
        self._lines_factory = lambda: _InstanceStream(ctx, lines_vaos, 10 * 4)
        self._points = _InstanceStream(ctx, points_vaos, 8 * 4)
        self._skin_texture = None  # [rows = characters, 3 texels per joint] joint matrices
        self._shadow_map, self._shadow_fbo = None, None
        self._ensure_shadow_map(SHADOW_MAP_SIZES[0])
        self.last_draw = {}  # what the last frame drew (view, instance counts): for tests and benchmarks
        self.pass_times = None  # set to a dict to have every pass waited for and timed (lists of ms): benchmarks
        self.pass_timer = time.perf_counter

    # ---- setup -----------------------------------------------------------------------------------
    def _init_static_uniforms(self) -> None:
        palette = self.palette
        values = {"u_light_dir": tuple(self.light_direction), "u_sun": palette.sun, "u_sky": palette.light_sky,
                  "u_ground": palette.light_ground, "u_shadow_colour": palette.shadow_ground,
                  "u_shadow_map": 0, "u_skin": 1, "u_colour_a": palette.ground_a, "u_colour_b": palette.ground_b}
        for program in self.programs.values():
            for name, value in values.items():
                if name in program:
                    program[name].value = value
        body = self.programs["body"]
        body["u_palette"].write(np.array([palette.skin, palette.shirts[0], palette.trousers, palette.shoes,
                                          palette.hair], np.float32).tobytes())

    def _ensure_shadow_map(self, size: int) -> None:
        """Grow the shadow map to `size` (never shrink it: making one costs more than a frame's use)."""
        if self._shadow_map is not None and self._shadow_map.width >= size:
            return
        if self._shadow_map is not None:
            self._shadow_fbo.release()
            self._shadow_map.release()
        self._shadow_map = self.ctx.depth_texture((size, size))
        self._shadow_map.compare_func = "<="
        self._shadow_map.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self._shadow_map.repeat_x = self._shadow_map.repeat_y = False
        self._shadow_fbo = self.ctx.framebuffer(depth_attachment=self._shadow_map)

    def _ensure_skin_texture(self, width: int, rows: int) -> None:
        texture = self._skin_texture
        if texture is not None and texture.width >= width and texture.height >= rows:
            return
        if texture is not None:
            texture.release()
        width = max(width, texture.width if texture is not None else 0)
        rows = max(64, rows, texture.height if texture is not None else 0)
        self._skin_texture = self.ctx.texture((width, rows), 4, dtype="f4")
        self._skin_texture.filter = (moderngl.NEAREST, moderngl.NEAREST)

    # ---- skeletons and bodies --------------------------------------------------------------------
    def _entry_for(self, frame: SceneFrame) -> _SkeletonEntry:
        """The skeleton's entry: found by the identity of the frame's arrays (sources hand the same
        arrays to every frame), else by their values, else made."""
        key = (id(frame.parents), id(frame.offsets), frame.names)
        known = self._entry_by_arrays.get(key)
        if known is not None and known[0] is frame.parents and known[1] is frame.offsets:
            return known[2]
        entry = next((entry for entry in self._skeletons
                      if np.array_equal(entry.parents, frame.parents) and entry.names == frame.names
                      and (entry.offsets is None) == (frame.offsets is None)
                      and (frame.offsets is None or np.allclose(entry.offsets, frame.offsets, atol=1e-6))), None)
        if entry is None:
            entry = _SkeletonEntry(frame.parents, frame.offsets, frame.names,
                                   skeleton_style(frame.parents, frame.names, self.palette),
                                   skeleton_style(frame.parents, frame.names, self.palette, sticks=True))
            self._skeletons.append(entry)
        self._entry_by_arrays[key] = (frame.parents, frame.offsets, entry)  # holds the arrays: ids stay theirs
        return entry

    def style_for(self, frame: SceneFrame) -> SkeletonStyle:
        return self._entry_for(frame).capsules

    def body_for(self, entry: _SkeletonEntry, frame: SceneFrame) -> _BodyBuffers | None:
        """The skeleton's body on the GPU, built (or read from the caches) on first use; None when the
        skeleton cannot have one (then it is drawn as capsules)."""
        if entry.body is not None or entry.body_error:
            return entry.body
        try:
            if frame.joint_rot is not None and frame.offsets is not None:
                rig = Rig(np.asarray(frame.parents), np.asarray(frame.offsets, np.float64),
                          np.asarray(frame.joint_rot, np.float64), np.asarray(frame.joint_pos, np.float64),
                          np.asarray(frame.root_dir, np.float64))
            else:
                rig = rig_from_positions(frame.parents, frame.joint_pos, frame.root_dir)
                entry.positions_only = True
            key = rig.key()
            if key not in self._bodies:
                self._bodies[key] = load_or_build_body(rig, self.cache_dir)
            model = self._bodies[key]
            if not entry.positions_only:
                rig = Rig(rig.parents, rig.offsets, model.bind_rot, model.bind_pos, rig.facing)
            entry.rig, entry.body = rig, _BodyBuffers(self.ctx, self.programs, model)
        except Exception as error:  # any skeleton the generator cannot dress: keep drawing it as capsules
            entry.body_error = f"{type(error).__name__}: {error}"
        return entry.body

    def _groups(self, frames: list[SceneFrame], indices: list[int], tiers: np.ndarray) -> list[_Group]:
        groups: dict[int, _Group] = {}
        for index, frame, tier in zip(indices, frames, tiers):
            entry = self._entry_for(frame)
            group = groups.setdefault(id(entry), _Group(entry))
            group.frames.append(frame)
            group.crowd_index.append(index)
            group.tier.append(int(tier))
        return list(groups.values())

    def _skin_rows(self, group: _Group, model: BodyModel) -> np.ndarray:
        """[B, J * 3, 4] rows of the bind-to-pose matrices of the group's characters."""
        positions = np.stack([frame.joint_pos for frame in group.frames])
        entry = group.entry
        if entry.positions_only:
            if entry.rotation_fit is None:
                entry.rotation_fit = rotation_plan(entry.rig)
            rotations = rotations_from_positions(entry.rig, positions, entry.rotation_fit)
        else:
            rotations = np.stack([frame.joint_rot for frame in group.frames])
        matrices = skinning_matrices(rotations, positions, model.bind_rot, model.bind_pos)
        return matrices.reshape(len(group.frames), -1, 4).astype(np.float32)

    # ---- frame ---------------------------------------------------------------------------------
    def _set_common(self, program, camera: OrbitCamera, proj, view, size):
        values = {"m_proj": gl_bytes(proj), "m_view": gl_bytes(view), "m_model": gl_bytes(np.eye(4)),
                  "u_viewport": np.array(size, np.float32).tobytes(),
                  "u_eye": camera.eye().astype(np.float32).tobytes(),
                  "u_horizon": np.array(self.palette.horizon, np.float32).tobytes(),
                  "u_fade_start": np.float32(18.0).tobytes(), "u_fade_end": np.float32(70.0).tobytes()}
        for name, value in values.items():
            if name in program:
                program[name].write(value)

    def _set_light(self, light_clip: np.ndarray, map_size: int) -> None:
        texture_matrix = gl_bytes(shadow_texture_matrix(light_clip))
        texel = 2.0 / map_size / abs(light_clip[0, 0])  # metres
        for name in ("body", "mesh", "footprint", "footprint_hard"):
            program = self.programs[name]
            if "m_light" in program:
                program["m_light"].write(texture_matrix)
            values = {"u_shadow_texel": (1.0 / map_size, 1.0 / map_size), "u_normal_offset": 1.5 * texel,
                      "u_shadow_bias": 0.0015}
            for uniform, value in values.items():
                if uniform in program:
                    program[uniform].value = value
        for name in ("body_shadow", "mesh_shadow"):
            self.programs[name]["m_proj"].write(gl_bytes(light_clip))
            self.programs[name]["m_view"].write(gl_bytes(np.eye(4)))

    def render(self, frames: list[SceneFrame], overlays: OverlayGeometry, camera: OrbitCamera,
               size: tuple[int, int], covered=None, view_mode: str = "mesh", framebuffer=None) -> None:
        """`covered`: an optional rectangle (x, y, w, h, pixels from the bottom-left) that the caller paints
        over with an (almost) opaque panel; the sky, ground and shadows skip it. `view_mode`: one of
        `VIEW_MODES`. `framebuffer`: where to draw (default: the window's)."""
        ctx, palette = self.ctx, self.palette
        clock = _PassClock(ctx, self.pass_times, self.pass_timer)
        width, height = max(size[0], 1), max(size[1], 1)
        proj, view = camera.projection(width / height), camera.view()
        self._eye = camera.eye()
        casters, indices, footprints = self._cull(frames, proj @ view)
        draw = self._prepare_characters(casters, indices, view_mode, camera.eye())
        self.last_draw = draw
        clock.lap("prepare")

        if casters:
            bounds = character_bounds(casters, BODY_MARGIN)
            self._ensure_shadow_map(shadow_view_projection(self.light_direction, *bounds)[1])
            map_size = self._shadow_map.width
            light_clip, _ = shadow_view_projection(self.light_direction, *bounds, map_size)
            self._set_light(light_clip, map_size)
            self._shadow_fbo.use()
            ctx.viewport = (0, 0, map_size, map_size)
            self._shadow_fbo.clear(depth=1.0)
            ctx.enable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
            ctx.cull_face = "front"  # back faces into the map: lit surfaces never compare against themselves
            self._draw_characters(draw, "shadow")
            ctx.cull_face = "back"
            ctx.disable(moderngl.CULL_FACE)
        clock.lap("shadow_pass")

        output = framebuffer if framebuffer is not None else ctx.screen
        target = self._target_framebuffer((width, height), output)
        target.use()
        ctx.viewport = (0, 0, width, height)
        ctx.clear(*palette.horizon, 1.0, depth=1.0)
        self._shadow_map.use(0)
        if self._skin_texture is not None:
            self._skin_texture.use(1)

        # the background layers are shaded once per pixel and never depth-tested: the sky only above the
        # horizon line, the ground (a plane under everything) below it, the ground again inside the shadow
        # footprints; a software rasteriser pays for every full-screen pass and every depth read
        ctx.disable(moderngl.DEPTH_TEST)
        ctx.depth_mask = False
        horizon_y = horizon_ndc_y(proj, view)
        sky = self.programs["sky"]
        sky["m_inv_view_rot"].write(np.ascontiguousarray(view[:3, :3].astype(np.float32)).tobytes())
        tan_half = float(np.tan(camera.fov_y / 2))
        sky["u_tan_half_fov"].value = (tan_half * width / height, tan_half)
        sky["u_horizon"].value, sky["u_zenith"].value = palette.horizon, palette.zenith
        sky["u_bottom"].value = max(horizon_y, -1.0)
        ground = self.programs["ground"]
        self._set_common(ground, camera, proj, view, (width, height))
        model = np.eye(4, dtype=np.float32)
        model[0, 3], model[2, 3] = np.round(camera.target[0]), np.round(camera.target[2])
        ground["m_model"].write(gl_bytes(model))
        followed = np.array(indices) == 0
        self._footprints[0].upload(footprints[~followed])
        self._footprints[1].upload(footprints[followed])
        for name in ("footprint", "footprint_hard"):
            self._set_common(self.programs[name], camera, proj, view, (width, height))
        for rect in uncovered_rects((width, height), covered):
            ctx.scissor = rect
            if horizon_y < 1.0:
                self._sky_vao.render(moderngl.TRIANGLE_STRIP)
            self._ground_vao.render(moderngl.TRIANGLES)
            self._footprints[0].render("footprint_hard", moderngl.TRIANGLE_STRIP)
            self._footprints[1].render("footprint", moderngl.TRIANGLE_STRIP)
        ctx.scissor = None
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_mask = True
        clock.lap("background")

        for name in ("mesh", "body"):
            self._set_common(self.programs[name], camera, proj, view, (width, height))
        ctx.enable(moderngl.CULL_FACE)  # closed, outward-wound surfaces: half the triangles never rasterise
        self._draw_characters(draw, "main")
        ctx.disable(moderngl.CULL_FACE)
        clock.lap("characters")

        self._render_overlays(overlays, camera, proj, view, (width, height))
        if target is not output:
            ctx.copy_framebuffer(output, target)
            output.use()
        clock.lap("overlays")

    def _cull(self, frames, view_proj) -> tuple[list[SceneFrame], list[int], np.ndarray]:
        """The characters to draw (in view, or casting a shadow into it), their indices in `frames` (0:
        the followed one) and their shadow footprints on the ground [N, 6]."""
        if not frames:
            return [], [], np.zeros((0, 6), np.float32)
        if len({np.shape(frame.joint_pos) for frame in frames}) == 1:
            footprints = shadow_footprints(np.stack([frame.joint_pos for frame in frames]), self.light_direction)
        else:
            footprints = np.concatenate([shadow_footprints(frame.joint_pos[None], self.light_direction)
                                         for frame in frames])
        # a software rasteriser pays vertex work for every character drawn, seen or not
        cull_centres, cull_radii = character_bounds(frames)
        footprint_radii = np.linalg.norm(footprints[:, 2:4], axis=-1) + np.linalg.norm(footprints[:, 4:6], axis=-1)
        footprint_centres = np.stack([footprints[:, 0], np.zeros(len(frames)), footprints[:, 1]], axis=-1)
        keep = spheres_in_view(cull_centres, cull_radii, view_proj) | \
            spheres_in_view(footprint_centres, footprint_radii, view_proj)
        indices = np.flatnonzero(keep)
        # front to back (the followed character first): hidden surfaces fail the early depth test
        distance = np.linalg.norm(cull_centres[indices] - self._eye, axis=-1)
        indices = [int(index) for index in indices[np.lexsort((distance, indices != 0))]]
        return [frames[index] for index in indices], indices, footprints[indices]

    def _prepare_characters(self, casters: list[SceneFrame], indices: list[int], view_mode: str,
                            eye: np.ndarray) -> dict:
        """Upload this frame's character data (joint matrices or capsule instances) for both passes."""
        draw = {"view": view_mode, "bodies": [], "tiers": [0, 0, 0], "capsule_instances": 0, "body_instances": 0}
        tiers = np.zeros(len(casters), int)
        if casters:
            distance = np.linalg.norm(np.stack([frame.root_pos for frame in casters]) - eye, axis=-1)
            tiers = np.where(np.array(indices) == 0, 0, np.where(distance < LOD_NEAR_DISTANCE, 1, 2))
        capsule_parts = [[] for _ in CAPSULE_TIER_MESHES]
        skin_rows, body_draws, row = [], [], 0
        shirts = np.array(self.palette.shirts, np.float32)
        for group in self._groups(casters, indices, tiers):
            group_tiers = np.array(group.tier)
            for tier in group_tiers:
                draw["tiers"][tier] += 1
            body = self.body_for(group.entry, group.frames[0]) if view_mode == "mesh" else None
            if body is not None and not group.entry.positions_only and any(f.joint_rot is None for f in group.frames):
                body = None  # a body made from rotations cannot follow a frame without them: capsules this time
            if body is None:
                style = group.entry.sticks if view_mode == "skeleton" else group.entry.capsules
                poses = np.stack([frame.joint_pos for frame in group.frames]).astype(np.float32)
                for tier, parts in enumerate(capsule_parts):  # (instances, how many of them are bones) pairs
                    chosen = group_tiers == tier
                    if np.any(chosen):
                        parts += [capsule_instances(style, poses[chosen]), len(style.bones) * int(np.sum(chosen))]
                continue
            rows = self._skin_rows(group, body.model)
            skin_rows.append(rows)
            instance = np.concatenate([np.arange(row, row + len(rows), dtype=np.float32)[:, None],
                                       shirts[np.array(group.crowd_index) % len(shirts)]], axis=-1)
            for tier, stream in enumerate(body.tiers):
                stream.upload(instance[group_tiers == tier])
            body_draws.append(body)
            draw["body_instances"] += len(rows)
            row += len(rows)
        if skin_rows:
            width = max(rows.shape[1] for rows in skin_rows)
            self._ensure_skin_texture(width, row)
            packed = np.zeros((row, width, 4), np.float32)
            start = 0
            for rows in skin_rows:
                packed[start:start + len(rows), :rows.shape[1]] = rows
                start += len(rows)
            self._skin_texture.write(packed.tobytes(), viewport=(0, 0, width, row))
        for stream, parts in zip(self._capsules, capsule_parts):
            # bones of every character first, then their joint spheres: the shadow pass draws the bones only
            bones = [part[:count] for part, count in zip(parts[::2], parts[1::2])]
            spheres = [part[count:] for part, count in zip(parts[::2], parts[1::2])]
            data = np.concatenate(bones + spheres) if bones else np.zeros((0, 10), np.float32)
            draw["capsule_instances"] += stream.upload(data)
            stream.counts = {"shadow": sum(len(b) for b in bones)}
        draw["bodies"] = body_draws
        return draw

    def _draw_characters(self, draw: dict, pass_name: str) -> None:
        if draw["bodies"] and self._skin_texture is not None:
            self._skin_texture.use(1)
            for body in draw["bodies"]:
                for stream in body.tiers:
                    stream.render(pass_name)
        for stream in self._capsules:
            stream.render(pass_name)

    def _target_framebuffer(self, size, output):
        """The output, or the MSAA framebuffer (re)made at its size (resolved into the output)."""
        if self.samples <= 1:
            return output
        if self._msaa_size != size:
            if self._msaa_fbo is not None:
                for attachment in (*self._msaa_fbo.color_attachments, self._msaa_fbo.depth_attachment):
                    attachment.release()
                self._msaa_fbo.release()
            colour = self.ctx.renderbuffer(size, 4, samples=self.samples)
            depth = self.ctx.depth_renderbuffer(size, samples=self.samples)
            self._msaa_fbo, self._msaa_size = self.ctx.framebuffer([colour], depth), size
        return self._msaa_fbo

    def _render_overlays(self, overlays: OverlayGeometry, camera, proj, view, size) -> None:
        ctx = self.ctx
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.depth_mask = False
        lines_program = self.programs["lines"]
        self._set_common(lines_program, camera, proj, view, size)
        while len(self._lines) < len(overlays.lines):
            self._lines.append(self._lines_factory())
        for stream, batch in zip(self._lines, overlays.lines):
            data = np.concatenate([batch.starts, batch.ends, batch.colours], axis=1) if len(batch.starts) else []
            stream.upload(np.asarray(data, np.float32).reshape(-1, 10))
            if stream.count:
                lines_program["u_width"].value = float(batch.width_px)
                stream.render("main", moderngl.TRIANGLE_STRIP)
        if overlays.points:
            data = np.concatenate([np.concatenate([p.positions, p.colours, np.asarray(p.sizes_px)[:, None]], axis=1)
                                   for p in overlays.points if len(p.positions)] or [np.zeros((0, 8))])
            if self._points.upload(data):
                self._set_common(self.programs["points"], camera, proj, view, size)
                self._points.render("main", moderngl.TRIANGLE_STRIP)
        ctx.depth_mask = True
        ctx.disable(moderngl.BLEND)
