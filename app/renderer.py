"""moderngl rendering: sky, ground, blob shadows, the skeleton as instanced capsules and joint spheres,
and overlay lines/points. Programs are loaded from `shaders/*.glsl` (one file per program, split with
`#if defined VERTEX_SHADER` / `FRAGMENT_SHADER`); uniforms `m_proj`, `m_view`, `m_model`.

The renderer only reads `SceneFrame`s and `OverlayGeometry`; it owns GPU objects, nothing else.
"""

from dataclasses import dataclass
from pathlib import Path

import moderngl
import numpy as np

from app.camera import OrbitCamera, gl_bytes
from app.overlays import OverlayGeometry
from pfnn_core.contacts import joint_side
from app.scene import SceneFrame, drawn_bones, drawn_joints

SHADER_DIR = Path(__file__).resolve().parent.parent / "shaders"


@dataclass(frozen=True)
class Palette:
    """Colours of the scene (sRGB 0..1)."""
    horizon: tuple = (0.80, 0.83, 0.87)
    zenith: tuple = (0.42, 0.55, 0.72)
    ground_a: tuple = (0.70, 0.72, 0.75)
    ground_b: tuple = (0.62, 0.64, 0.68)
    left: tuple = (0.33, 0.63, 0.88)
    right: tuple = (0.94, 0.50, 0.40)
    centre: tuple = (0.90, 0.89, 0.86)
    joint_shade: float = 0.62
    light_sky: tuple = (0.55, 0.62, 0.75)
    light_ground: tuple = (0.30, 0.28, 0.26)


def load_program(ctx: moderngl.Context, path: Path) -> moderngl.Program:
    """Compile a single-file GLSL program (the `#version` line stays first)."""
    source = Path(path).read_text()
    version, _, body = source.partition("\n")

    def stage(define):
        return f"{version}\n#define {define}\n{body}"

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


CHARACTER_MARGIN = 0.6  # metres around the joints' box: capsule radii and the blob shadows on the ground


def character_bounds(frames: list[SceneFrame]) -> tuple[np.ndarray, np.ndarray]:
    """Bounding spheres (centres [B, 3], radii [B]) of the characters with their shadows."""
    if len({np.shape(frame.joint_pos) for frame in frames}) == 1:
        poses = np.stack([frame.joint_pos for frame in frames])
        low, high = poses.min(axis=1), poses.max(axis=1)
    else:
        low = np.array([np.min(frame.joint_pos, axis=0) for frame in frames])
        high = np.array([np.max(frame.joint_pos, axis=0) for frame in frames])
    low[:, 1] = np.minimum(low[:, 1], 0.0)  # the shadows lie on the ground
    return 0.5 * (low + high), 0.5 * np.linalg.norm(high - low, axis=-1) + CHARACTER_MARGIN


BONE_RADII = (  # keyword in the PARENT joint's name -> capsule radius in metres (first match wins)
    ("upperleg", 0.058), ("upleg", 0.058), ("thigh", 0.058), ("lowerleg", 0.045), ("leg", 0.045),
    ("toe", 0.024), ("foot", 0.034), ("ankle", 0.034), ("hips", 0.07), ("pelvis", 0.07),
    ("spine", 0.085), ("chest", 0.075), ("neck", 0.042), ("head", 0.05), ("shoulder", 0.04),
    ("clavicle", 0.04), ("upperarm", 0.042), ("lowerarm", 0.034), ("forearm", 0.034), ("hand", 0.026),
    ("arm", 0.04),
)


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


def skeleton_style(parents: np.ndarray, names, palette: Palette) -> SkeletonStyle:
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
    return SkeletonStyle(bones, radius, colour, joints, joint_radius, joint_colour)


class _InstanceStream:
    """A growable dynamic instance buffer and the VAO that reads it."""

    def __init__(self, ctx, make_vao, stride: int):
        self._ctx, self._make_vao, self._stride = ctx, make_vao, stride
        self._capacity, self.buffer, self.vao = 0, None, None

    def upload(self, data: np.ndarray) -> int:
        data = np.ascontiguousarray(data, np.float32)
        count = len(data)
        if count > self._capacity:
            for old in (self.vao, self.buffer):
                if old is not None:
                    old.release()
            self._capacity = max(64, 2 * count)
            self.buffer = self._ctx.buffer(reserve=self._capacity * self._stride, dynamic=True)
            self.vao = self._make_vao(self.buffer)
        if count:
            self.buffer.write(data.tobytes())
        return count


