"""What the simulated body learns from the mocap: `BodyFit` (each joint's zero and range, each foot
joint's sole frame) and `fit_from_motions` / `fit_from_folder` (cached on disk).

A BVH skeleton's rest pose is often no pose at all (the bundled rig has every bone along its local +X,
so a thigh's local rotation is about 180 degrees from it while standing). The simulated joints are
therefore measured from a reference rotation per joint, the centre of what the mocap does with it: the
ball joints' limits are cones around it and the tracking error of a joint stays far from the 180-degree
wrap of a rotation vector. The soles are placed from the frames where a foot lies flat on the capture's
floor: which way is up in the ankle's and the toe's own frames, and which way is forward.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfnn_core.math.quat import cross3, quat_inv_mul, quat_inv_mul_vec, quat_normalize
from pfnn_core.skeleton import body_lines, contact_joint_order, foot_joints, hips_joint

log = logging.getLogger(__name__)

FIT_VERSION = 1  # part of the cache key: bump it when the fit changes its output
LIMIT_MARGIN = np.radians(20.0)  # a joint's cone is the mocap's widest swing (99.9th percentile) plus this
LIMIT_RANGE = (np.radians(25.0), np.radians(170.0))  # the cone angle is kept within these
PLANTED_BAND = 0.015  # m: a foot lies flat while both its joints are within this of their floor levels
PLANTED_SPEED = 0.2  # m/s: ... and both move slower than this
MAX_CLIPS = 48  # clips read from a folder (spread over the files)
FRAME_STEP = 2  # every second frame of each clip


@dataclass(frozen=True)
class BodyFit:
    """Facts about a skeleton's joints measured on its mocap (all in each joint's own BVH frame)."""

    reference: np.ndarray  # [J, 4] local rotation at each simulated joint's zero (the centre of its range)
    limits: np.ndarray  # [J] rad: the cone around the reference each joint may swing in
    sole_up: np.ndarray  # [J, 3] world up in a contact joint's frame while its foot lies flat (0 for others)
    sole_forward: np.ndarray  # [J, 3] the foot's forward there, perpendicular to sole_up (0 for others)
    frames: int  # mocap frames the fit is measured on
    source: str = ""

    def to_json(self) -> dict:
        return {"reference": self.reference.tolist(), "limits": self.limits.tolist(), "sole_up": self.sole_up.tolist(),
                "sole_forward": self.sole_forward.tolist(), "frames": self.frames, "source": self.source}

    @classmethod
    def from_json(cls, data: dict) -> "BodyFit":
        return cls(np.asarray(data["reference"], float), np.asarray(data["limits"], float),
                   np.asarray(data["sole_up"], float), np.asarray(data["sole_forward"], float),
                   int(data["frames"]), str(data.get("source", "")))


def mean_rotation(rotations: np.ndarray) -> np.ndarray:
    """[F, 4] unit quaternions -> their average [4] (signs aligned to the running mean, twice)."""
    mean = rotations[0]
    for _ in range(3):
        signs = np.where(rotations @ mean < 0.0, -1.0, 1.0)
        mean = quat_normalize((rotations * signs[:, None]).mean(axis=0))
    return mean


def rotation_angle(q: np.ndarray) -> np.ndarray:
    """Angle (rad, 0..pi) of unit quaternions [..., 4]."""
    return 2.0 * np.arccos(np.clip(np.abs(q[..., 0]), 0.0, 1.0))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _sole_frames(global_list, pos_list, parents, names, floor_heights, fps_list):
    """(sole_up [J, 3], sole_forward [J, 3]) of the contact joints from the frames each foot lies flat."""
    joints = len(names)
    feet = foot_joints(names, parents)
    contact = contact_joint_order(feet)
    lines = body_lines(names, parents)
    left_hip, right_hip = lines["hips"]
    up_world, sole_up, sole_forward = np.array([0.0, 1.0, 0.0]), np.zeros((joints, 3)), np.zeros((joints, 3))
    for foot, toe, floors in ((contact[0], contact[1], floor_heights[0:2]), (contact[2], contact[3], floor_heights[2:4])):
        ups, forwards, count = {foot: [], toe: []}, {foot: [], toe: []}, 0
        for rot, pos, fps in zip(global_list, pos_list, fps_list):
            heights = pos[:, [foot, toe], 1] - np.asarray(floors)[None]
            speed = np.linalg.norm(np.diff(pos[:, [foot, toe]][..., [0, 2]], axis=0), axis=-1) * fps
            speed = np.concatenate([speed[:1], speed], axis=0)
            flat = (np.abs(heights) < PLANTED_BAND).all(axis=1) & (speed < PLANTED_SPEED).all(axis=1)
            if not flat.any():
                continue
            count += int(flat.sum())
            if toe != foot:
                forward_world = pos[flat, toe] - pos[flat, foot]
            else:  # no toe joint: the body's facing (hip line x up)
                forward_world = cross3(pos[flat, left_hip] - pos[flat, right_hip], np.broadcast_to(up_world, (flat.sum(), 3)))
            forward_world[:, 1] = 0.0
            for joint in {foot, toe}:
                ups[joint].append(quat_inv_mul_vec(rot[flat, joint], np.broadcast_to(up_world, (flat.sum(), 3))))
                forwards[joint].append(quat_inv_mul_vec(rot[flat, joint], forward_world))
        if count == 0:
            raise ValueError(f"no mocap frame with the foot {names[foot]!r} flat on the floor (both its joints within "
                             f"{100 * PLANTED_BAND:.1f} cm of their floor levels {np.round(floors, 3).tolist()} m)")
        for joint in {foot, toe}:
            up = _unit(np.concatenate(ups[joint]).mean(axis=0))
            forward = np.concatenate(forwards[joint]).mean(axis=0)
            sole_up[joint] = up
            sole_forward[joint] = _unit(forward - up * float(forward @ up))
    return sole_up, sole_forward


def fit_from_motions(motions, floor_heights, source: str = "") -> BodyFit:
    """The fit of one skeleton from clips on it (`bvh.Motion`, lengths in metres) and the floor level
    of each contact joint (Foot_L, Toes_L, Foot_R, Toes_R, metres above the capture's floor)."""
    motions = list(motions)
    if not motions:
        raise ValueError("no mocap clip to fit the body to")
    names, parents = list(motions[0].names), np.asarray(motions[0].parents)
    local_list, global_list, pos_list, fps_list = [], [], [], []
    for motion in motions:
        if list(motion.names) != names:
            raise ValueError(f"{motion.source}: its joints differ from {motions[0].source}'s")
        rot, pos = motion.global_rotations()[::FRAME_STEP], motion.global_positions()[::FRAME_STEP]
        local_list.append(motion.rotations[::FRAME_STEP])
        global_list.append(rot)
        pos_list.append(pos)
        fps_list.append(motion.fps / FRAME_STEP)
    local = quat_normalize(np.concatenate(local_list))
    joints = len(names)
    reference, limits = np.tile([1.0, 0.0, 0.0, 0.0], (joints, 1)), np.full(joints, LIMIT_RANGE[1])
    hips = hips_joint(names, parents)
    below = _joints_below(parents, hips)
    for joint in below:
        if joint == hips:
            continue
        reference[joint] = mean_rotation(local[:, joint])
        swing = rotation_angle(quat_inv_mul(reference[joint][None], local[:, joint]))
        limits[joint] = np.clip(np.quantile(swing, 0.999) + LIMIT_MARGIN, *LIMIT_RANGE)
    sole_up, sole_forward = _sole_frames(global_list, pos_list, parents, names,
                                         np.asarray(floor_heights, float), fps_list)
    return BodyFit(reference, limits, sole_up, sole_forward, int(local.shape[0]), source)


def _joints_below(parents, joint: int) -> list[int]:
    """`joint` and every joint under it, parents first."""
    below = [joint]
    for index, parent in enumerate(parents):
        if parent in below:
            below.append(index)
    return below


# ---------------------------------------------------------------------------------------------
# From a folder, cached


def cache_folder() -> Path:
    base = os.environ.get("PFNN_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "pfnn-viewer") / "physics"


def _spread(paths, count: int) -> list:
    if len(paths) <= count:
        return list(paths)
    return [paths[int(i)] for i in np.linspace(0, len(paths) - 1, count).round().astype(int)]


def fit_from_folder(folder, names, floor_heights, max_clips: int = MAX_CLIPS, use_cache: bool = True) -> BodyFit:
    """The fit from up to `max_clips` clips of `folder` on the skeleton with joint `names` (spread over
    the files in name order), kept in the cache folder under a hash of the files, the names and the
    floor levels (a second call reads it back)."""
    from pfnn_core.motion import bvh

    paths = sorted(bvh.find_files(folder))
    key = hashlib.sha256(json.dumps([FIT_VERSION, list(names), np.round(floor_heights, 5).tolist(),
                                     [(str(p), p.stat().st_size) for p in paths], max_clips]).encode()).hexdigest()[:20]
    cached = cache_folder() / f"fit-{key}.json"
    if use_cache and cached.is_file():
        try:
            return BodyFit.from_json(json.loads(cached.read_text(encoding="utf-8")))
        except (ValueError, KeyError, OSError) as error:
            log.warning("%s: unreadable cached body fit (%s); fitting again", cached, error)
    motions = [motion for motion in (bvh.load(path) for path in _spread(paths, max_clips))
               if list(motion.names) == list(names)]
    if not motions:
        raise ValueError(f"{folder}: no BVH clip on this skeleton ({len(names)} joints: {', '.join(names[:5])}, ...)")
    fit = fit_from_motions(motions, floor_heights, source=f"{len(motions)} clips of {folder}")
    if use_cache:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps(fit.to_json()), encoding="utf-8")
        except OSError as error:
            log.warning("%s: cannot keep the body fit (%s)", cached, error)
    return fit

