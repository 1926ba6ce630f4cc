"""`pfnn-drive --physics`: the simulated body beside a headless drive (`DrivePhysics`).

Every tick the drive's characters (one, or a crowd) are tracked by their simulated bodies; the
script's pushes (`events`) are applied at their times. When the drive ends, `motion.bvh` holds the
simulated body, `kinematic.bvh` beside it the runtime's own pose, `physics.csv` the tracking error, the
root's help and the force under each foot per tick (and with `--crowd-bvh`, `crowd/` holds every
character's simulated body, `crowd/kinematic/` their kinematic poses).
"""
from __future__ import annotations

import csv
import dataclasses
import time
from pathlib import Path

import numpy as np

from pfnn_core.motion.kinematics import local_rotations
from pfnn_core.physics.layer import physics_for_character
from pfnn_core.physics.replay import due_events
from pfnn_core.physics.settings import PhysicsSettings

PHYSICS_COLUMNS = ("t", "tracking_error_m", "root_force_n", "foot_l_n", "toes_l_n", "foot_r_n", "toes_r_n", "physics_ms",
                   "floor_n")


class DrivePhysics:
    """The simulated bodies of a drive's B characters; `recorded` of them (the first, or all for a
    crowd's BVHs) keep their simulated pose of every tick."""

    def __init__(self, character, settings: PhysicsSettings | None, events, ticks: int, recorded: int = 1):
        self.tracker = physics_for_character(character, settings)
        self.events = list(events)
        joints = len(character.skeleton["names"])
        self.parents = np.asarray(character.skeleton["parents"])
        self.root = int(np.flatnonzero(self.parents < 0)[0])
        self.local_rot = np.zeros((ticks, recorded, joints, 4))
        self.root_translation = np.zeros((ticks, recorded, 3))
        self.positions = np.zeros((ticks, joints, 3))  # character 0's simulated joints
        self.columns = {name: np.zeros(ticks) for name in PHYSICS_COLUMNS}
        self.pushes = 0

    def tick(self, tick: int, t: float, dt: float, state) -> None:
        """Push (the events due in this tick, at every character), then step the bodies toward `state`'s
        displayed pose and record it."""
        for event in due_events(self.events, t, dt):
            self.tracker.push(event.push)
            self.pushes += 1
        started = time.perf_counter()
        pose = self.tracker.step(state.world_joint_pos, state.world_joint_rot, dt)
        elapsed = (time.perf_counter() - started) * 1000.0
        recorded = self.local_rot.shape[1]
        self.local_rot[tick] = local_rotations(pose.rotations[:recorded], self.parents)
        self.root_translation[tick] = pose.positions[:recorded, self.root]
        self.positions[tick] = pose.positions[0]
        vertical = pose.foot_forces[0, :, 1]
        for name, value in zip(PHYSICS_COLUMNS, (t, pose.tracking_error[0], pose.root_force[0], *vertical, elapsed,
                                                   pose.floor_force[0])):
            self.columns[name][tick] = value

    def motions(self, make_motion, skeleton: dict, dt: float, name: str) -> list:
        """The recorded characters' simulated motions (`make_motion`: the drive's `motion_from_poses`)."""
        return [make_motion(skeleton, self.local_rot[:, b], self.root_translation[:, b], dt,
                            source=f"{name} (physics)" if b == 0 else f"{name} character {b} (physics)")
                for b in range(self.local_rot.shape[1])]

    def finish(self, result, make_motion, skeleton: dict, save, out_dir=None):
        """The drive's result with the simulated body as its motion (and `joint_positions`) and the
        runtime's beside it (`kinematic_motion`); with `out_dir`, motion.bvh is the simulated body,
        kinematic.bvh the runtime's pose, physics.csv the per-tick figures (`save`: `bvh.save`)."""
        motions = self.motions(make_motion, skeleton, result.dt, result.script.name)
        kinematic = result.motion
        result = dataclasses.replace(result, motion=motions[0], joint_positions=self.positions.copy(),
                                     crowd_motions=motions if result.crowd_motions else [], kinematic_motion=kinematic,
                                     physics_log=self.columns)
        if out_dir is not None:
            out_dir = Path(out_dir)
            files = dict(result.files)
            save(motions[0], files.get("bvh", out_dir / "motion.bvh"))
            files["kinematic_bvh"] = out_dir / "kinematic.bvh"
            save(kinematic, files["kinematic_bvh"])
            files["physics_log"] = out_dir / "physics.csv"
            write_physics_log(files["physics_log"], self.columns)
            if "crowd" in files:  # the drive wrote the kinematic poses there: they move to crowd/kinematic/
                folder = out_dir / "crowd" / "kinematic"
                folder.mkdir(parents=True, exist_ok=True)
                files["crowd_kinematic"] = [folder / Path(path).name for path in files["crowd"]]
                for path, moved, motion in zip(files["crowd"], files["crowd_kinematic"], motions):
                    Path(path).replace(moved)
                    save(motion, path)
            result.files = files
        return result


def write_physics_log(path, columns: dict) -> None:
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(PHYSICS_COLUMNS)
        for row in zip(*(columns[name] for name in PHYSICS_COLUMNS)):
            writer.writerow([f"{float(v):.6g}" for v in row])


def physics_summary(result) -> str:
    """One line about a drive's simulated body (`pfnn-drive --physics` prints it)."""
    columns = result.physics_log
    error = 100.0 * np.asarray(columns["tracking_error_m"])
    return (f"  physics: tracking error median {np.median(error):.1f} cm (p95 {np.percentile(error, 95):.1f}), root help "
            f"median {np.median(columns['root_force_n']):.0f} N, {np.median(columns['physics_ms']):.2f} ms per tick -> "
            f"{result.files.get('kinematic_bvh', 'kinematic.bvh')}, {result.files.get('physics_log', 'physics.csv')}")
