"""One MP4 file being encoded: H.264 (libx264, `ultrafast`) by imageio-ffmpeg's bundled ffmpeg, fed raw
frames through a pipe: yuv420p planes converted on the GPU (`Yuv420Frame`, see `pixel_reader.py`) go to
the encoder as they are; RGB or RGBA pixels are converted by ffmpeg. Either way the colours are BT.601,
limited range, and the stream is tagged so. `shrink=2` writes the video at half the picture's width and
height (ffmpeg's scaler, 2x2 pixels averaged, in the same pass as the colour conversion): about half
the encoder's CPU per 1280x720 frame (9-11 -> 5-6 ms here), for a machine without a GPU.

The video is written into an unnamed file in the destination's folder (Linux `O_TMPFILE`), which gets
its name only once whole: `close` finishes the stream, checks that ffmpeg succeeded, fsyncs, and links
the file in under a hidden temporary name renamed over the destination. So a full disk, or a folder
made read-only while recording, leaves nothing behind: an unnamed file goes when it is closed. Where
there are no unnamed files, a hidden temporary file next to the destination is used instead and removed
on failure (`pfnn_core.files`). A folder that cannot be written fails when the file is opened; later
failures raise `files.WriteError` (the reason in words: 'no space left on the device') or `VideoError`.
"""

import contextlib
import errno
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfnn_core import files

# ultrafast: a 1280x720 frame costs a few ms, so the encoder keeps up with the viewer on two cores
ENCODER_OPTIONS = ["-preset", "ultrafast", "-crf", "20"]
# the matrix and range of `shaders/rgb_to_yuv.glsl` and of ffmpeg's own RGB conversion
COLOUR_TAGS = ["-colorspace", "smpte170m", "-color_range", "tv"]
# failures of the file ffmpeg writes, told by the words it prints (os.strerror), said as the other writers say them
# swscale's area filter: each video pixel the mean of the window's pixels it covers (fast_bilinear, a
# little cheaper, samples instead: off by 43 levels on noise where area is within 0.2)
SHRINK_FILTER = "scale=trunc(iw/{twice})*2:trunc(ih/{twice})*2:flags=area"
FILE_FAILURES = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)


class VideoError(OSError):
    """The encoder could not write the video; the message names the file and says why."""


@dataclass(frozen=True)
class Yuv420Frame:
    """A frame as the encoder takes it: the yuv420p planes of a `width` x `height` picture (both even),
    Y, then U, then V, each top row first; BT.601, limited range."""
    planes: np.ndarray  # uint8 [width * height * 3 // 2]
    width: int
    height: int


