"""`FeatureLayout`: named blocks of one flat feature vector (the only place that knows offsets), and the
model's input/output pair `ModelLayout` from `make_layouts(num_joints)` (ARCHITECTURE.md)."""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np

from pfnn_core.features.contract import CONTACT_NAMES, FUTURE_OFFSETS, GAIT_NAMES, TRAJ_OFFSETS


class FeatureLayout:
    """Named blocks of one flat feature vector: name -> shape -> slice.

    `pack(dict) -> array [..., size]` and `unpack(array) -> dict of views [..., *shape]` work on any
    leading batch dims; `to_json`/`from_json` round trip (stored in checkpoints).
    """

    def __init__(self, entries):
        self.entries = [(str(name), tuple(int(n) for n in shape)) for name, shape in entries]
        self._slices, start = {}, 0
        for name, shape in self.entries:
            if name in self._slices:
                raise ValueError(f"duplicate feature name {name!r}")
            width = int(np.prod(shape)) if shape else 1
            self._slices[name] = slice(start, start + width)
            start += width
        self.size = start

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.entries]

    def shape(self, name: str) -> tuple:
        return dict(self.entries)[name]

    def slice(self, name: str) -> slice:
        return self._slices[name]

    def pack(self, values: dict, dtype=np.float32) -> np.ndarray:
        missing = [name for name in self.names if name not in values]
        if missing:
            raise KeyError(f"missing features {missing}")
        first = np.asarray(values[self.names[0]])
        batch = first.shape[: first.ndim - len(self.shape(self.names[0]))]
        out = np.empty(batch + (self.size,), dtype=dtype)
        for name, shape in self.entries:
            out[..., self._slices[name]] = np.asarray(values[name]).reshape(batch + (-1,))
        return out

    def unpack(self, array) -> dict:
        batch = array.shape[:-1]
        if array.shape[-1] != self.size:
            raise ValueError(f"feature vector has {array.shape[-1]} values, layout expects {self.size}")
        return {name: array[..., self._slices[name]].reshape(batch + shape) for name, shape in self.entries}

    def to_json(self) -> str:
        return json.dumps({"entries": [[name, list(shape)] for name, shape in self.entries]})

    @staticmethod
    def from_json(text):
        """Rebuild what `to_json` wrote: a FeatureLayout, or a ModelLayout for an {x, y} pair."""
        value = json.loads(text) if isinstance(text, (str, bytes)) else text
        if "x" in value and "y" in value:
            return ModelLayout(FeatureLayout.from_json(value["x"]), FeatureLayout.from_json(value["y"]))
        return FeatureLayout(value["entries"])

    def __eq__(self, other):
        return isinstance(other, FeatureLayout) and self.entries == other.entries

    def __repr__(self):
        return f"FeatureLayout(size={self.size}, {', '.join(f'{n}{list(s)}' for n, s in self.entries)})"


class ModelLayout(NamedTuple):
    """The input (x) and output (y) layouts of the network; unpacks as `x_layout, y_layout`."""

    x: FeatureLayout
    y: FeatureLayout

    def to_json(self) -> str:
        return json.dumps({"x": json.loads(self.x.to_json()), "y": json.loads(self.y.to_json())})

    @staticmethod
    def from_json(text) -> "ModelLayout":
        return FeatureLayout.from_json(text)


def make_layouts(num_joints: int) -> ModelLayout:
    """(x_layout, y_layout) for a skeleton of num_joints joints (ARCHITECTURE.md)."""
    traj, future, j = len(TRAJ_OFFSETS), len(FUTURE_OFFSETS), num_joints
    x_layout = FeatureLayout([
        ("traj_pos", (traj, 2)), ("traj_dir", (traj, 2)), ("traj_gait", (traj, len(GAIT_NAMES))),
        ("joint_pos", (j, 3)), ("joint_vel", (j, 3)),
    ])
    y_layout = FeatureLayout([
        ("root_vel", (2,)), ("root_yaw_rate", (1,)), ("dphase", (1,)), ("contacts", (len(CONTACT_NAMES),)),
        ("future_pos", (future, 2)), ("future_dir", (future, 2)),
        ("joint_pos", (j, 3)), ("joint_vel", (j, 3)), ("joint_rot", (j, 6)),
    ])
    return ModelLayout(x_layout, y_layout)
