"""Screenshots (PNG) and video recordings (MP4, H.264 through imageio-ffmpeg's bundled encoder).

Captures taken from the keyboard or the panel are named by date and time (`pfnn-20250131-142501-123.png`)
in the capture folder, `captures/` in the viewer's work folder (see `app/paths.py`) unless changed in the
panel or with `--capture-dir`. A video is written at a fixed frame rate: each rendered frame is
repeated or skipped by the real time it covered, so playback runs at the speed the screen showed.
"""

import datetime
from pathlib import Path

import numpy as np

VIDEO_FPS = 60


def capture_name(kind: str, now: datetime.datetime | None = None) -> str:
    """'pfnn-YYYYmmdd-HHMMSS-mmm.png' / '.mp4': sortable, and two captures a second apart never collide."""
    now = now or datetime.datetime.now()
    return f"pfnn-{now:%Y%m%d-%H%M%S}-{now.microsecond // 1000:03d}.{kind}"


def save_png(pixels: np.ndarray, path) -> Path:
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)
    return path


def even_size(pixels: np.ndarray) -> np.ndarray:
    """H.264 in yuv420p needs even width and height: drop a last odd row / column."""
    height, width = pixels.shape[:2]
    return pixels[: height - height % 2, : width - width % 2]


class VideoRecorder:
    """Frames in, an MP4 out. `add(pixels, real_dt)` writes as many frames of the fixed-rate video as
    the real time `real_dt` fills (often one, none at a high frame rate, several after a stall)."""

    def __init__(self, path, fps: int = VIDEO_FPS):
        import imageio.v2 as imageio

        self.path, self.fps = Path(path), int(fps)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # macro_block_size=2: keep the frame size (only evenness is needed) instead of resizing to 16s
        self.writer = imageio.get_writer(str(self.path), fps=self.fps, codec="libx264", quality=8,
                                         macro_block_size=2, pixelformat="yuv420p", ffmpeg_log_level="error")
        self.frames_written = 0
        self.pending_s = 0.0  # real time not yet covered by a written frame
        self.size = None

    def add(self, pixels: np.ndarray, real_dt: float | None = None) -> int:
        """Add what the screen showed for `real_dt` seconds (None: exactly one video frame)."""
        frame = even_size(pixels)
        if self.size is None:
            self.size = frame.shape[:2]
        elif frame.shape[:2] != self.size:  # the window was resized: keep the first size
            frame = _fit(frame, self.size)
        if real_dt is None:
            count = 1
        else:
            self.pending_s += real_dt
            count = int(self.pending_s * self.fps + 1e-6)
            self.pending_s -= count / self.fps
            count = min(count, self.fps)  # a long stall adds at most a second of a frozen frame
        for _ in range(count):
            self.writer.append_data(frame)
        self.frames_written += count
        return count

    def close(self) -> Path:
        self.writer.close()
        return self.path


def _fit(frame: np.ndarray, size: tuple) -> np.ndarray:
    """Crop or pad (black) a frame to `size` (height, width)."""
    out = np.zeros(size + frame.shape[2:], frame.dtype)
    height, width = min(size[0], frame.shape[0]), min(size[1], frame.shape[1])
    out[:height, :width] = frame[:height, :width]
    return out