class VideoFile:
    """`write(frame, count)` appends `count` copies of a frame: a `Yuv420Frame`, or RGB / RGBA pixels
    [H, W, 3 or 4] (even sizes; a view read bottom row first stays so, ffmpeg turns it); `close()`
    returns the finished file's path. Every frame of one file has the first one's kind and size; the
    video is `shrink` (1 or 2) times smaller each way (even sizes)."""

    def __init__(self, path, fps: int, shrink: int = 1):
        self.path, self.fps = Path(path), int(fps)
        if shrink not in (1, 2):
            raise ValueError(f"{self.path}: a video is written at full size (shrink 1) or half size (2), not {shrink}")
        self.shrink = shrink
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as failure:
            raise files.WriteError(self.path, failure) from None
        self.output = _Output(self.path)  # a read-only or missing folder fails here, not in ffmpeg
        self._process = None
        self._said = None  # ffmpeg's messages (a temporary file)
        self.bottom_up = False

    def _open(self, frame) -> None:
        import imageio_ffmpeg

        if isinstance(frame, Yuv420Frame):
            pixel_format, width, height = "yuv420p", frame.width, frame.height
        else:
            height, width, channels = frame.shape
            pixel_format = {3: "rgb24", 4: "rgba"}[channels]
            self.bottom_up = frame.strides[0] < 0  # rows sent bottom row first, turned by ffmpeg (no copy here)
        command = [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-nostats", "-loglevel", "error",
                   "-f", "rawvideo", "-pix_fmt", pixel_format, "-video_size", f"{width}x{height}",
                   "-framerate", str(self.fps), "-i", "pipe:0", "-an", "-c:v", "libx264", *ENCODER_OPTIONS,
                   "-pix_fmt", "yuv420p", *COLOUR_TAGS, *self._filters(),
                   "-f", "mp4", "-y", self.output.name_for_ffmpeg]
        self._said = tempfile.TemporaryFile()
        # a session of its own: Ctrl+C in the terminal stops the viewer, which then finishes the file
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=self._said, pass_fds=(self.output.descriptor,),
                                         start_new_session=True)

    def _filters(self) -> list[str]:
        filters = (["vflip"] if self.bottom_up else []) + (
            [SHRINK_FILTER.format(twice=2 * self.shrink)] if self.shrink > 1 else [])
        return ["-vf", ",".join(filters)] if filters else []

    def write(self, frame, count: int = 1) -> None:
        try:
            if self._process is None:
                self._open(frame)
            if isinstance(frame, Yuv420Frame):
                data = frame.planes
            else:  # no copy when the rows are in order already
                data = np.ascontiguousarray(frame[::-1] if self.bottom_up else frame)
            for _ in range(count):
                self._process.stdin.write(data)
        except Exception as error:
            failure = self._failure(error)
            self.abort()
            raise failure from None

    def close(self) -> Path:
        """Finish the stream and put the whole file at `path`."""
        try:
            self._finish_stream()
            return self.output.put_in_place()
        except Exception:
            self.abort()
            raise

    def _finish_stream(self) -> None:
        process = self._process
        if process is None:
            raise VideoError(f"{self.path}: no frames were recorded")
        try:
            process.stdin.close()
        except OSError:  # ffmpeg stopped already; its exit status and messages say why
            pass
        if process.wait() != 0:
            raise self._failure(None)
        self._process = None
        self._close_said()

    def abort(self) -> None:
        """Stop the encoder and leave no file behind."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()
            with contextlib.suppress(OSError):
                process.stdin.close()
        self._close_said()
        self.output.discard()

    def _failure(self, error: BaseException | None) -> OSError:
        """Why the encoder stopped: a failure of the file (a full disk, ...) in the writers' words, or
        ffmpeg's last message."""
        said = ""
        if self._process is not None and self._said is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)  # it is exiting: its messages are complete then
            self._said.seek(0)
            said = self._said.read().decode(errors="replace")
        for number in FILE_FAILURES:
            if os.strerror(number) in said:
                return files.WriteError(self.path, OSError(number, os.strerror(number)))
        reason = _last_line(said) if said.strip() else _last_line(error) if error is not None else "it failed"
        return VideoError(f"{self.path}: the video encoder stopped ({reason})")

    def _close_said(self) -> None:
        said, self._said = self._said, None
        if said is not None:
            said.close()


class _Output:
    """The file ffmpeg writes (through `/dev/fd/N`): unnamed in the destination's folder where the file
    system allows it, else a hidden temporary file next to the destination."""

    def __init__(self, path: Path):
        self.path, self.temporary = path, None
        try:
            self.descriptor = os.open(path.parent, os.O_TMPFILE | os.O_WRONLY, 0o644)
            return
        except AttributeError:  # not Linux
            pass
        except OSError as failure:
            if failure.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise files.WriteError(path, failure) from None
        self.temporary = files.temporary_path(path, keep_suffix=True)
        try:
            self.descriptor = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as failure:
            raise files.WriteError(path, failure) from None

    @property
    def name_for_ffmpeg(self) -> str:
        return f"/dev/fd/{self.descriptor}"

    def put_in_place(self) -> Path:
        """fsync, then give the file its name (replacing an earlier file there at once, never partly)."""
        try:
            os.fsync(self.descriptor)
            temporary = self.temporary or self._link_hidden()
            try:
                os.replace(temporary, self.path)
            except OSError:
                if self.temporary is None:
                    _remove(temporary)
                raise
        except OSError as failure:
            raise files.WriteError(self.path, _folder_failure(self.path.parent, failure)) from None
        self.temporary = None
        self.discard()
        files.sync_folder(self.path.parent)
        return self.path

    def _link_hidden(self) -> Path:
        hidden = files.temporary_path(self.path, keep_suffix=True)
        links = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
        try:  # linkat(AT_SYMLINK_FOLLOW) of the descriptor's link: the unnamed file gets a name
            os.link(str(self.descriptor), hidden, src_dir_fd=links, follow_symlinks=True)
        finally:
            os.close(links)
        return hidden

    def discard(self) -> None:
        """Close the file; a named temporary one is removed (an unnamed one goes by itself)."""
        descriptor, self.descriptor = self.descriptor, None
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.close(descriptor)
        if self.temporary is not None:
            _remove(self.temporary)
            self.temporary = None


def _folder_failure(folder: Path, failure: OSError) -> OSError:
    """A link into a folder made read-only can fail as 'cross-device' (a read-only bind mount): say
    what the folder is instead."""
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return OSError(errno.EROFS, os.strerror(errno.EROFS))
        if not os.access(folder, os.W_OK):
            return OSError(errno.EACCES, os.strerror(errno.EACCES))
    return failure


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _last_line(error) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
