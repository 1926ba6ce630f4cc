"""Record the live character to BVH: local poses captured every tick, written on the training
skeleton (`pfnn_core.motion.bvh.motion_from_poses` + `bvh.save`, atomic) so the file opens in any BVH
tool.

While a take runs every captured frame also goes to a recording journal on disk
(`pfnn_core.motion.journal`, synced at least every second), so a crash or a kill costs at most the last
second; the journal is removed once the BVH is saved, and kept (for the recovery offer) when it could
not be. Journals live in `journal_folder(work_dir)`, where the next start looks for them.
"""

import datetime
from pathlib import Path

import numpy as np

from pfnn_core.motion import bvh
from pfnn_core.motion.journal import PoseFrame, RecordingJournal

JOURNAL_FOLDER = "recordings/.journals"  # in the work folder: the same place whatever 'Save to' says


def journal_folder(work_dir) -> Path:
    return Path(work_dir) / JOURNAL_FOLDER


class Recorder:
    def __init__(self, skeleton: dict, frame_time: float, journal_dir=None):
        self.skeleton, self.frame_time = skeleton, frame_time
        self.started = datetime.datetime.now()  # a take is named by when it started, as a recovered one is
        self.local_rotations, self.root_translations = [], []
        self.journal = RecordingJournal.start(journal_dir, skeleton, frame_time) if journal_dir else None

    @classmethod
    def for_source(cls, source, frame_time: float = 1.0 / 60.0, journal_dir=None) -> "Recorder":
        character = getattr(source, "character", None)
        if character is None:
            raise ValueError("Recording needs the network character: load a model first.")
        return cls(character.skeleton, frame_time, journal_dir)

    @property
    def frame_count(self) -> int:
        return len(self.local_rotations)

    @property
    def journal_problem(self) -> str:
        """Why the take is no longer journaled to disk ('' while it is, or without a journal)."""
        return (self.journal.failure or "") if self.journal is not None else ""

    def capture(self, source) -> None:
        """Keep the followed (first) character's pose of this tick, in memory and in the journal."""
        local_rot, root_translation = source.character.local_pose()
        frame = PoseFrame(np.array(local_rot[0]), np.array(root_translation[0]))
        self.local_rotations.append(frame.local_rotations)
        self.root_translations.append(frame.root_translation)
        if self.journal is not None:
            self.journal.append(frame)

    def truncate(self, frame_count: int) -> None:
        """Forget the frames after the first `frame_count` (the simulation stepped back)."""
        del self.local_rotations[frame_count:], self.root_translations[frame_count:]
        if self.journal is not None:
            self.journal.truncate(frame_count)

    def motion(self) -> bvh.Motion:
        if not self.local_rotations:
            raise ValueError("nothing recorded")
        return bvh.motion_from_poses(self.skeleton, np.stack(self.local_rotations), np.stack(self.root_translations),
                                     self.frame_time, source="pfnn-viewer recording")

    def save(self, path) -> Path:
        """Write the take (atomically: a full disk leaves no partial file); the journal goes once it is
        written, and stays (closed, for recovery) when it could not be."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            bvh.save(self.motion(), path)
        except BaseException:
            self.close_journal(keep=True)
            raise
        self.close_journal(keep=False)
        return path

    def close_journal(self, keep: bool) -> None:
        if self.journal is not None:
            self.journal.close(keep=keep and self.journal.frame_count > 0)
