"""The blind A/B page's key: which model each drive's left and right video shows.

`blind_pairs(drives, seed)` draws, per drive, whether model A goes left or right (seeded, so a key can
be made again from its seed). The page shows only the positions; the key is written beside it
(`key.json`) and is what `pfnn-eval --ab-results` needs to un-blind the answers. Video file names say
the drive and the side only (`videos/walk_turn-left.mp4`), never the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.jsonfile import read_json

MODELS = ("A", "B")
SIDES = ("left", "right")
KEY_VERSION = 1


@dataclass(frozen=True)
class BlindPair:
    """One drive of the page: the model shown on each side and the two videos (paths relative to the page)."""

    drive: str
    left: str  # "A" or "B"
    right: str

    def video(self, side: str) -> str:
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        return f"videos/{self.drive}-{side}.mp4"

    def side_of(self, model: str) -> str:
        return "left" if self.left == model else "right"


@dataclass(frozen=True)
class BlindKey:
    page_id: str  # also written into the page and its answers, so answers meet their own key
    seed: int
    models: dict  # {"A": checkpoint path, "B": checkpoint path}
    pairs: tuple  # of BlindPair, in the page's order

    def pair(self, drive: str) -> BlindPair | None:
        return next((pair for pair in self.pairs if pair.drive == drive), None)

    def to_json(self) -> dict:
        return {"version": KEY_VERSION, "page": self.page_id, "seed": self.seed, "models": dict(self.models),
                "pairs": [{"drive": p.drive, "left": p.left, "right": p.right} for p in self.pairs]}

    @classmethod
    def from_json(cls, value, source: str = "key") -> "BlindKey":
        def fail(problem: str):
            raise ValueError(f"{source}: {problem}; not an A/B key (pfnn-eval --ab writes key.json)")

        if not isinstance(value, dict) or not isinstance(value.get("pairs"), list):
            fail("expected an object with 'pairs'")
        models = value.get("models")
        if not isinstance(models, dict) or sorted(models) != list(MODELS):
            fail("models: expected {\"A\": path, \"B\": path}")
        if not isinstance(value.get("page"), str):
            fail("page: expected the page's id (a string)")
        pairs = []
        for index, pair in enumerate(value["pairs"]):
            if (not isinstance(pair, dict) or not isinstance(pair.get("drive"), str)
                    or sorted((pair.get("left"), pair.get("right"))) != list(MODELS)):
                fail(f"pairs[{index}]: expected {{\"drive\": name, \"left\": \"A\"|\"B\", \"right\": the other}}")
            pairs.append(BlindPair(pair["drive"], pair["left"], pair["right"]))
        return cls(value["page"], int(value.get("seed", 0)), {k: str(v) for k, v in models.items()}, tuple(pairs))


def blind_pairs(drives, seed: int) -> tuple:
    """Per drive name, model A on the left or on the right with equal chance (numpy's generator from `seed`)."""
    names = list(drives)
    if len(set(names)) != len(names):
        raise ValueError(f"drive names must be unique, got {names}")
    flips = np.random.default_rng(seed).random(len(names)) < 0.5
    return tuple(BlindPair(name, *(("B", "A") if flip else ("A", "B"))) for name, flip in zip(names, flips))


def page_id(seed: int) -> str:
    """A short id for one page (from its seed: a page made again from the same seed is the same page)."""
    return f"ab-{int(np.random.default_rng([seed, 1]).integers(1 << 48)):012x}"


def make_key(drives, models: dict, seed: int) -> BlindKey:
    return BlindKey(page_id(seed), int(seed), {name: str(models[name]) for name in MODELS}, blind_pairs(drives, seed))


def write_key(path, key: BlindKey) -> Path:
    return files.write_text(path, json.dumps(key.to_json(), indent=1) + "\n")


def read_key(path) -> BlindKey:
    return BlindKey.from_json(read_json(path, "A/B key"), str(path))
