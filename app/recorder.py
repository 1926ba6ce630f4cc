"""Record the live character to BVH: local poses captured every tick, written on the training
skeleton with `pfnn_core.bvh.save` so the file opens in Blender or any BVH tool."""

from pathlib import Path

import numpy as np


class Recorder:
    def __init__(self, skeleton: dict, frame_time: float):
        self.skeleton, self.frame_time = skeleton, frame_time
        self.local_rotations, self.root_translations = [], []

    @classmethod
    def for_source(cls, source) -> "Recorder":
        character = getattr(source, "character", None)
        if character is None:
            raise ValueError("Recording needs the network character: load a model first.")
        return cls(character.network.skeleton, 1.0 / 60.0)

    @property
    def frame_count(self) -> int:
        return len(self.local_rotations)

    def capture(self, source) -> None:
        from pfnn_core import runtime

        local_rot, root_translation = runtime.local_pose(source.character.state, self.skeleton)
        self.local_rotations.append(np.asarray(local_rot[0]))
        self.root_translations.append(np.asarray(root_translation[0]))

    def save(self, path) -> Path:
        from pfnn_core import bvh

        if not self.local_rotations:
            raise ValueError("nothing recorded")
        motion = bvh.motion_from_pose(self.skeleton, np.stack(self.local_rotations),
                                      np.stack(self.root_translations), self.frame_time)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        bvh.save(motion, path)
        return path
