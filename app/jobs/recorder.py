"""Record the live character to BVH: local poses captured every tick, written on the training
skeleton (`pfnn_core.drive.cli.motion_from_poses` + `bvh.save`) so the file opens in any BVH tool."""

from pathlib import Path

import numpy as np


class Recorder:
    def __init__(self, skeleton: dict, frame_time: float):
        self.skeleton, self.frame_time = skeleton, frame_time
        self.local_rotations, self.root_translations = [], []

    @classmethod
    def for_source(cls, source, frame_time: float = 1.0 / 60.0) -> "Recorder":
        character = getattr(source, "character", None)
        if character is None:
            raise ValueError("Recording needs the network character: load a model first.")
        return cls(character.skeleton, frame_time)

    @property
    def frame_count(self) -> int:
        return len(self.local_rotations)

    def capture(self, source) -> None:
        """Keep the followed (first) character's pose of this tick."""
        local_rot, root_translation = source.character.local_pose()
        self.local_rotations.append(np.array(local_rot[0]))
        self.root_translations.append(np.array(root_translation[0]))

    def truncate(self, frame_count: int) -> None:
        """Forget the frames after the first `frame_count` (the simulation stepped back)."""
        del self.local_rotations[frame_count:], self.root_translations[frame_count:]

    def save(self, path) -> Path:
        from pfnn_core.drive.cli import motion_from_poses
        from pfnn_core.motion import bvh

        if not self.local_rotations:
            raise ValueError("nothing recorded")
        motion = motion_from_poses(self.skeleton, np.stack(self.local_rotations), np.stack(self.root_translations),
                                   self.frame_time, source="pfnn-viewer recording")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        bvh.save(motion, path)
        return path
