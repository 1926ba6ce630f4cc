"""Motion matching as a motion model (`base.MotionModel`): play database frames, search every so often for
the frame that best fits the pose being played and the trajectory asked for, and switch to it with an
inertialized transition [Clavet 2016; Holden's Motion-Matching demo].

Each tick, per character: the playback moves on by dt (between the database's rows, `frame_step`
frames of 60 Hz apart); a search runs when `matching_search_interval` has passed since the last one,
at once when the asked-for trajectory changed sharply (`SHARP_MOVE`, `SHARP_TURN`), when a clip runs
out, and at the first tick. A query is the played frame's pose features with the planned trajectory
(`matching_features`); the planned future is the command springs' prediction alone (`blend_weights`),
and at a start or a stop the body's velocities come from it too (`queries`). The search
(`matching_search`) looks in the character's style, and in every style when the style's best frame
misses the asked path by more than `TRAJECTORY_MISS` (most styles have no side-step). The frame playing
(or one within `NEAR_ROWS` of it in its clip) being the best, or the best not `SWITCH_MARGIN` cheaper,
nothing changes; otherwise the character switches there (`matching_inertialize`). Gait and strafing
need no input of their own: the trajectory's speed and facings select runs, walks and side-steps. With
the gait rule on (the live `matching_gait_rule`) the path's speed at its end, seen without the runtime's
slow-walk warp (`asked_gait`, the warp from `ModelInput.warp`), also restricts the search to walking or to run clips.

`load_matching_checkpoint` reads the file `matching_build` writes; the runtime reaches no training or
data-building code from here.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pfnn_core.features.contract import RUN_FADE, SIM_FPS, TRAJ_OFFSETS
from pfnn_core.math.mat3 import njit
from pfnn_core.models.base import ModelInput, ModelOutput, MotionModel
from pfnn_core.models.checkpoint import Checkpoint, CheckpointError, card_of, layout_of, stored_meta
from pfnn_core.models.matching.database import KIND, MatchingConfig, MatchingDatabase
from pfnn_core.models.matching.features import (
    FEATURE_GROUPS,
    POSE_PART,
    TRAJECTORY_PART,
    VELOCITY_PART,
    Normalisation,
    asked_trajectory,
    asked_velocities,
    asks_to_stand,
    default_weights,
    pose_features,
    sharp_change,
    weight_vector,
)
from pfnn_core.models.matching.inertialize import output_starts, play_kernel
from pfnn_core.models.matching.search import ANY_GAIT, RUN, WALK, MatchingIndex

NEAR_ROWS = 2  # a best frame this many rows from the one playing, in its clip, is the one playing
SHARP_MOVE = 0.3  # m: a trajectory sample this far from where it was at the last search searches at once
SHARP_TURN = math.radians(30.0)  # ... or a facing this many radians turned
STAND_DISTANCE = 0.2  # m: an asked trajectory ending this near the root at +1 s asks to stand
REST_STEP = 0.05  # m: ... or one covering less than this in its last third of a second (at rest: a stop)
TRAJECTORY_MISS = 10.0  # d^2 of the trajectory groups: a style's best frame missing the path by more borrows
SWITCH_MARGIN = 0.2  # a found frame must cost this share less than the one playing to switch to it
# The gait rule (`matching_gait_rule`, a live setting: a walk searched among walking clips only, a run
# among run clips; `asked_gait`, `search.GAIT_ROWS`): see assets/models/matching.md for what it changes.
DEFAULT_GAIT_RULE = True  # without the live setting
RUN_SPEED = sum(RUN_FADE) / 2.0  # m/s: the asked path's speed at its end above which it asks a run (1.9)
DEFAULT_INTERVAL = 0.1  # s, without the live setting
DEFAULT_HALFLIFE = 0.1  # s


def load_matching_checkpoint(path: Path, info: dict, tensors: dict, device="cpu") -> Checkpoint:
    """A motion-matching database's checkpoint; CheckpointError naming the file and the field or tensor."""
    path = Path(path)
    config = MatchingConfig.from_meta(path, info.get(KIND))
    layout = layout_of(path, info)
    meta = stored_meta(info)
    card = card_of(path, meta, layout, None, KIND)
    database = MatchingDatabase.from_tensors(path, tensors, len(card.names), config.frame_step, config.gait_of_clips())
    segments = database.segments
    if (segments[:, 2] < 0).any() or (segments[:, 2] >= len(config.clips)).any():
        raise CheckpointError(f"{path}: tensor 'matching.segments' names a clip beyond matching.clips")
    if (segments[:, 3] < 0).any() or (segments[:, 3] >= max(card.num_styles, 1)).any():
        raise CheckpointError(f"{path}: tensor 'matching.segments' names a style beyond styles.names")
    if not database.candidates.any():
        raise CheckpointError(f"{path}: the matching database has no frame to search")
    # The checkpoint's model is the database with its mirrored rows: made once, shared read-only by every
    # `MatchingModel` built from this checkpoint (each drive of an evaluation, a model swapped back).
    # The file's tensors are not kept: the database holds what they hold.
    return Checkpoint(model=database.with_mirrored() if config.mirrored else database, config=config, layout=layout,
                      norm={}, meta=meta, path=path, kind=KIND, card=card)