class Renderer:
    """Draws a list of character frames and their overlays for a camera into the current framebuffer."""

    def __init__(self, ctx: moderngl.Context, shader_dir: Path = SHADER_DIR, palette: Palette = Palette(),
                 samples: int | None = None):
        self.ctx, self.palette = ctx, palette
        # MSAA through an offscreen framebuffer resolved into the window; software rasterisers pay
        # several times the frame time for it, so they rely on the shaders' own anti-aliasing
        self.samples = (0 if is_software_renderer(ctx) else 4) if samples is None else int(samples)
        self._msaa_fbo, self._msaa_size = None, None
        self.programs = {name: load_program(ctx, Path(shader_dir) / f"{name}.glsl")
                         for name in ("sky", "ground", "shadow", "mesh", "lines", "points")}
        self._styles = {}
        quad = ctx.buffer(np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32).tobytes())
        rows = np.linspace(-1.0, 1.0, 33, dtype=np.float32)
        sky_strip = np.stack([np.tile([-1.0, 1.0], len(rows)), np.repeat(rows, 2)], axis=-1).astype(np.float32)
        self._sky_vao = ctx.vertex_array(self.programs["sky"], [(ctx.buffer(sky_strip.tobytes()), "2f", "in_position")])
        # just past the fade-out distance (70 m); 18 m cells are enough for the per-vertex fade, and fewer,
        # larger triangles bin faster in a software rasteriser
        ground_vertices, ground_indices = ground_grid(72.0, 8)
        self._ground_vao = ctx.vertex_array(self.programs["ground"], [(ctx.buffer(ground_vertices.tobytes()), "2f", "in_position")],
                                            ctx.buffer(ground_indices.tobytes()))
        # full detail for the followed character, a coarser capsule for the rest of a crowd
        meshes = {detail: tuple(ctx.buffer(array.tobytes()) for array in capsule_mesh(*shape))
                  for detail, shape in (("high", (12, 4)), ("low", (8, 2)))}
        self._corner_quad = quad
        line_corners = ctx.buffer(np.array([[0, -1], [1, -1], [0, 1], [1, 1]], np.float32).tobytes())

        def mesh_vao_factory(detail):
            vertices, indices = meshes[detail]
            return lambda instances: ctx.vertex_array(self.programs["mesh"], [
                (vertices, "3f 3f 1f", "in_position", "in_normal", "in_end"),
                (instances, "3f 3f 1f 3f/i", "in_a", "in_b", "in_radius", "in_colour")], indices)

        def shadow_vao(instances):
            return ctx.vertex_array(self.programs["shadow"], [
                (quad, "2f", "in_corner"), (instances, "3f 1f/i", "in_centre", "in_radius")])

        def lines_vao(instances):
            return ctx.vertex_array(self.programs["lines"], [
                (line_corners, "2f", "in_corner"), (instances, "3f 3f 4f/i", "in_start", "in_end", "in_colour")])

        def points_vao(instances):
            return ctx.vertex_array(self.programs["points"], [
                (quad, "2f", "in_corner"), (instances, "3f 4f 1f/i", "in_centre", "in_colour", "in_size")])

        self._meshes = {detail: _InstanceStream(ctx, mesh_vao_factory(detail), 10 * 4) for detail in meshes}
        self._shadows = _InstanceStream(ctx, shadow_vao, 4 * 4)
        self._lines = []  # one stream per line batch (each batch has its own width)
        self._lines_factory = lambda: _InstanceStream(ctx, lines_vao, 10 * 4)
        self._points = _InstanceStream(ctx, points_vao, 8 * 4)

    def style_for(self, frame: SceneFrame) -> SkeletonStyle:
        key = (np.asarray(frame.parents).tobytes(), tuple(frame.names) if frame.names else None)
        if key not in self._styles:
            self._styles[key] = skeleton_style(frame.parents, frame.names, self.palette)
        return self._styles[key]

    def _pose_groups(self, frames: list[SceneFrame]):
        """(style, joint positions [B, J, 3]) per skeleton, so a crowd is built in one vectorised pass."""
        groups = {}
        for frame in frames:
            style = self.style_for(frame)
            groups.setdefault(id(style), (style, []))[1].append(frame.joint_pos)
        return [(style, np.asarray(poses, np.float32)) for style, poses in groups.values()]

    def _set_common(self, program, camera: OrbitCamera, proj, view, size):
        values = {"m_proj": gl_bytes(proj), "m_view": gl_bytes(view), "m_model": gl_bytes(np.eye(4)),
                  "u_viewport": np.array(size, np.float32).tobytes(),
                  "u_eye": camera.eye().astype(np.float32).tobytes(),
                  "u_horizon": np.array(self.palette.horizon, np.float32).tobytes(),
                  "u_fade_start": np.float32(18.0).tobytes(), "u_fade_end": np.float32(70.0).tobytes()}
        for name, value in values.items():
            if name in program:
                program[name].write(value)

    def character_instances(self, frames: list[SceneFrame]) -> np.ndarray:
        """[N, 10] capsule/sphere instances (a, b, radius, colour) of all characters."""
        chunks = []
        for style, poses in self._pose_groups(frames):
            count = len(poses)

            def constant(values):
                return np.broadcast_to(values, (count,) + values.shape)

            bones = np.concatenate([poses[:, style.bones[:, 1]], poses[:, style.bones[:, 0]],
                                    constant(style.bone_radius[:, None]), constant(style.bone_colour)], axis=-1)
            joints = poses[:, style.joints]
            spheres = np.concatenate([joints, joints, constant(style.joint_radius[:, None]),
                                      constant(style.joint_colour)], axis=-1)
            chunks += [bones.reshape(-1, 10), spheres.reshape(-1, 10)]
        return np.concatenate(chunks) if chunks else np.zeros((0, 10), np.float32)

    def shadow_instances(self, frames: list[SceneFrame]) -> np.ndarray:
        """[N, 4] blob shadows (joint position, radius)."""
        chunks = [np.concatenate([poses[:, style.joints],
                                  np.broadcast_to(style.joint_radius[:, None], (len(poses), len(style.joints), 1))],
                                 axis=-1).reshape(-1, 4) for style, poses in self._pose_groups(frames)]
        return np.concatenate(chunks) if chunks else np.zeros((0, 4), np.float32)

    def render(self, frames: list[SceneFrame], overlays: OverlayGeometry, camera: OrbitCamera,
               size: tuple[int, int], covered=None) -> None:
        """`covered`: an optional rectangle (x, y, w, h, pixels from the bottom-left) that the caller paints
        over with an (almost) opaque panel; the sky, ground and shadows skip it."""
        ctx, palette = self.ctx, self.palette
        width, height = max(size[0], 1), max(size[1], 1)
        proj, view = camera.projection(width / height), camera.view()
        # characters outside the view (most of a crowd) cost vertex work in a software rasteriser
        followed, crowd = frames[:1], frames[1:]
        if frames:
            visible = spheres_in_view(*character_bounds(frames), proj @ view)
            followed = followed if visible[0] else []
            crowd = [frame for frame, keep in zip(crowd, visible[1:]) if keep]
        target = self._target_framebuffer((width, height))
        target.use()
        ctx.viewport = (0, 0, width, height)
        ctx.disable(moderngl.CULL_FACE)
        ctx.clear(*palette.horizon, 1.0, depth=1.0)

        # the background layers are shaded once per pixel and never depth-tested: the sky only above the
        # horizon line, the ground (a plane under everything) below it, the blob shadows on the ground;
        # a software rasteriser pays for every full-screen pass and every depth read
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
        ground["u_colour_a"].value, ground["u_colour_b"].value = palette.ground_a, palette.ground_b
        count = self._shadows.upload(self.shadow_instances(followed + crowd))
        if count:
            self._set_common(self.programs["shadow"], camera, proj, view, (width, height))
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        for rect in uncovered_rects((width, height), covered):
            ctx.scissor = rect
            if horizon_y < 1.0:
                self._sky_vao.render(moderngl.TRIANGLE_STRIP)
            self._ground_vao.render(moderngl.TRIANGLES)
            if count:
                ctx.enable(moderngl.BLEND)
                self._shadows.vao.render(moderngl.TRIANGLE_STRIP, instances=count)
                ctx.disable(moderngl.BLEND)
        ctx.scissor = None
        ctx.disable(moderngl.BLEND)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_mask = True

        mesh = self.programs["mesh"]
        self._set_common(mesh, camera, proj, view, (width, height))
        light = np.array([0.45, 0.85, 0.35])
        mesh["u_light_dir"].value = tuple(light / np.linalg.norm(light))
        mesh["u_sky"].value, mesh["u_ground"].value = palette.light_sky, palette.light_ground
        ctx.enable(moderngl.CULL_FACE)  # closed, outward-wound capsules: half the triangles never rasterise
        for detail, group in (("high", followed), ("low", crowd)):
            count = self._meshes[detail].upload(self.character_instances(group))
            if count:
                self._meshes[detail].vao.render(moderngl.TRIANGLES, instances=count)
        ctx.disable(moderngl.CULL_FACE)

        self._render_overlays(overlays, camera, proj, view, (width, height))
        if target is not ctx.screen:
            ctx.copy_framebuffer(ctx.screen, target)
            ctx.screen.use()

    def _target_framebuffer(self, size):
        """The window, or the MSAA framebuffer (re)made at the window's size."""
        if self.samples <= 1:
            return self.ctx.screen
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
            count = stream.upload(np.asarray(data, np.float32).reshape(-1, 10))
            if count:
                lines_program["u_width"].value = float(batch.width_px)
                stream.vao.render(moderngl.TRIANGLE_STRIP, instances=count)
        if overlays.points:
            data = np.concatenate([np.concatenate([p.positions, p.colours, np.asarray(p.sizes_px)[:, None]], axis=1)
                                   for p in overlays.points if len(p.positions)] or [np.zeros((0, 8))])
            count = self._points.upload(data)
            if count:
                self._set_common(self.programs["points"], camera, proj, view, size)
                self._points.vao.render(moderngl.TRIANGLE_STRIP, instances=count)
        ctx.depth_mask = True
        ctx.disable(moderngl.BLEND)
