"""The captures the viewer takes, started and stopped from the keys or the panel: the BVH recording of
the live character (a frame per tick, cut back when the simulation steps back), a video of the window
(a frame per rendered frame, by real time) and screenshots. What each saved, or the error naming the
file, goes into the Record and Capture sections; nothing here stops the viewer."""

from pathlib import Path

from app.jobs.capture import VIDEO_FPS, VideoRecorder, capture_name, save_png
from app.jobs.pixel_reader import PixelReader
from app.jobs.recorder import Recorder, journal_folder
from app.paths import free_path
from app.ui.messages import failure_message

# A video of the window on screen: the encoder's cost is per video frame and a window rendered on the
# CPU runs at 15-50 FPS, so 30 frames a second; headless runs film every 60 Hz tick.
SCREEN_VIDEO_FPS = 30


def video_shrink(choice: str, on_screen: bool, software_renderer: bool) -> int:
    """How many times smaller each way the video is than the window: 1 or 2. 'auto' halves a video of
    the window on screen when a software rasteriser draws it: the rasteriser takes the CPU the encoder
    needs, and half size halves the encoder's work (a 2-core machine kept 74% of its frame rate at full
    size, 76-82% at half: BENCHMARKS.md); headless runs wait for the encoder, so they keep the full size."""
    if choice in ("full", "half"):
        return 1 if choice == "full" else 2
    return 2 if on_screen and software_renderer else 1


def take_path(path, is_folder: bool = False, started=None):
    """Where a BVH take goes: a folder (or a name without '.bvh') gets a new file named by the date and
    time the take started (`started`; now when None), as a recovered take is and as screenshots and
    videos are by when they were taken; a file name already taken gets '-2', '-3', ...: a take never
    replaces an earlier file."""
    if is_folder or path.is_dir() or path.suffix.lower() != ".bvh":
        path = path / capture_name("bvh", started)
    return free_path(path)


