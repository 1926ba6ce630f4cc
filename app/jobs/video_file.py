"""One MP4 file being encoded: H.264 (libx264, `ultrafast`) through imageio-ffmpeg's bundled ffmpeg, fed
raw RGB frames through a pipe.

The encoder writes to a hidden temporary file next to the destination (`pfnn_core.files`); `close`
finishes the stream, fsyncs and renames it, so the destination only ever holds a whole, playable video.
The folder is checked when the file is opened, so a folder that cannot be written fails at once;
an encoder that stops later (a full disk) raises `VideoError` from `write` or `close`.
"""

import os
from pathlib import Path

import numpy as np

from pfnn_core import files

# ultrafast: a 1280x720 frame costs a few ms, so the encoder keeps up with the viewer on two cores
ENCODER_OPTIONS = ["-preset", "ultrafast", "-crf", "20"]


class VideoError(OSError):
    """The encoder could not write the video; the message names the file and says why."""


class VideoFile:
    """`write(frame, count)` appends `count` copies of an RGB frame [H, W, 3] (even sizes); `close()`
    returns the finished file's path."""

    def __init__(self, path, fps: int):
        self.path, self.fps = Path(path), int(fps)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.temporary = files.temporary_path(self.path, keep_suffix=True)
        try:
            self.temporary.touch(exist_ok=False)  # a read-only or missing folder fails here, not in ffmpeg
        except OSError as failure:
            raise files.WriteError(self.path, failure) from None
        self._encoder = None
        self.bottom_up = False

    def _open(self, width: int, height: int, bottom_up: bool):
        import imageio_ffmpeg

        self.bottom_up = bottom_up  # rows sent bottom row first, turned by ffmpeg (no copy here)
        encoder = imageio_ffmpeg.write_frames(
            str(self.temporary), (width, height), fps=self.fps, codec="libx264", quality=None,
            macro_block_size=2, pix_fmt_out="yuv420p", ffmpeg_log_level="error",
            output_params=ENCODER_OPTIONS + (["-vf", "vflip"] if bottom_up else []))
        encoder.send(None)  # starts ffmpeg
        return encoder

    def write(self, frame: np.ndarray, count: int = 1) -> None:
        try:
            if self._encoder is None:  # a frame read bottom row first (a flipped view) stays that way
                self._encoder = self._open(frame.shape[1], frame.shape[0], frame.strides[0] < 0)
            rows = np.ascontiguousarray(frame[::-1] if self.bottom_up else frame)  # no copy when they are
            for _ in range(count):
                self._encoder.send(rows)
        except Exception as error:
            self.abort()
            raise VideoError(f"{self.path}: the video encoder stopped ({_last_line(error)})") from None

    def close(self) -> Path:
        """Finish the stream and put the whole file at `path`."""
        try:
            if self._encoder is not None:
                self._encoder.close()
                self._encoder = None
            descriptor = os.open(self.temporary, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.replace(self.temporary, self.path)
        except OSError as failure:
            self.abort()
            raise files.WriteError(self.path, failure) from None
        except Exception as error:
            self.abort()
            raise VideoError(f"{self.path}: the video encoder stopped ({_last_line(error)})") from None
        files.sync_folder(self.path.parent)
        return self.path

    def abort(self) -> None:
        """Stop the encoder and remove the unfinished file."""
        encoder, self._encoder = self._encoder, None
        if encoder is not None:
            try:
                encoder.close()
            except Exception:  # the encoder is gone already; the file is removed below
                pass
        try:
            self.temporary.unlink()
        except OSError:
            pass


def _last_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
