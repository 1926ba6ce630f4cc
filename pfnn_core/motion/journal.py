"""The recording journal: a recording written to disk frame by frame while it is captured, so a crash,
a kill or a power cut costs at most the last second of it, and the BVH rebuilt from what was left.

The viewer's side is four calls:

    journal = RecordingJournal.start(folder, skeleton, frame_time)   # when recording starts
    journal.append(PoseFrame(local_rotations, root_translation))     # every captured tick
    journal.close()             # the BVH was saved: the journal goes (close(keep=True) keeps it)
    recoverable(folder)         # at start: journals a crashed run left, each with its frame count

plus `journal.truncate(frame_count)` when the simulation steps back, `recover(journal, out_bvh)` to
write the BVH of one (also `pfnn-data recover JOURNAL --out OUT.bvh`) and `discard(journal)`. Disk
trouble never raises out of `start`/`append`: the journal stops and says why in `journal.failure`
(the recording itself goes on in the viewer's memory).

File format (`JOURNAL_SUFFIX`): the line `MAGIC`, one line of JSON (skeleton as
`skeleton.skeleton_dict` stores it, frame_time in seconds, joints, started), then records appended
one `os.write` each, so a killed process loses none it wrote: a kind byte, its payload (little
endian), and the CRC-32 of both. 'F': a frame, J local rotations (w, x, y, z) and the root translation,
float64, motion units. 'T': a uint64 frame count, the frames after it forgotten. The file is fsynced
at most `SYNC_INTERVAL_S` after a frame (a power cut costs no more than that). A reader stops at the
first record that is incomplete or fails its CRC (the tail a crash tore) and reports what it ignored.
A writer holds an exclusive `flock` on its file, so `recoverable` never offers a journal still being
written (the lock goes with the process, whatever kills it).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import struct
import time
import zlib
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pfnn_core import files
from pfnn_core.motion import bvh

try:
    import fcntl
except ImportError:  # not on Windows: journals are then never reported as in use
    fcntl = None

MAGIC = b"PFNN-RECORDING-JOURNAL 1\n"
JOURNAL_SUFFIX = ".pfnn-journal"
SYNC_INTERVAL_S = 1.0
MAX_HEADER_BYTES = 16 * 2**20  # a skeleton's JSON is kilobytes; more is not a journal
_FRAME, _TRUNCATE = b"F", b"T"
_CRC = struct.Struct("<I")
_COUNT = struct.Struct("<Q")


class JournalError(ValueError):
    """A file that is not a readable recording journal; the message names it and says why."""


class EmptyJournal(JournalError):
    """A journal whose header is whole but which holds no whole frame: there is nothing to recover."""


class PoseFrame(NamedTuple):
    local_rotations: np.ndarray   # [J, 4] local quaternions (w, x, y, z)
    root_translation: np.ndarray  # [3] the root joint's translation, motion units


class JournalContents(NamedTuple):
    motion: bvh.Motion     # the recovered frames on the journal's skeleton
    ignored_bytes: int     # bytes after the last whole record (a torn tail), 0 for a clean journal
    started: str           # when recording started (ISO 8601, local time)


class JournalSummary(NamedTuple):
    path: Path
    frames: int            # frames a recovery would write (0 when `problem`)
    duration_s: float
    started: str
    problem: str | None    # why the journal cannot be recovered, or None


class RecordingJournal:
    """One recording's journal, open for appending; see the module docstring."""

    def __init__(self, path, skeleton: dict, frame_time: float, sync_interval_s: float = SYNC_INTERVAL_S,
                 clock=time.monotonic):
        self.path = Path(path)
        self.joints = len(skeleton["names"])
        self.frame_count = 0
        self.failure: str | None = None  # why journaling stopped (disk full, folder gone), else None
        self._frame_bytes = 8 * (4 * self.joints + 3)
        self._sync_interval_s, self._clock = sync_interval_s, clock
        self._last_sync = clock()
        self._unsynced = False
        self._descriptor = None
        header = {"skeleton": skeleton, "frame_time": float(frame_time), "joints": self.joints,
                  "started": datetime.now().isoformat(timespec="seconds")}
        self._created = False
        if not self._guard(self._open, MAGIC + json.dumps(header, default=_plain).encode("utf-8") + b"\n") \
                and self._created:
            with contextlib.suppress(OSError):  # a header cut short is no journal: nothing in it to keep
                self.path.unlink()

    @classmethod
    def start(cls, folder, skeleton: dict, frame_time: float, **options) -> "RecordingJournal":
        """A new journal in `folder` (made if missing), named by the time and this process."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = Path(folder) / f"recording-{stamp}-{os.getpid()}-{secrets.token_hex(2)}{JOURNAL_SUFFIX}"
        return cls(path, skeleton, frame_time, **options)

    @property
    def active(self) -> bool:
        return self._descriptor is not None

    def append(self, frame) -> None:
        """Write one frame, `PoseFrame` or any (local_rotations [J, 4], root_translation [3]) pair."""
        rotations, translation = frame
        payload = np.concatenate([np.asarray(rotations, "<f8").reshape(-1), np.asarray(translation, "<f8").reshape(-1)])
        if payload.nbytes != self._frame_bytes:
            raise ValueError(f"a frame of {self.joints} joints is {self._frame_bytes} bytes, got {payload.nbytes}")
        if self._write(_FRAME + payload.tobytes()):
            self.frame_count += 1

    def truncate(self, frame_count: int) -> None:
        """Forget the frames after the first `frame_count` (the simulation stepped back)."""
        frame_count = max(0, min(int(frame_count), self.frame_count))
        if self._write(_TRUNCATE + _COUNT.pack(frame_count)):
            self.frame_count = frame_count

    def sync(self) -> None:
        """fsync what was appended (append does this by itself at least every `sync_interval_s`)."""
        if self.active and self._unsynced:
            self._guard(os.fsync, self._descriptor)
            self._last_sync, self._unsynced = self._clock(), False

    def close(self, keep: bool = False) -> None:
        """Stop journaling. The recording was saved, so the journal is removed; `keep=True` leaves it
        (synced) for `recover`, e.g. when saving the BVH failed."""
        if self.active:
            if keep:
                self.sync()
            if self._descriptor is not None:
                with contextlib.suppress(OSError):
                    os.close(self._descriptor)  # closing also releases the lock
                self._descriptor = None
        if not keep:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as error:
                self.failure = f"{self.path}: the finished journal could not be removed ({files.describe(error)})"

    def _open(self, header: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
        self._created = True
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._descriptor = descriptor
        _write_all(descriptor, header)
        os.fsync(descriptor)
        files.sync_folder(self.path.parent)

    def _write(self, kind_and_payload: bytes) -> bool:
        if not self.active:
            return False
        record = kind_and_payload + _CRC.pack(zlib.crc32(kind_and_payload))
        if not self._guard(_write_all, self._descriptor, record):
            return False
        self._unsynced = True
        if self._clock() - self._last_sync >= self._sync_interval_s:
            self.sync()
        return self.active

    def _guard(self, action, *arguments) -> bool:
        """Run a disk action; on an OSError stop journaling and keep the reason in `failure`."""
        try:
            action(*arguments)
            return True
        except OSError as error:
            self.failure = f"{self.path}: the recording journal stopped ({files.describe(error)}); " \
                           f"{self.frame_count} frames are on disk, the rest only in memory"
            if self._descriptor is not None:
                with contextlib.suppress(OSError):
                    os.close(self._descriptor)
                self._descriptor = None
            return False


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def read_journal(path) -> JournalContents:
    """The frames of a journal as a Motion; JournalError for a file that is not a journal, has no
    whole frame, or whose skeleton cannot be a Motion's."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            magic = stream.read(len(MAGIC))
            header_line = stream.readline(MAX_HEADER_BYTES) if magic == MAGIC else b""
            body = stream.read()
    except OSError as error:
        raise JournalError(f"{path}: cannot read the journal ({files.describe(error)})") from None
    if magic != MAGIC:
        raise JournalError(f"{path}: not a recording journal (it does not start with {MAGIC.strip().decode()!r})")
    header = _header(path, header_line)
    joints = header["joints"]
    frames, ignored = _records(body, joints)
    if not frames:
        raise EmptyJournal(f"{path}: the journal holds no whole frame (recording stopped at once, or torn)")
    table = np.frombuffer(b"".join(frames), "<f8").reshape(len(frames), 4 * joints + 3)
    rotations = table[:, :4 * joints].reshape(len(frames), joints, 4).copy()
    try:
        motion = bvh.motion_from_poses(header["skeleton"], rotations, table[:, 4 * joints:].copy(),
                                       header["frame_time"], source=str(path))
        bvh.check_motion(motion)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as error:
        raise JournalError(f"{path}: the journal's skeleton is unusable ({error})") from None
    return JournalContents(motion, ignored, header["started"])