@njit
def playback_step(row, frac, advance, segment_end, standing, clock, interval, trajectory, last_trajectory, sharp_move,
                  sharp_cosine, out_row, out_frac, out_search):
    """Per character: the playback moved on by `advance` rows (held at its segment's last row), and
    whether it searches this tick: at its first tick, when a moving clip ran out, when `interval` has
    passed since the last search (`clock`, s) or at a sharp change of the asked-for trajectory."""
    for b in range(row.shape[0]):
        if row[b] < 0:
            out_row[b], out_frac[b], out_search[b] = 0, 0.0, True
            continue
        position = frac[b] + advance
        steps = int(math.floor(position))
        end = segment_end[row[b]]
        at_end = row[b] + steps >= end
        out_row[b] = end if at_end else row[b] + steps
        out_frac[b] = 0.0 if at_end else position - steps
        out_search[b] = ((at_end and not standing[end]) or clock[b] >= interval - 1e-9
                         or sharp_change(trajectory[b], last_trajectory[b], sharp_move, sharp_cosine))


@njit
def gather_rows(current, found, fresh, segment_end, out):
    """[B, 4] the rows the kernel reads: the playing row and its next, the found row and its next (a
    character's first tick plays its found row)."""
    for b in range(current.shape[0]):
        playing = found[b] if fresh[b] else current[b]
        out[b, 0], out[b, 1] = playing, min(playing + 1, segment_end[playing])
        out[b, 2], out[b, 3] = found[b], min(found[b] + 1, segment_end[found[b]])


def ran_out(rows: np.ndarray, segment_end: np.ndarray, standing: np.ndarray) -> np.ndarray:
    """[B] bool: the rows are the last of a moving clip (the playback holds there until it switches)."""
    return (rows == segment_end[rows]) & ~standing[rows]


def asked_gait(x: np.ndarray, x_layout, warp: np.ndarray | None) -> np.ndarray:
    """[B] WALK or RUN: the gait the model input's planned trajectory asks, by its speed at its end
    (+40 to +50 frames) against `RUN_SPEED`, seen without the runtime's slow-walk speed warp.

    The runtime shows a model a path slower than its slow-walk threshold sped up by `warp` [B]
    (`runtime.root_motion.speed_warp`, 1 when not warped; None: no warp), positions and gait labels alike:
    at a start from standing every sample is up to 3x as far, and a walk asked from standing read as a
    run (the search then found a run clip's start and played on into its flight, both feet up). The end's
    speed is divided by the warp the runtime applied."""
    positions = x_layout.unpack(x)["traj_pos"]
    end = np.linalg.norm(positions[:, TRAJ_OFFSETS.index(50)] - positions[:, TRAJ_OFFSETS.index(40)], axis=-1)
    end = end * (SIM_FPS / 10.0)  # m per 10 frames -> m/s
    if warp is not None:
        end = end / np.maximum(np.asarray(warp, float), 1.0)
    return np.where(end > RUN_SPEED, RUN, WALK)


