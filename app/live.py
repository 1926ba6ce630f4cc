"""The live network character as a viewer source: wraps `pfnn_core.runtime.Character` (model +
settings + batched state), turns the panel's command into ticks and the state into `SceneFrame`s.

Crowd mode runs B characters in one batched tick, placed on a grid, all following the same command.
"""

import numpy as np

from app.scene import SceneFrame, from_runtime_state


class LiveSource:
    def __init__(self, character, path: str):
        self.character, self.path = character, path

    @classmethod
    def from_checkpoint(cls, path, settings, crowd: int = 1) -> "LiveSource":
        from pfnn_core import runtime
        from pfnn_core.checkpoint import load_checkpoint

        checkpoint = load_checkpoint(path)
        return cls(runtime.Character(checkpoint, settings=settings, batch_size=crowd), str(path))

    def swap_model(self, path) -> None:
        from pfnn_core.checkpoint import load_checkpoint

        self.character.swap_model(load_checkpoint(path))
        self.path = str(path)

    @property
    def label(self) -> str:
        return f"Network: {self.path}"

    @property
    def timings(self) -> dict:
        return dict(self.character.state.timings)

    def summary(self) -> list[str]:
        return []

    def step(self, command, dt: float) -> None:
        self.character.tick(command, dt)

    def reset(self) -> None:
        self.character.reset()

    def frames(self) -> list[SceneFrame]:
        network = self.character.network
        state = self.character.state
        return [from_runtime_state(state, b, network.parents, np.asarray(network.contact_joints),
                                   tuple(network.names)) for b in range(state.batch_size)]
