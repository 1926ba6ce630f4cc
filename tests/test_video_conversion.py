"""The video's colours: the GPU's RGB -> yuv420p pass (shaders/rgb_to_yuv.glsl) against BT.601's formula
worked by hand, through a real GL context (moderngl standalone EGL), and short videos written from its
planes and from RGBA pixels decoding back to the colours they were made from."""

import numpy as np
import pytest

WIDTH, HEIGHT = 64, 48
# BT.601 limited range (Y, Cb, Cr) of the primaries, white, black and mid grey, from the textbook tables
COLOURS = {(255, 0, 0): (81, 90, 240), (0, 255, 0): (145, 54, 34), (0, 0, 255): (41, 240, 110),
           (255, 255, 255): (235, 128, 128), (0, 0, 0): (16, 128, 128), (128, 128, 128): (126, 128, 128)}


@pytest.fixture(scope="module")
def ctx():
    import moderngl

    context = moderngl.create_standalone_context(backend="egl")
    yield context
    context.release()


def _stripes() -> np.ndarray:
    """A top-row-first RGBA picture of vertical stripes 10 px wide, one per colour, and noise below row 40."""
    picture = np.zeros((HEIGHT, WIDTH, 4), np.uint8)
    picture[..., 3] = 255
    for index, colour in enumerate(COLOURS):
        picture[:, index * 10:index * 10 + 10, :3] = colour
    picture[40:, :, :3] = np.random.default_rng(0).integers(0, 256, (HEIGHT - 40, WIDTH, 3))
    return picture


def _framebuffer(ctx, picture):
    texture = ctx.texture((picture.shape[1], picture.shape[0]), 4, picture[::-1].tobytes())  # GL: bottom row first
    return ctx.framebuffer(color_attachments=[texture])


def _converted(ctx, picture, convert_on_gpu=True):
    from app.jobs.pixel_reader import PixelReader

    reader = PixelReader(ctx, convert_on_gpu, source=_framebuffer(ctx, picture))
    assert reader.read((picture.shape[1], picture.shape[0]), "tag") is None  # one frame behind
    frame, tag = reader.finish()
    reader.release()
    assert tag == "tag"
    return frame


def _planes(frame):
    width, height, luma = frame.width, frame.height, frame.width * frame.height
    chroma = luma // 4
    return (frame.planes[:luma].reshape(height, width),
            frame.planes[luma:luma + chroma].reshape(height // 2, width // 2),
            frame.planes[luma + chroma:].reshape(height // 2, width // 2))


def _bt601(rgb):
    """BT.601 limited range by its definition: Y' = 16 + 219 E'y, Cb = 128 + 224 E'pb, Cr = 128 + 224 E'pr."""
    r, g, b = (rgb[..., channel] / 255.0 for channel in range(3))
    luma = 0.299 * r + 0.587 * g + 0.114 * b
    return 16 + 219 * luma, 128 + 224 * (b - luma) / 1.772, 128 + 224 * (r - luma) / 1.402


def test_the_gpu_pass_gives_bt601_planes_top_row_first(ctx):
    picture = _stripes()
    frame = _converted(ctx, picture)
    assert (frame.width, frame.height) == (WIDTH, HEIGHT) and frame.planes.size == WIDTH * HEIGHT * 3 // 2
    y, u, v = _planes(frame)
    for index, (colour, expected) in enumerate(COLOURS.items()):  # the stripes, away from the noise
        assert (y[20, index * 10 + 5], u[10, index * 5 + 2], v[10, index * 5 + 2]) == expected, colour
    rgb = picture[..., :3].astype(float)
    expected_y = _bt601(rgb)[0]
    block = (rgb[0::2, 0::2] + rgb[1::2, 0::2] + rgb[0::2, 1::2] + rgb[1::2, 1::2]) / 4  # a 2x2 block's mean
    _, expected_u, expected_v = _bt601(block)
    assert np.abs(y - expected_y).max() <= 1.0  # the noise rows too: every pixel within a level
    assert np.abs(u - expected_u).max() <= 1.0 and np.abs(v - expected_v).max() <= 1.0
    assert np.abs(y[40:] - expected_y[40:]).mean() < 0.5  # rounded, not truncated


def test_a_picture_smaller_than_the_video_is_padded_black(ctx):
    from app.jobs.yuv_conversion import Yuv420Pass

    picture = _stripes()[:30, :40]
    conversion = Yuv420Pass(ctx)
    planes = conversion.draw(_framebuffer(ctx, picture), (40, 30), (WIDTH, HEIGHT))
    data = np.frombuffer(planes.read(viewport=planes.viewport, components=1, alignment=1), np.uint8)
    conversion.release()
    from app.jobs.video_file import Yuv420Frame

    y, u, v = _planes(Yuv420Frame(data, WIDTH, HEIGHT))
    assert y[20, 5] == 81 and y[20, 35] == 235  # red and white inside
    assert np.all(y[30:] == 16) and np.all(y[:, 40:] == 16)  # past the picture: black
    assert np.all(u[15:] == 128) and np.all(v[:, 20:] == 128)


@pytest.mark.parametrize("convert_on_gpu", [True, False], ids=["gpu-planes", "rgba-pixels"])
def test_a_short_video_decodes_back_to_its_colours(ctx, tmp_path, convert_on_gpu):
    import imageio.v3 as iio

    from app.jobs.video_file import VideoFile

    picture = _stripes()
    video = VideoFile(tmp_path / "stripes.mp4", 30)
    video.write(_converted(ctx, picture, convert_on_gpu), 6)
    assert list(tmp_path.iterdir()) == []  # nothing named until the file is whole
    path = video.close()
    assert [p.name for p in tmp_path.iterdir()] == ["stripes.mp4"]
    frames = iio.imread(path)
    assert frames.shape == (6, HEIGHT, WIDTH, 3)
    for index, colour in enumerate(COLOURS):  # the middle of each stripe, every frame
        decoded = frames[:, 8:32, index * 10 + 3:index * 10 + 7].reshape(-1, 3).astype(int)
        assert np.abs(decoded - np.array(colour)).max() <= 6, colour


def test_a_half_size_video_averages_2x2_pixels_into_one(ctx, tmp_path):
    import imageio.v3 as iio

    from app.jobs.video_file import VideoFile

    video = VideoFile(tmp_path / "half.mp4", 30, shrink=2)
    video.write(_converted(ctx, _stripes(), convert_on_gpu=False), 4)
    frames = iio.imread(video.close())
    assert frames.shape == (4, HEIGHT // 2, WIDTH // 2, 3)
    for index, colour in enumerate(COLOURS):  # each 10 px stripe is 5 px wide now
        decoded = frames[:, 4:16, index * 5 + 1:index * 5 + 4].reshape(-1, 3).astype(int)
        assert np.abs(decoded - np.array(colour)).max() <= 8, colour


def test_a_shrink_other_than_1_or_2_is_refused_naming_the_file(tmp_path):
    from app.jobs.video_file import VideoFile

    with pytest.raises(ValueError, match="half.mp4.*not 3"):
        VideoFile(tmp_path / "half.mp4", 30, shrink=3)
    assert list(tmp_path.iterdir()) == []