def _header(path: Path, line: bytes) -> dict:
    try:
        header = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        header = None
    valid = isinstance(header, dict) and isinstance(header.get("skeleton"), dict) \
        and isinstance(header.get("joints"), int) and not isinstance(header.get("joints"), bool) \
        and 0 < header["joints"] <= 100_000 and isinstance(header.get("frame_time"), (int, float))
    if not valid or not line.endswith(b"\n"):
        raise JournalError(f"{path}: the journal's header line is damaged (expected JSON with skeleton, joints, "
                           f"frame_time)")
    header.setdefault("started", "")
    header["started"] = str(header["started"])
    return header


def _records(body: bytes, joints: int) -> tuple[list[bytes], int]:
    """(frame payloads after truncations, bytes ignored after the last whole record)."""
    frame_size = 8 * (4 * joints + 3)
    sizes = {_FRAME: frame_size, _TRUNCATE: _COUNT.size}
    frames: list[bytes] = []
    position = 0
    while position < len(body):
        kind = body[position:position + 1]
        end = position + 1 + sizes.get(kind, len(body))
        if end + _CRC.size > len(body):
            break
        (crc,) = _CRC.unpack_from(body, end)
        if crc != zlib.crc32(body[position:end]):
            break
        if kind == _FRAME:
            frames.append(body[position + 1:end])
        else:
            del frames[_COUNT.unpack_from(body, position + 1)[0]:]
        position = end + _CRC.size
    return frames, len(body) - position