class CaptureControl:
    def __init__(self, state, software_renderer: bool = False):
        self.state = state  # the `ViewerState` whose Record and Capture sections show the outcome
        self.software_renderer = software_renderer  # the window is drawn on the CPU (llvmpipe): 'auto' videos at half size
        state.capture.auto_is_half = video_shrink("auto", state.on_screen, software_renderer) == 2
        self.recorder: Recorder | None = None
        self.video: VideoRecorder | None = None
        self.pixels: PixelReader | None = None  # the video's pixel reads, one frame behind
        # on screen a frame the encoder cannot take is dropped (the viewer stays responsive); headless
        # runs wait for the encoder, so every frame is in the file
        self.drop_late_frames = state.on_screen
        self.open_video_file = None  # tests: a slow or failing encoder file (`VideoFile`'s interface)
        self.convert_on_gpu = None  # the video's colour conversion in a shader pass (None: on a GPU, not llvmpipe)

    # ---- BVH recording ---------------------------------------------------------------------------
    def start_recording(self, live_source) -> None:
        record = self.state.record
        try:
            self.recorder = Recorder.for_source(live_source, journal_dir=journal_folder(self.state.work_dir))
        except Exception as error:
            record.error = str(error)
            return
        record.recording, record.frames, record.error, record.message = True, 0, "", ""

    def stop_recording(self) -> None:
        record = self.state.record
        record.recording = False
        if self.recorder is None:
            return
        asked = record.path.strip() or "recordings/"
        path = take_path(self.state.resolve(asked), asked.endswith(("/", "\\")), self.recorder.started)
        try:
            path = self.recorder.save(path)
            record.message = f"Saved {self.recorder.frame_count} frames to {path}"
            record.last_path = str(path)
            self.state.toast(f"Saved take {Path(path).name} ({self.recorder.frame_count} frames)")
        except Exception as error:
            record.error = failure_message("save", path, error)
            if self.recorder.frame_count and self.recorder.journal is not None and self.recorder.journal.frame_count:
                record.error += " (the take is kept on disk: recover it from the Record section)"
                self.state.request("recovery", ("show", None))
        self.recorder = None

    def record_tick(self, live_source) -> None:
        """Keep the followed character's pose of this tick (while recording)."""
        if self.recorder is not None:
            self.recorder.capture(live_source)
            self.state.record.frames = self.recorder.frame_count
            self.state.record.journal_problem = self.recorder.journal_problem

    @property
    def recorded_frames(self) -> int | None:
        """Frames recorded so far (None when not recording): part of each tick's snapshot."""
        return self.recorder.frame_count if self.recorder is not None else None

    def rewind_recording(self, frames: int | None) -> None:
        """The simulation stepped back to a tick when `frames` had been recorded: forget the later ones."""
        if self.recorder is not None and frames is not None:
            self.recorder.truncate(frames)
            self.state.record.frames = self.recorder.frame_count

    # ---- screenshots and video -------------------------------------------------------------------
    def capture_path(self, kind: str):
        return self.state.resolve(self.state.capture.folder or "captures") / capture_name(kind)

    def take_screenshot(self, read_pixels, path=None):
        """Save what the window shows now (`read_pixels()`: this frame's scene and panel) as a PNG."""
        capture = self.state.capture
        path = path or self.capture_path("png")
        try:
            save_png(read_pixels(), path)
        except Exception as error:
            capture.error = failure_message("save", path, error)
            return None
        capture.message, capture.error = f"Saved {path}", ""
        self.state.toast(f"Screenshot saved: {Path(path).name}")
        return path

    def start_video(self, path=None) -> None:
        capture = self.state.capture
        if self.video is not None:
            return
        path = path or self.capture_path("mp4")
        options = {"open_file": self.open_video_file} if self.open_video_file else {}
        try:
            fps = SCREEN_VIDEO_FPS if self.drop_late_frames else VIDEO_FPS
            shrink = self.video_shrink()
            self.video = VideoRecorder(path, fps, drop_when_full=self.drop_late_frames, shrink=shrink, **options)
        except Exception as error:
            capture.error = failure_message("record", path, error)
            self.state.toast(f"Could not record a video: {capture.error}", seconds=6.0)
            return
        capture.video_recording, capture.video_frames, capture.video_dropped, capture.error = True, 0, 0, ""
        capture.message = f"Recording {path}" + (" at half the window's size" if shrink > 1 else "")
        self.state.toast(f"Recording video {Path(path).name}")

    def video_shrink(self) -> int:
        """The next video's shrink (1: the window's size, 2: half), by the Capture section's choice."""
        return video_shrink(self.state.capture.video_size, self.state.on_screen, self.software_renderer)

    def add_video_frame(self, ctx, size, real_dt: float) -> None:
        """This frame's pixels for the video, by the real time it was shown for (read into a pixel buffer;
        the frame read before this one goes to the encoder)."""
        video = self.video
        if video is None:
            return
        if video.error is not None:  # the encoder stopped: say why, the viewer goes on
            self.stop_video()
            return
        count = video.frames_due(real_dt)
        if count == 0:  # a frame rate above the video's: this frame is not in the video, nor read
            return
        if self.pixels is None:
            self.pixels = PixelReader(ctx, self.convert_on_gpu)
        self.queue_frame(self.pixels.read(size, count))

    def queue_frame(self, read, last: bool = False) -> None:
        """A `PixelReader` read (pixels, video frames it fills), or None, into the video (the `last` one is
        never dropped: it carries the frames of those dropped before it)."""
        if read is not None:
            pixels, count = read
            self.state.capture.video_frames += self.video.add_frames(pixels, count, wait=last)
            self.state.capture.video_dropped = self.video.dropped

    def stop_video(self) -> None:
        capture = self.state.capture
        if self.video is not None and self.pixels is not None:
            self.queue_frame(self.pixels.finish(), last=True)  # the frame still in a pixel buffer
        if self.pixels is not None:
            self.pixels.release()
            self.pixels = None
        video, self.video = self.video, None
        capture.video_recording = False
        if video is None:
            return
        try:
            path = video.close()
        except Exception as error:
            capture.error = failure_message("record", video.path, error)
            self.state.toast(f"Video not saved: {capture.error}", seconds=6.0)
            return
        seconds = video.frames_written / video.fps
        capture.message = f"Saved {video.frames_written} frames ({seconds:.1f} s) to {path}" + dropped_note(video)
        self.state.toast(f"Video saved: {Path(path).name}" + dropped_note(video))


def dropped_note(video) -> str:
    """'; 12 frames dropped (the encoder was behind)' when any were, else ''."""
    if not video.dropped:
        return ""
    return f"; {video.dropped} frame{'s' * (video.dropped != 1)} dropped (the encoder was behind)"
