"""The seam report: what each piece and join became (`PieceResult`, `JoinResult`, `EditResult` with its
printed and JSON forms) and its measures: foot skating at each join, over the same time in the source
clips and over the whole source clips, with the evaluation's measure (`pfnn_core.evaluation.measures`)
against the pieces' capture floor; the output's and the clips' largest root step; pose pops."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfnn_core.data.statistics import floor_heights
from pfnn_core.editing.clips import PreparedClip
from pfnn_core.editing.document import EditList
from pfnn_core.editing.matching import JoinMatch
from pfnn_core.evaluation import measures
from pfnn_core.motion import bvh
from pfnn_core.skeleton import hips_joint

# Report: foot skating over SEAM_WINDOW_S centred on each join's twin frame (the instant the pieces share).
SEAM_WINDOW_S = 0.5


def _steps(skating: measures.Skating, start: int, stop: int) -> measures.Skating:
    """The steps start..stop-1 (clipped to the motion) of a skating measurement."""
    window = slice(max(start, 0), max(stop, 0))
    return measures.Skating(skating.weight[window], skating.speed[window], skating.contact[window])


@dataclass
class PieceResult:
    file: str
    clip: PreparedClip
    first_frame: int  # chosen frames of the prepared clip
    last_frame: int
    nominal_first: int
    nominal_last: int
    output_start: int  # output frame of the piece's first frame

    @property
    def start(self) -> float:
        return self.first_frame * self.clip.source_frame_time

    @property
    def end(self) -> float:
        return self.last_frame * self.clip.source_frame_time


@dataclass
class JoinResult:
    match: JoinMatch
    seam_frame: int  # output frame where the incoming piece begins (the frame after the twin)
    moved_out_s: float  # source seconds the cuts moved from where they were asked
    moved_in_s: float
    seam_skating: float  # m/s over SEAM_WINDOW_S around the join (`measures.foot_skating`)
    source_skating: float  # m/s over the same time in the source clips (before the cut, after it)


@dataclass
class EditResult:
    edit: EditList
    motion: bvh.Motion
    pieces: list
    joins: list
    contacts: np.ndarray  # [F, 4] the sources' contact labels on the output frames
    mocap_skating: float  # m/s over the whole source clips, same measure
    root_step_max: float  # m, largest frame-to-frame step of the output's control root
    source_root_step_max: float  # m, the same over the source clips
    max_trend_deviation: float  # m, largest distance of a joint from its 3-frame trend
    source_max_trend_deviation: float  # m, the same over the pieces in their source clips
    pops: int  # frames with a joint more than measures.POP_DISTANCE off its trend (`measures.pose_pops`)
    written: str = ""

    def report_lines(self) -> list[str]:
        edit, motion = self.edit, self.motion
        lines = [f"{edit.name}: {len(self.pieces)} pieces, {motion.num_frames} frames ({motion.duration:.2f} s at "
                 f"{edit.fps:g} fps), {edit.transition_kind} {edit.transition_seconds:g} s, match {edit.match}"
                 + (f" within {edit.search_seconds:g} s" if edit.match == "phase" else "")]
        lines.append("piece  start     end  speed  mirror  output frames  file")
        for index, piece in enumerate(self.pieces):
            source = self.edit.pieces[index]
            lines.append(f"{index:>5}  {piece.start:6.2f}  {piece.end:6.2f}  {source.speed:5.2f}  "
                         f"{'yes' if source.mirror else 'no':>6}  {piece.output_start:>6}-"
                         f"{piece.output_start + piece.last_frame - piece.first_frame:<6}  "
                         f"{Path(piece.file).name}")
        if self.joins:
            lines.append("join   cut out (s)  cut in (s)  moved out/in (s)  phase diff  contacts agree  "
                         "skating seam / source (m/s)")
        for index, join in enumerate(self.joins):
            out_piece, in_piece = self.pieces[index], self.pieces[index + 1]
            lines.append(f"{index}->{index + 1}  {out_piece.end:11.3f}  {in_piece.start:10.3f}  "
                         f"{join.moved_out_s:+7.2f} / {join.moved_in_s:+5.2f}  {join.match.phase_difference:10.3f}  "
                         f"{join.match.contacts_agree:>12}/4  {join.seam_skating:13.3f} / {join.source_skating:.3f}")
        lines.append(f"foot skating of the source clips: {self.mocap_skating:.3f} m/s; root step max "
                     f"{100 * self.root_step_max:.1f} cm (source clips {100 * self.source_root_step_max:.1f} cm); "
                     f"pose pops {self.pops} (largest trend deviation {100 * self.max_trend_deviation:.1f} cm, "
                     f"source clips {100 * self.source_max_trend_deviation:.1f} cm)")
        if self.written:
            lines.append(f"wrote {self.written}")
        return lines

    def report_dict(self) -> dict:
        return {
            "name": self.edit.name, "frames": self.motion.num_frames, "fps": self.edit.fps,
            "pieces": [{"file": p.file, "start": p.start, "end": p.end, "output_start": p.output_start}
                       for p in self.pieces],
            "joins": [{"cut_out_s": self.pieces[i].end, "cut_in_s": self.pieces[i + 1].start,
                       "cut_out_frame": j.match.out_frame, "cut_in_frame": j.match.in_frame,
                       "moved_out_s": j.moved_out_s, "moved_in_s": j.moved_in_s, "seam_frame": j.seam_frame,
                       "phase_difference": j.match.phase_difference, "contacts_agree": j.match.contacts_agree,
                       "seam_skating": j.seam_skating, "source_skating": j.source_skating}
                      for i, j in enumerate(self.joins)],
            "mocap_skating": self.mocap_skating, "root_step_max": self.root_step_max,
            "source_root_step_max": self.source_root_step_max, "pops": self.pops,
            "max_trend_deviation": self.max_trend_deviation,
            "source_max_trend_deviation": self.source_max_trend_deviation, "written": self.written,
        }


def measure(edit, motion, clips, pieces, matches, seams, contacts) -> EditResult:
    """The report's measures: foot skating against the pieces' capture floor (each contact joint's
    planted height over the clips' labelled contacts, `floor_heights`) with the evaluation's
    measure, at each join and over the source clips; root steps; pose pops."""
    dt = 1.0 / edit.fps
    feet = clips[0].labels.contact_joints
    floor = np.asarray(floor_heights([(c.labels.global_positions[:, feet, 1], c.labels.contacts)
                                               for c in clips]))
    source_clips = {id(c): c for c in clips}
    source_skating = {key: measures.foot_skating(c.labels.global_positions[:, feet], floor, dt)
                      for key, c in source_clips.items()}
    positions = motion.global_positions()
    output_skating = measures.foot_skating(positions[:, feet], floor, dt)
    half = int(round(0.5 * SEAM_WINDOW_S * edit.fps))
    joins = []
    for index, (match, seam) in enumerate(zip(matches, seams)):
        twin = seam - 1  # the output frame of the instant both pieces share
        out_clip, in_clip = clips[index], clips[index + 1]
        source = measures.pool_skating([_steps(source_skating[id(out_clip)], match.out_frame - half, match.out_frame),
                                        _steps(source_skating[id(in_clip)], match.in_frame, match.in_frame + half)])
        moved_out = (match.out_frame - pieces[index].nominal_last) * out_clip.source_frame_time
        moved_in = (match.in_frame - pieces[index + 1].nominal_first) * in_clip.source_frame_time
        joins.append(JoinResult(match, seam, moved_out, moved_in,
                                _steps(output_skating, twin - half, twin + half).mean(), source.mean()))
    mocap = measures.pool_skating(source_skating.values()).mean()
    root_xz = positions[:, hips_joint(motion.names, motion.parents), [0, 2]]
    step = float(np.linalg.norm(np.diff(root_xz, axis=0), axis=-1).max()) if len(root_xz) > 1 else 0.0
    source_step = max(float(np.linalg.norm(np.diff(c.labels.root_xz, axis=0), axis=-1).max()) if c.num_frames > 1 else 0.0
                      for c in clips)
    deviation = measures.trend_deviation(positions)
    source_deviation = max(float(measures.trend_deviation(p.clip.labels.global_positions[p.first_frame:p.last_frame + 1]).max())
                           for p in pieces)
    return EditResult(edit, motion, pieces, joins, contacts, mocap, step, source_step,
                      float(deviation.max()) if deviation.size else 0.0, source_deviation,
                      int(measures.pose_pops(positions).sum()))