def recover(path, out_path) -> JournalContents:
    """Write the BVH of a journal's frames to `out_path` (atomically; `files.WriteError` when it cannot
    be written); JournalError when the journal is unreadable. The journal itself is left alone."""
    contents = read_journal(path)
    bvh.save(contents.motion, out_path)
    return contents


def discard(path) -> None:
    """Remove a journal (the user chose not to recover it)."""
    Path(path).unlink(missing_ok=True)


def in_use(path) -> bool:
    """True while a live process still writes the journal (it holds the lock)."""
    if fcntl is None:
        return False
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(descriptor)


def recoverable(folder) -> list[JournalSummary]:
    """The journals in `folder` left by runs that ended without saving (a crash, a kill), oldest first;
    journals still being written and journals without a frame are left out."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob(f"*{JOURNAL_SUFFIX}"), key=lambda p: (p.stat().st_mtime, p.name)):
        if in_use(path):
            continue
        try:
            contents = read_journal(path)
        except EmptyJournal:
            continue
        except JournalError as error:
            if path.stat().st_size > len(MAGIC) + 2:  # more than a header torn at birth
                found.append(JournalSummary(path, 0, 0.0, "", str(error)))
            continue
        motion = contents.motion
        found.append(JournalSummary(path, motion.num_frames, motion.num_frames * motion.frame_time,
                                    contents.started, None))
    return found
