"""moderngl rendering of a frame: sky, ground, the characters in one of three views (skinned body meshes,
capsules, thin skeletons), the sun's shadow map, and overlay lines/points. Programs come from
`shaders/*.glsl` (`app.render.programs`); uniforms `m_proj`, `m_view`, `m_model`.

A frame is a short list of passes: cull the characters and upload their pose data once
(`app.render.characters`), draw the casters into the shadow map from the sun (`shadow_pass`), then the
sky and ground, the ground again inside each character's shadow footprint (only those pixels pay for
the shadow lookups; `background_pass`), the characters (`character_pass`) and the overlays
(`overlay_pass`).

The renderer only reads `SceneFrame`s and `OverlayGeometry`; it owns GPU objects, nothing else.
"""

import time
from pathlib import Path

import moderngl
import numpy as np

from app.render.camera import OrbitCamera, gl_bytes
from app.render.characters import Characters
from app.render.geometry import BODY_MARGIN, character_bounds, ground_grid, horizon_ndc_y, uncovered_rects
from app.render.gpu import InstanceStream, PassClock
from app.render.overlays import OverlayGeometry
from app.render.palette import Palette
from app.render.programs import SHADER_DIR, is_software_renderer, load_program
from app.render.scene import SceneFrame
from app.render.shadows import SHADOW_MAP_SIZES, shadow_texture_matrix, shadow_view_projection

VIEW_MODES = ("mesh", "capsules", "skeleton")
PROGRAM_VARIANTS = {  # program name -> (shader file, extra defines)
    "sky": ("sky", ()), "ground": ("ground", ()), "footprint": ("ground", ("SHADOW_FOOTPRINT",)),
    "footprint_hard": ("ground", ("SHADOW_FOOTPRINT", "HARD_SHADOW")), "mesh": ("mesh", ()),
    "mesh_shadow": ("mesh", ("SHADOW_PASS",)), "body": ("body", ()), "body_shadow": ("body", ("SHADOW_PASS",)),
    "lines": ("lines", ()), "points": ("points", ())}


