"""Opening what the panel, the command line or a finished training run names: a checkpoint for the live
character, a BVH file for playback. A file that cannot be used changes nothing but the error shown in
its section (the path said once, `app.ui.messages`), so the viewer keeps running what runs.

A model swapped out (or one that failed to load) is freed at once (nothing else holds it), but glibc keeps
the freed pages of its heap: after the first large free its mmap threshold rises, so the next database's
arrays come from the heap and stay with the process when dropped (a motion-matching database and its
KD-trees: 50-150 MB per load). `hand_back_freed_memory` returns them after every swap."""

import ctypes
import platform
import sys

from app.sources.live import LiveSource
from app.sources.playback import PlaybackSource, load_clip
from app.ui.messages import failure_message
from app.ui.sections.style import style_panel_for
from pfnn_core.runtime.settings import RuntimeSettings


def load_live(state, live_source, path, crowd: int) -> LiveSource | None:
    """The live source running the checkpoint at `path` (the running one with its model hot-swapped, or a
    new one), with the Model and Style sections and the defaults of Tune set for it; None (and why in
    the Model section) when the file cannot be run."""
    live = _open_live(state, live_source, path, crowd)
    if isinstance(live_source, LiveSource):  # a model was dropped: the one swapped out, or the one that failed
        hand_back_freed_memory()
    return live


def hand_back_freed_memory() -> bool:
    """Give the heap's free pages back to the system (glibc's `malloc_trim`); True when it ran, False on
    a C library without it (musl, macOS, Windows), where nothing is done."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


def _open_live(state, live_source, path, crowd: int) -> LiveSource | None:
    text = str(path).strip()
    try:
        if not text:
            raise ValueError("no checkpoint path given")
        path = str(state.resolve_existing(text))
        if isinstance(live_source, LiveSource):
            live_source.swap_model(path)
            live = live_source
        else:
            live = LiveSource.from_checkpoint(path, state.settings, crowd)
        summary = live.summary()
        live.character.model.prepare(state.settings, live.character.state.style[0])  # while the load is waited on
    except Exception as error:  # any bad file: keep running what runs
        state.model.error = failure_message("load", text and state.resolve_existing(text), error)
        return None
    state.model_defaults = RuntimeSettings.for_model(live.checkpoint.card)
    state.model.error, state.model.path, state.model.summary = "", path, summary
    state.style = style_panel_for(live.style_names, live.checkpoint.meta)
    return live


def open_playback(state, path) -> PlaybackSource | None:
    """A playback source for the BVH file at `path`, with the Playback section set for it; None (and why
    in that section) when the file cannot be shown."""
    text = str(path).strip()
    try:
        if not text:
            raise ValueError("no BVH path given")
        path = str(state.resolve_existing(text))
        clip = load_clip(path)
    except Exception as error:  # parse errors, missing files, skeletons we cannot show
        state.playback.error = failure_message("open", text and state.resolve_existing(text), error)
        return None
    playback = state.playback
    playback.error, playback.active, playback.clip_name = "", True, clip.name
    playback.path, playback.time, playback.duration, playback.playing = path, 0.0, clip.duration, True
    return PlaybackSource(clip)
