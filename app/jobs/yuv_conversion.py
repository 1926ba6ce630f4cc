"""The window's picture converted to the video encoder's yuv420p on the GPU (`shaders/rgb_to_yuv.glsl`,
BT.601 limited range): half the bytes of RGB to read back, and no colour conversion left for the
encoder's CPU. The planes are drawn into one single-channel target laid out so that reading it whole,
row after row, gives Y, U and V one after the other: the frame as the encoder takes it."""

import moderngl

from app.render.programs import SHADER_DIR, load_program

PROGRAM = SHADER_DIR / "rgb_to_yuv.glsl"
# BT.601's colour differences (B - Y, R - Y) scaled to [-0.5, 0.5], by their R, G, B weights
BLUE_DIFFERENCE = (-0.168736, -0.331264, 0.5)
RED_DIFFERENCE = (0.5, -0.418688, -0.081312)


def planes_target_size(video_size: tuple[int, int]) -> tuple[int, int]:
    """The target holding a `video_size` (width, height) frame's three planes: (width / 2, 3 * height)."""
    width, height = video_size
    return width // 2, 3 * height


class Yuv420Pass:
    """`draw(source, picture_size, video_size)` converts `source`'s colour buffer (a framebuffer, the
    window's by default) and returns the framebuffer whose whole viewport is the frame's planes. The
    picture's top-left pixel is the video's; video pixels past the picture are black."""

    def __init__(self, ctx: moderngl.Context):
        self.ctx = ctx
        self.luma = load_program(ctx, PROGRAM, ["LUMA_PLANE"])
        self.chroma = load_program(ctx, PROGRAM)
        self.luma_draw = ctx.vertex_array(self.luma, [])
        self.chroma_draw = ctx.vertex_array(self.chroma, [])
        self.picture = self.picture_framebuffer = None
        self.planes = self.target = None

    def draw(self, source, picture_size: tuple[int, int], video_size: tuple[int, int]):
        ctx = self.ctx
        self._allocate(picture_size, video_size)
        ctx.copy_framebuffer(self.picture_framebuffer, source)
        width, height = video_size
        bands = ((self.luma_draw, 0, 2 * height, None), (self.chroma_draw, 2 * height, height // 2, BLUE_DIFFERENCE),
                 (self.chroma_draw, 2 * height + height // 2, height // 2, RED_DIFFERENCE))
        with ctx.scope(self.target, enable_only=moderngl.NOTHING):
            ctx.scissor = None
            self.picture.use(0)
            for draw, start, rows, difference in bands:
                program = draw.program
                program["u_picture_size"].value = picture_size
                program["u_band_start"].value = start
                if difference is None:
                    program["u_video_width"].value = width
                else:
                    program["u_difference"].value = difference
                self.target.viewport = (0, start, width // 2, rows)
                draw.render(moderngl.TRIANGLES, vertices=3)
        self.target.viewport = (0, 0, *planes_target_size(video_size))
        return self.target

    def _allocate(self, picture_size, video_size) -> None:
        ctx = self.ctx
        if self.picture is None or self.picture.size != tuple(picture_size):
            self._release_picture()
            self.picture = ctx.texture(tuple(picture_size), 4)
            self.picture.filter = (moderngl.LINEAR, moderngl.LINEAR)  # a 2x2 block's mean in one fetch
            self.picture.repeat_x = self.picture.repeat_y = False
            self.picture_framebuffer = ctx.framebuffer(color_attachments=[self.picture])
        size = planes_target_size(video_size)
        if self.planes is None or self.planes.size != size:
            self._release_planes()
            self.planes = ctx.texture(size, 1)
            self.target = ctx.framebuffer(color_attachments=[self.planes])

    def _release_picture(self) -> None:
        if self.picture is not None:
            self.picture_framebuffer.release()
            self.picture.release()
            self.picture = self.picture_framebuffer = None

    def _release_planes(self) -> None:
        if self.planes is not None:
            self.target.release()
            self.planes.release()
            self.planes = self.target = None

    def release(self) -> None:
        self._release_picture()
        self._release_planes()
        for item in (self.luma_draw, self.chroma_draw, self.luma, self.chroma):
            item.release()