class Renderer:
    """Draws a list of character frames and their overlays for a camera into the current framebuffer."""

    def __init__(self, ctx: moderngl.Context, shader_dir: Path = SHADER_DIR, palette: Palette = Palette(),
                 samples: int | None = None, cache_dir: Path | None = None):
        self.ctx, self.palette, self.cache_dir = ctx, palette, cache_dir
        # MSAA through an offscreen framebuffer resolved into the window; software rasterisers pay
        # several times the frame time for it, so they rely on the shaders' own anti-aliasing
        self.samples = (0 if is_software_renderer(ctx) else 4) if samples is None else int(samples)
        self._msaa_fbo, self._msaa_size = None, None
        self.programs = {name: load_program(ctx, Path(shader_dir) / f"{file}.glsl", defines)
                         for name, (file, defines) in PROGRAM_VARIANTS.items()}
        self.light_direction = np.asarray(palette.sun_direction, np.float64) / np.linalg.norm(palette.sun_direction)
        self._init_static_uniforms()
        self.characters = Characters(ctx, self.programs, palette, cache_dir)
        self._init_background_and_overlays()
        self._shadow_map, self._shadow_fbo = None, None
        self._ensure_shadow_map(SHADOW_MAP_SIZES[0])
        self.last_draw = {}  # what the last frame drew (view, instance counts): for tests and benchmarks
        self.pass_times = None  # set to a dict to have every pass waited for and timed (lists of ms): benchmarks
        self.pass_timer = time.perf_counter

    # ---- setup -----------------------------------------------------------------------------------
    def _init_background_and_overlays(self) -> None:
        ctx, programs = self.ctx, self.programs
        quad = ctx.buffer(np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32).tobytes())
        rows = np.linspace(-1.0, 1.0, 33, dtype=np.float32)
        sky_strip = np.stack([np.tile([-1.0, 1.0], len(rows)), np.repeat(rows, 2)], axis=-1).astype(np.float32)
        self._sky_vao = ctx.vertex_array(programs["sky"], [(ctx.buffer(sky_strip.tobytes()), "2f", "in_position")])
        # just past the fade-out distance (70 m); 18 m cells are enough for the per-vertex fade, and fewer,
        # larger triangles bin faster in a software rasteriser
        ground_vertices, ground_indices = ground_grid(72.0, 8)
        self._ground_vao = ctx.vertex_array(programs["ground"], [(ctx.buffer(ground_vertices.tobytes()), "2f", "in_position")],
                                            ctx.buffer(ground_indices.tobytes()))
        line_corners = ctx.buffer(np.array([[0, -1], [1, -1], [0, 1], [1, 1]], np.float32).tobytes())

        def footprint_vaos(instances):
            return {name: ctx.vertex_array(programs[name], [
                (quad, "2f", "in_corner"), (instances, "2f 2f 2f/i", "in_centre", "in_axis_u", "in_axis_v")])
                for name in ("footprint", "footprint_hard")}

        def lines_vaos(instances):
            return {"main": ctx.vertex_array(programs["lines"], [
                (line_corners, "2f", "in_corner"), (instances, "3f 3f 4f/i", "in_start", "in_end", "in_colour")])}

        def points_vaos(instances):
            return {"main": ctx.vertex_array(programs["points"], [
                (quad, "2f", "in_corner"), (instances, "3f 4f 1f/i", "in_centre", "in_colour", "in_size")])}

        # the followed character's shadow with the soft filter, a crowd's with one lookup per pixel
        self._footprints = [InstanceStream(ctx, footprint_vaos, 6 * 4) for _ in range(2)]
        self._lines = []  # one stream per line batch (each batch has its own width)
        self._lines_factory = lambda: InstanceStream(ctx, lines_vaos, 10 * 4)
        self._points = InstanceStream(ctx, points_vaos, 8 * 4)

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

    # ---- frame -----------------------------------------------------------------------------------
    def render(self, frames: list[SceneFrame], overlays: OverlayGeometry, camera: OrbitCamera,
               size: tuple[int, int], covered=None, view_mode: str = "mesh", framebuffer=None) -> None:
        """`covered`: an optional rectangle (x, y, w, h, pixels from the bottom-left) that the caller paints
        over with an (almost) opaque panel; the sky, ground and shadows skip it. `view_mode`: one of
        `VIEW_MODES`. `framebuffer`: where to draw (default: the window's)."""
        ctx = self.ctx
        clock = PassClock(ctx, self.pass_times, self.pass_timer)
        size = (max(size[0], 1), max(size[1], 1))
        proj, view = camera.projection(size[0] / size[1]), camera.view()
        casters, indices, footprints = self.characters.cull(frames, proj @ view, camera.eye(), self.light_direction)
        draw = self.characters.prepare(casters, indices, view_mode, camera.eye())
        self.last_draw = draw
        clock.lap("prepare")
        if casters:
            self.shadow_pass(casters, draw)
        clock.lap("shadow_pass")
        output = framebuffer if framebuffer is not None else ctx.screen
        target = self._target_framebuffer(size, output)
        target.use()
        ctx.viewport = (0, 0, *size)
        ctx.clear(*self.palette.horizon, 1.0, depth=1.0)
        self._shadow_map.use(0)
        if self.characters.skin_texture is not None:
            self.characters.skin_texture.use(1)
        self.background_pass(camera, proj, view, size, indices, footprints, covered)
        clock.lap("background")
        self.character_pass(draw, camera, proj, view, size)
        clock.lap("characters")
        self.overlay_pass(overlays, camera, proj, view, size)
        if target is not output:
            ctx.copy_framebuffer(output, target)
            output.use()
        clock.lap("overlays")

    def shadow_pass(self, casters: list[SceneFrame], draw: dict) -> None:
        """The casters into the sun's shadow map (sized to hold them all)."""
        ctx = self.ctx
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
        self.characters.draw(draw, "shadow")
        ctx.cull_face = "back"
        ctx.disable(moderngl.CULL_FACE)

    def background_pass(self, camera, proj, view, size, indices, footprints, covered) -> None:
        """The background layers, shaded once per pixel and never depth-tested: the sky only above the
        horizon line, the ground (a plane under everything) below it, the ground again inside the shadow
        footprints; a software rasteriser pays for every full-screen pass and every depth read."""
        ctx, palette = self.ctx, self.palette
        width, height = size
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
        self._set_common(ground, camera, proj, view, size)
        model = np.eye(4, dtype=np.float32)
        model[0, 3], model[2, 3] = np.round(camera.target[0]), np.round(camera.target[2])
        ground["m_model"].write(gl_bytes(model))
        followed = np.array(indices) == 0
        self._footprints[0].upload(footprints[~followed])
        self._footprints[1].upload(footprints[followed])
        for name in ("footprint", "footprint_hard"):
            self._set_common(self.programs[name], camera, proj, view, size)
        for rect in uncovered_rects(size, covered):
            ctx.scissor = rect
            if horizon_y < 1.0:
                self._sky_vao.render(moderngl.TRIANGLE_STRIP)
            self._ground_vao.render(moderngl.TRIANGLES)
            self._footprints[0].render("footprint_hard", moderngl.TRIANGLE_STRIP)
            self._footprints[1].render("footprint", moderngl.TRIANGLE_STRIP)
        ctx.scissor = None
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_mask = True

    def character_pass(self, draw: dict, camera, proj, view, size) -> None:
        for name in ("mesh", "body"):
            self._set_common(self.programs[name], camera, proj, view, size)
        self.ctx.enable(moderngl.CULL_FACE)  # closed, outward-wound surfaces: half the triangles never rasterise
        self.characters.draw(draw, "main")
        self.ctx.disable(moderngl.CULL_FACE)

    def overlay_pass(self, overlays: OverlayGeometry, camera, proj, view, size) -> None:
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
                if batch.through:
                    ctx.disable(moderngl.DEPTH_TEST)
                stream.render("main", moderngl.TRIANGLE_STRIP)
                ctx.enable(moderngl.DEPTH_TEST)
        if overlays.points:
            data = np.concatenate([np.concatenate([p.positions, p.colours, np.asarray(p.sizes_px)[:, None]], axis=1)
                                   for p in overlays.points if len(p.positions)] or [np.zeros((0, 8))])
            if self._points.upload(data):
                self._set_common(self.programs["points"], camera, proj, view, size)
                self._points.render("main", moderngl.TRIANGLE_STRIP)
        ctx.depth_mask = True
        ctx.disable(moderngl.BLEND)

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
