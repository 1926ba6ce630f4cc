"""Screenshots (PNG) and video recordings (MP4, H.264 through imageio-ffmpeg's bundled encoder, on a
thread of its own fed through a bounded queue).

Captures taken from the keyboard or the panel are named by date and time (`pfnn-20250131-142501-123.png`)
in the capture folder, `captures/` in the viewer's work folder (see `app/paths.py`) unless changed in the
panel or with `--capture-dir`. A video is written at a fixed frame rate: each rendered frame is
repeated or skipped by the real time it covered, so playback runs at the speed the screen showed.
"""

import datetime
import os
import queue
import threading
from pathlib import Path

import numpy as np

from app.jobs.video_file import VideoFile, Yuv420Frame

VIDEO_FPS = 60
QUEUE_FRAMES = 8  # rendered frames waiting for the encoder (1280x720: 1.4 MB each in yuv420p, 3.7 MB in RGBA)
ENCODER_NICENESS = 19  # where SCHED_IDLE is not there


def capture_name(kind: str, now: datetime.datetime | None = None) -> str:
    """'pfnn-YYYYmmdd-HHMMSS-mmm.png' / '.mp4': sortable, and two captures a second apart never collide."""
    now = now or datetime.datetime.now()
    return f"pfnn-{now:%Y%m%d-%H%M%S}-{now.microsecond // 1000:03d}.{kind}"


def save_png(pixels: np.ndarray, path) -> Path:
    """Encoded in memory, then written atomically: a full or read-only disk leaves no partial PNG."""
    import io

    from PIL import Image

    from pfnn_core import files

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    encoded = io.BytesIO()
    Image.fromarray(pixels).save(encoded, format="PNG")
    return files.write_bytes(path, encoded.getbuffer())


def even_size(pixels: np.ndarray) -> np.ndarray:
    """H.264 in yuv420p needs even width and height: drop a last odd row / column."""
    height, width = pixels.shape[:2]
    return pixels[: height - height % 2, : width - width % 2]


class VideoRecorder:
    """Frames in, an MP4 out, encoded by a thread of its own so the frame loop never waits for the encoder.

    `add(pixels, real_dt)` queues as many frames of the fixed-rate video as the real time `real_dt`
    fills (often one, none at a high frame rate, several after a stall). The queue holds `capacity`
    rendered frames; when it is full a frame is dropped (`drop_when_full`, the on-screen viewer: it
    stays responsive) and counted in `dropped`, its video frames going to the next frame in, or the
    caller waits for the encoder (headless runs: every frame is in the file). `open_file(path, fps,
    shrink)` makes the encoder's file (`VideoFile`; tests give a slow or failing one); `shrink` 2: the
    video at half the window's size."""

    def __init__(self, path, fps: int = VIDEO_FPS, drop_when_full: bool = False, capacity: int = QUEUE_FRAMES,
                 open_file=VideoFile, shrink: int = 1):
        self.path, self.fps, self.drop_when_full = Path(path), int(fps), drop_when_full
        self.file = open_file(self.path, self.fps, shrink)  # a folder that cannot be written fails here, at once
        self.queue = queue.Queue(max(1, int(capacity)))
        self.frames_queued = 0  # video frames handed to the encoder thread
        self.rendered_queued = 0  # rendered frames handed to it (one may fill several video frames)
        self.frames_written = 0  # video frames the encoder has taken
        self.dropped = 0  # rendered frames left out because the encoder was behind
        self.error: Exception | None = None  # why the encoder stopped (the thread keeps draining the queue)
        self.pending_s = 0.0  # real time not yet covered by a video frame
        self.owed = 0  # video frames of dropped frames, given to the next frame that gets in
        self.size = None
        self.thread = threading.Thread(target=self._encode, name="pfnn-video", daemon=True)
        self.thread.start()

    def add(self, pixels, real_dt: float | None = None, wait: bool = False) -> int:
        """Add what the screen showed for `real_dt` seconds (None: exactly one video frame); returns the
        video frames queued (0 when dropped). `wait`: never drop this one (the last frame of a video)."""
        count = 1 if real_dt is None else self.frames_due(real_dt)
        return self.add_frames(pixels, count, wait) if count else 0

    def frames_due(self, real_dt: float) -> int:
        """The video frames a frame shown for `real_dt` seconds fills (0: it need not be read at all)."""
        self.pending_s += real_dt
        count = int(self.pending_s * self.fps + 1e-6)
        self.pending_s -= count / self.fps
        return min(count, self.fps)  # a long stall adds at most a second of a frozen frame

    def add_frames(self, pixels, count: int, wait: bool = False) -> int:
        """`count` video frames of `pixels` (RGB / RGBA [H, W, C] or a `Yuv420Frame`), and those of the
        frames dropped just before it."""
        count = min(count + self.owed, self.fps)
        if self.drop_when_full and not wait and self.queue.full():
            self.dropped += 1
            self.owed = count
            return 0
        self.owed = 0
        if isinstance(pixels, Yuv420Frame):  # converted on the GPU at the video's size
            frame = pixels
            self.size = self.size or (frame.height, frame.width)
        else:
            frame = even_size(pixels)
            if self.size is None:
                self.size = frame.shape[:2]
            elif frame.shape[:2] != self.size:  # the window was resized: keep the first size
                frame = _fit(frame, self.size)
        self.queue.put((frame, count))
        self.frames_queued += count
        self.rendered_queued += 1
        return count

    def _encode(self) -> None:
        _lower_priority()
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.error is not None:
                continue
            frame, count = item
            try:
                self.file.write(frame, count)
                self.frames_written += count
            except Exception as error:  # the UI thread reads it and says so
                self.error = error

    def close(self) -> Path:
        """Encode what is queued, finish the file and return its path; raises why the encoder stopped."""
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.file.close()


def _lower_priority() -> None:
    """The encoder thread (and the ffmpeg it starts, which inherits it) runs only on CPU time the frame
    loop leaves idle (Linux SCHED_IDLE; elsewhere the lowest niceness there is): on a busy machine the
    viewer keeps its frame rate and late frames are dropped instead."""
    thread = threading.get_native_id()
    try:
        os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, thread, ENCODER_NICENESS)
    except (AttributeError, OSError):
        pass


def _fit(frame: np.ndarray, size: tuple) -> np.ndarray:
    """Crop or pad (black) a frame to `size` (height, width)."""
    out = np.zeros(size + frame.shape[2:], frame.dtype)
    height, width = min(size[0], frame.shape[0]), min(size[1], frame.shape[1])
    out[:height, :width] = frame[:height, :width]
    return out
