"""Making the physics layer for a model: `physics_for(skeleton, floor_heights, ...)` and
`physics_for_character(character, ...)` -> a `PhysicsTracker` ready to step.

The body is built from the skeleton's bone lengths and fitted to the mocap the model was trained on
(the folder recorded in the checkpoint when it still exists, else the bundled clips; the fit and the
MJCF are cached on disk, so later starts only compile the model, a few milliseconds).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pfnn_core.physics.body import PhysicsBody
from pfnn_core.physics.fit import fit_from_folder
from pfnn_core.physics.settings import PhysicsSettings
from pfnn_core.physics.tracker import PhysicsTracker

BUNDLED_BVH = Path(__file__).resolve().parents[2] / "assets" / "bvh"


def mocap_folder(trained_on=(), bvh_dir=None) -> Path:
    """Where the body's fit comes from: `bvh_dir` when given, else the first folder (or a file's folder)
    the model was trained on that still exists, else the bundled clips."""
    if bvh_dir is not None:
        return Path(bvh_dir)
    for item in map(Path, trained_on or ()):
        if item.is_dir():
            return item
        if item.is_file():
            return item.parent
    return BUNDLED_BVH


def physics_for(skeleton: dict, floor_heights, batch: int = 1, settings: PhysicsSettings | None = None,
                trained_on=(), bvh_dir=None, use_cache: bool = True) -> PhysicsTracker:
    """A tracker of `batch` bodies for `skeleton` (the checkpoint's skeleton dict) whose contact joints
    (Foot_L, Toes_L, Foot_R, Toes_R) rest at `floor_heights` (m) on the floor."""
    if floor_heights is None:
        raise ValueError("the physics layer needs the floor level of each contact joint (floor_heights)")
    floor_heights = np.asarray(floor_heights, dtype=float)
    folder = mocap_folder(trained_on, bvh_dir)
    fit = fit_from_folder(folder, skeleton["names"], floor_heights, use_cache=use_cache)
    body = PhysicsBody.build(skeleton, fit, floor_heights, use_cache=use_cache)
    return PhysicsTracker(body, settings, batch)


def physics_for_character(character, settings: PhysicsSettings | None = None, bvh_dir=None,
                          use_cache: bool = True) -> PhysicsTracker:
    """A tracker for a `runtime.Character`'s B characters (any motion model: it tracks the runtime's
    output, `CharacterState.world_joint_pos` / `world_joint_rot`)."""
    model = character.model
    return physics_for(character.skeleton, model.floor_heights, character.batch, settings,
                       trained_on=model.card.trained_on, bvh_dir=bvh_dir, use_cache=use_cache)