def live_weights(settings) -> np.ndarray:
    """[27] the group weights of the live settings (`matching_weight_<group>`; the defaults without them)."""
    return weight_vector({g.name: getattr(settings, f"matching_weight_{g.name}", g.weight) for g in FEATURE_GROUPS})


class MatchingModel(MotionModel):
    """A motion-matching database on the CPU (the motion-model interface, `models/base.py`)."""

    kind = KIND
    backend = "numpy"

    def __init__(self, checkpoint, device: str = "auto", backend: str = "auto"):
        super().__init__(checkpoint, "cpu")
        self.config: MatchingConfig = checkpoint.config
        self.database: MatchingDatabase = checkpoint.model
        self.normalisation = Normalisation.of(self.database.features)
        self.index = MatchingIndex(self.database, self.normalisation, self.num_styles)
        self.index.set_weights(weight_vector(default_weights()))
        self.feet = (self.contact_joints[0], self.contact_joints[2])
        self.starts = output_starts(self.y_layout)
        self._future_pos, self._future_dir = self.y_layout.slice("future_pos"), self.y_layout.slice("future_dir")
        self._mean_pose = None

    def prepare(self, settings, style) -> None:
        """The search trees a character in `style` [S] takes first (its style's, every style's for a
        borrowed side-step, the standing rows'), of the gaits the rule asks, built now: built at the first
        search instead, they stood a viewer's first step still for 0.3-0.6 s."""
        self.index.set_weights(live_weights(settings))
        rule = getattr(settings, "matching_gait_rule", DEFAULT_GAIT_RULE)
        styles = [-1] + ([int(s) for s in np.flatnonzero(np.asarray(style) > 0.0)] if self.num_styles else [])
        self.index.prepare(styles, (WALK, RUN) if rule else (ANY_GAIT,))

    # ---- state ------------------------------------------------------------------------------------
    def initial_model_state(self, batch: int) -> dict:
        """Per character: the row playing (-1: none yet) and how far toward the next, the time since the
        last search, the transition offsets, the pose and root motion shown last tick, and the last
        search (its trajectory, cost, distance) and the switches made (for overlays)."""
        joints = self.num_joints
        return {"row": np.full(batch, -1, np.int64), "frac": np.zeros(batch), "clock": np.zeros(batch),
                "rot_offset": np.zeros((batch, joints, 3)), "rot_offset_vel": np.zeros((batch, joints, 3)),
                "hips_offset": np.zeros((batch, 3)), "hips_offset_vel": np.zeros((batch, 3)),
                "root_offset": np.zeros((batch, 3)), "root_offset_vel": np.zeros((batch, 3)),
                "last_pos": np.zeros((batch, joints, 3)), "last_root": np.zeros((batch, 3)),
                "has_last": np.zeros(batch, bool), "search_traj": np.zeros((batch, 12)),
                "search_cost": np.full(batch, np.nan), "search_distance": np.full(batch, np.nan),
                "switches": np.zeros(batch, np.int64)}

    def mean_pose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A standing frame's pose (the one nearest the standing frames' mean), velocities zero."""
        if self._mean_pose is None:
            database = self.database
            rows = np.flatnonzero(database.row_standing & database.candidates)
            rows = rows if len(rows) else np.flatnonzero(database.candidates)
            pose = database.features[rows][:, POSE_PART]
            row = int(rows[np.argmin(np.linalg.norm(pose - pose.mean(axis=0), axis=1))])
            state = self.initial_model_state(1)
            y = self._play(np.array([[row, row, row, row]]), np.zeros(1), np.zeros(1, bool), state, 1.0 / 60.0,
                           DEFAULT_HALFLIFE)
            parts = self.y_layout.unpack(y)
            self._mean_pose = (parts["joint_pos"][0].copy(), np.zeros((self.num_joints, 3)),
                               parts["joint_rot"][0].copy())
        return self._mean_pose

    def blend_weights(self, bias: float, bias_strafe: float) -> np.ndarray:
        """[2, F] all ones: the planned future is the command springs' prediction alone, not blended with
        the future answered last tick. The query is matched on the trajectory asked for now, as in
        Holden's demo; blended with the last answer (the PFNN's rule) it lagged the stick by several
        searches, and the frame playing kept winning after a start or a stop."""
        return np.ones((2, len(self.future_offsets)))

    # ---- the tick ----------------------------------------------------------------------------------
    def predict_batch(self, inputs: ModelInput) -> ModelOutput:
        settings, dt, database = inputs.settings, float(inputs.dt), self.database
        state = {name: np.array(value, copy=True) for name, value in inputs.state.items()}
        batch = len(inputs.x)
        trajectory, future_pos, future_dir = asked_trajectory(inputs.x, self.x_layout)
        state["clock"] += dt
        current, frac, searching = np.empty(batch, np.int64), np.empty(batch), np.empty(batch, bool)
        playback_step(state["row"], state["frac"], dt / database.row_dt, database.segment_end, database.row_standing,
                      state["clock"], float(getattr(settings, "matching_search_interval", DEFAULT_INTERVAL)),
                      trajectory, state["search_traj"], SHARP_MOVE, math.cos(SHARP_TURN), current, frac, searching)
        fresh = state["row"] < 0
        gait = None
        if getattr(settings, "matching_gait_rule", DEFAULT_GAIT_RULE):
            gait = asked_gait(inputs.x, self.x_layout, inputs.warp)
        found, switch = self._search(inputs, state, current, fresh, searching, trajectory, gait)
        gathered = np.empty((batch, 4), np.int64)
        gather_rows(current, found, fresh, database.segment_end, gathered)
        switch &= ~fresh
        y = self._play(gathered, frac, switch, state, dt, float(getattr(settings, "matching_halflife", DEFAULT_HALFLIFE)))
        # The future answered is the one asked for: the played frame's own would hold the character to its
        # clip (the runtime blends the answer into the next tick's trajectory, so a walking character asked
        # to stop kept being asked to walk).
        y[:, self._future_pos] = future_pos.reshape(batch, -1)
        y[:, self._future_dir] = future_dir.reshape(batch, -1)
        state["row"] = gathered[:, 2]
        state["frac"] = np.where(switch | fresh, 0.0, frac)
        state["switches"] += switch
        return ModelOutput(y, state)

    def queries(self, rows: np.ndarray, trajectory: np.ndarray) -> np.ndarray:
        """[B, 27] the queries of characters playing `rows` [B] asked for `trajectory` [B, 12]: the pose
        groups of the frame playing and the trajectory asked. At a start or a stop (the frame standing and
        the trajectory moving, or the reverse) the body's velocities come from the asked trajectory
        (`asked_velocities`): the data holds no starts or stops, so velocities of rest matched against
        moving frames (or of a walk against standing ones) kept the character in what it played."""
        database = self.database
        queries = np.empty((len(rows), database.features.shape[1]))
        queries[:, POSE_PART] = database.features[rows, POSE_PART]
        queries[:, TRAJECTORY_PART] = trajectory
        changing = database.row_standing[rows] != asks_to_stand(trajectory, STAND_DISTANCE, REST_STEP)
        queries[changing, VELOCITY_PART] = asked_velocities(trajectory[changing])
        return queries

    def _search(self, inputs: ModelInput, state: dict, current, fresh, searching, trajectory, gait=None):
        """(found row [B], switch [B] bool) of the characters `searching` [B] (asking `gait` [B], WALK or
        RUN; None: any): their queries, the search and the rule for keeping the frame playing (the others
        keep theirs); the state's clock and last-search fields are updated in place."""
        database, settings = self.database, inputs.settings
        found = current.copy()
        switch = np.zeros(len(current), bool)
        who = np.flatnonzero(searching)
        if len(who) == 0:
            return found, switch
        queries = self.queries(current[who], trajectory[who])
        new = fresh[who]
        if new.any():
            x = self.x_layout.unpack(inputs.x[who[new]])
            queries[new, POSE_PART] = pose_features(x["joint_pos"], x["joint_vel"], self.feet, self.anchor)
        self.index.set_weights(live_weights(settings))
        result = self.index.search_borrowing(queries, None if inputs.style is None else inputs.style[who],
                                             TRAJECTORY_PART, TRAJECTORY_MISS, None if gait is None else gait[who])
        # a stop: the frame playing moves and the path asked comes to rest. The data holds no stops, and a
        # moving frame kept winning for 0.3-0.45 s (its foot groups fit, and a side-walk's body turned
        # toward its motion fits the kept facing better than any standing frame): the best standing
        # frame is taken at once, the switch's inertialization makes the stop.
        stopping = ~database.row_standing[current[who]] & asks_to_stand(trajectory[who], STAND_DISTANCE, REST_STEP) & ~new
        if stopping.any():
            standing = self.index.search_standing(queries[stopping])
            result.rows[stopping], result.cost[stopping] = standing.rows, standing.cost
            result.distance[stopping] = standing.distance
        # a moving clip that ran out is held at its last frame: it must be left, or the pose stands frozen
        # while the root moves on (a held end frame cost little more than the best, and a strafe slid a
        # statue for 2.2 s)
        keep = ~new & ~ran_out(current[who], database.segment_end, database.row_standing)
        near = ((database.segment_of[result.rows] == database.segment_of[current[who]])
                & (np.abs(result.rows - current[who]) <= NEAR_ROWS) & keep)
        # the frame playing goes on unless the best is clearly better: a switch costs a blend (and its pops)
        near |= (self.index.cost_of(queries, current[who]) * (1.0 - SWITCH_MARGIN) <= result.cost) & keep & ~stopping
        found[who] = np.where(near, current[who], result.rows)
        switch[who] = ~near
        state["clock"][who] = 0.0
        state["search_traj"][who] = trajectory[who]
        state["search_cost"][who], state["search_distance"][who] = result.cost, result.distance
        return found, switch

    def _play(self, gathered: np.ndarray, frac: np.ndarray, switch: np.ndarray, state: dict, dt: float,
              halflife: float) -> np.ndarray:
        """The output rows y [B, ny] from the gathered rows [B, 4] (current, next, found, next); the
        state's offsets and last pose are updated in place."""
        database, plan = self.database, self.plan
        batch = len(gathered)
        y = np.zeros((batch, self.y_layout.size))
        out_pos, out_root = np.empty((batch, self.num_joints, 3)), np.empty((batch, 3))
        play_kernel(database.rotations[gathered].astype(np.float64), database.hips[gathered].astype(np.float64),
                    database.root_motion[gathered].astype(np.float64), database.contacts[gathered].astype(np.float64),
                    database.phase[gathered].astype(np.float64),
                    np.ascontiguousarray(frac, np.float64), np.ascontiguousarray(switch), database.row_dt,
                    float(database.frame_step), halflife, dt, state["rot_offset"], state["rot_offset_vel"],
                    state["hips_offset"], state["hips_offset_vel"], state["root_offset"], state["root_offset_vel"],
                    state["last_pos"], state["last_root"], state["has_last"], plan.parents, plan.offsets,
                    int(plan.anchor), plan.down_order, plan.above_anchor, self.starts, y, out_pos, out_root)
        state["last_pos"], state["last_root"] = out_pos, out_root
        state["has_last"] = np.ones(batch, bool)
        return y

    # ---- what the viewer shows ---------------------------------------------------------------------
    def now_playing(self, model_state: dict, character: int = 0) -> dict | None:
        """What character `character` plays: its clip, the 60 Hz frame in it, mirrored or not, the last
        search's cost and distance and how many switches it made; None before its first tick."""
        row = int(model_state["row"][character])
        if row < 0:
            return None
        database = self.database
        segment = database.segments[database.segment_of[row]]
        return {"clip": self.config.clips[int(segment[2])], "frame": int(database.source_frame(np.array([row]))[0]),
                "mirrored": bool(segment[6]), "standing": bool(segment[4]),
                "cost": float(model_state["search_cost"][character]),
                "distance": float(model_state["search_distance"][character]),
                "switches": int(model_state["switches"][character])}
