"""Checks of a BVH training set before any training: each problem one message naming the file.

Owns `Finding` (file, severity, message), the per-clip rules (`reference_pose_first_frame`,
`contact_findings`, `too_short_finding`, `speed_finding`), the rules over a whole set
(`duplicate_findings`, `frame_rate_findings`), `output_findings` (can the model be written where asked)
and the repair the dataset builder applies instead of refusing a file: `reorder_joints` (the same
joint names in another order). The dataset builder (`features.build_training_data`) and the data
inspector (`pfnn-data inspect`) both call these rules, so training and inspection report the same.

Severities: 'error' stops training before the first epoch; 'warning' is printed and training goes on;
'note' says what was repaired. Thresholds were set on the bundled data, where none of them fires: the
largest first-frame jump there is 1.1x the clip's own 99th-percentile frame step (a reference pose
jumps tens of centimetres from nowhere), and no joint touches down more than 1.8 times per second.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfnn_core.motion.contacts import DEFAULT_HEIGHT_THRESHOLD, DEFAULT_SPEED_THRESHOLD
from pfnn_core.motion.phase import touchdowns

SEVERITIES = ("error", "warning", "note")
REFERENCE_POSE_MIN_JUMP_M = 0.25  # a first-frame step below this is never called a reference pose
REFERENCE_POSE_RATIO = 3.0  # ... nor one below this many times the clip's 99th-percentile step
MAX_TOUCHDOWNS_PER_S = 3.0  # per contact joint; sprinting is about 2.5 per foot, the bundled data at most 1.8
MIN_TOUCHDOWNS_FRAGMENTED = 4  # fewer touchdowns than this are never "fragmented" (short clips)
PLAUSIBLE_SPEED = (0.05, 6.0)  # m/s mean root speed of a moving clip


@dataclass(frozen=True)
class Finding:
    file: str       # the file (or folder) the message is about
    severity: str   # 'error' | 'warning' | 'note'
    message: str

    def __str__(self) -> str:
        return f"{self.severity.upper()} {self.file}: {self.message}"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "Finding":
        return cls(str(values["file"]), str(values["severity"]), str(values["message"]))


def errors_message(findings) -> str | None:
    """One message listing every error finding, or None when there is none."""
    errors = [f for f in findings if f.severity == "error"]
    if not errors:
        return None
    if len(errors) == 1:
        return f"{errors[0].file}: {errors[0].message}"
    return f"{len(errors)} problems stop training:\n" + "\n".join(f"  {f.file}: {f.message}" for f in errors)


# --- one clip ---------------------------------------------------------------------------------------

def reference_pose_first_frame(global_positions: np.ndarray) -> tuple[bool, float, float]:
    """(is a reference pose, first step m, typical step m) from world joint positions [F, J, 3] (metres).

    A step is the largest joint displacement between two frames, measured about the mean of all joints
    so that moving the whole body does not count. CMU-style exports start with a T-pose whose step to
    the first real frame is tens of centimetres, several times any step of the motion itself.
    """
    positions = np.asarray(global_positions, float)
    if len(positions) < 3:
        return False, 0.0, 0.0
    centred = positions - positions.mean(axis=1, keepdims=True)
    steps = np.linalg.norm(np.diff(centred, axis=0), axis=-1).max(axis=-1)
    first, typical = float(steps[0]), float(np.percentile(steps[1:], 99))
    return first > max(REFERENCE_POSE_MIN_JUMP_M, REFERENCE_POSE_RATIO * typical), first, typical


def reference_pose_finding(path, global_positions) -> Finding | None:
    is_reference, first, typical = reference_pose_first_frame(global_positions)
    if not is_reference:
        return None
    return Finding(str(path), "warning",
                   f"the first frame looks like a reference pose (joints jump {first:.2f} m to the next frame, "
                   f"{first / max(typical, 1e-9):.0f}x the clip's largest usual step of {typical:.2f} m); "
                   "it is left out of the training samples")


def too_short_finding(path, duration_s: float, min_s: float) -> Finding | None:
    if duration_s >= min_s:
        return None
    return Finding(str(path), "error", f"clip too short to window ({duration_s:.2f} s < {min_s} s)")


def speed_finding(path, mean_speed: float, standing: bool) -> Finding | None:
    """A mean root speed no person walks at: a wrong Frame Time or wrong units make every speed wrong."""
    low, high = PLAUSIBLE_SPEED
    if standing:
        low = 0.0  # standing clips are meant to be slow
    if low <= mean_speed <= high:
        return None
    return Finding(str(path), "warning", f"mean root speed {mean_speed:.2f} m/s is implausible (walking is 1-2 m/s); "
                                         "check the Frame Time and units")


def contact_findings(path, contacts: np.ndarray, fps: float, joint_names) -> list[Finding]:
    """No contacts on a foot, or contacts broken into many short pieces, from contact labels [F, 4]
    (left foot, left toe, right foot, right toe, as `features.CONTACT_NAMES`) at `fps`."""
    contacts = np.asarray(contacts, bool)
    findings = []
    missing = [side for side, columns in (("left", [0, 1]), ("right", [2, 3])) if not contacts[:, columns].any()]
    if missing:
        which = "either foot" if len(missing) == 2 else f"the {missing[0]} foot"
        findings.append(Finding(str(path), "warning",
                                f"no foot contacts detected on {which}: its joints never stay within "
                                f"{DEFAULT_HEIGHT_THRESHOLD * 100:.0f} cm of their planted height while slower "
                                f"than {DEFAULT_SPEED_THRESHOLD} m/s (feet sliding, wrong units or Frame Time?); "
                                "the phase falls back to the root height"))
    duration = len(contacts) / fps
    if duration <= 0:
        return findings
    for column, name in enumerate(joint_names):
        count = len(touchdowns(contacts[:, column]))
        if count >= MIN_TOUCHDOWNS_FRAGMENTED and count / duration > MAX_TOUCHDOWNS_PER_S:
            findings.append(Finding(str(path), "warning",
                                    f"fragmented contacts on {name}: {count / duration:.1f} touchdowns per second "
                                    f"(a person manages about 2.5); jittery foot heights or noisy data?"))
    return findings


# --- a whole set ------------------------------------------------------------------------------------

def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def duplicate_findings(digests: dict) -> list[Finding]:
    """Files with the same (decompressed) content as an earlier file. `digests`: path -> content digest."""
    first_with: dict[str, str] = {}
    findings = []
    for path, digest in digests.items():
        if digest in first_with:
            findings.append(Finding(str(path), "warning",
                                    f"same content as {first_with[digest]} (a duplicate: its frames count twice, "
                                    "and the copies can land on both sides of the train/validation split)"))
        else:
            first_with[digest] = str(path)
    return findings


def frame_rate_findings(rates: dict, where: str = "data set") -> list[Finding]:
    """One warning when the files' frame rates differ. `rates`: path -> frames per second."""
    by_rate: dict[float, list[str]] = {}
    for path, fps in rates.items():
        by_rate.setdefault(round(float(fps), 2), []).append(Path(path).name)
    if len(by_rate) < 2:
        return []
    groups = sorted(by_rate.items(), key=lambda item: -len(item[1]))
    described = []
    for fps, names in groups:
        listed = "" if names is groups[0][1] else ": " + ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")
        described.append(f"{fps:g} fps ({len(names)} file{'s' if len(names) > 1 else ''}{listed})")
    return [Finding(where, "warning", f"frame rates differ: {'; '.join(described)}; every clip is resampled to the "
                                      "simulation rate, so this only matters if a Frame Time is wrong")]


def output_findings(out) -> list[Finding]:
    """An error when the model cannot be written at `out` (a folder there, no permission, a file where a
    folder should be). Creates the missing folders, as saving would."""
    out = Path(out)
    if out.is_dir():
        return [Finding(str(out), "error", "the output path is a folder; give a file name such as model.safetensors")]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=".pfnn-write-test-"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        return [Finding(str(out), "error", f"cannot write the model there ({reason}); choose another --out")]
    if out.exists() and not os.access(out, os.W_OK):
        return [Finding(str(out), "error", "the existing file is read-only; choose another --out")]
    return []


# --- repairs ----------------------------------------------------------------------------------------

def same_joints_other_order(names, reference_names) -> bool:
    return list(names) != list(reference_names) and sorted(names) == sorted(reference_names) \
        and len(set(names)) == len(names)


def reorder_joints(motion, reference_names):
    """The motion with its joints in `reference_names`' order (the same names in another order, as when a
    tool writes the right leg before the left). Returns the motion unchanged when the names are not a
    permutation, or when the new order would put a child before its parent (another hierarchy): the
    skeleton check then reports the difference."""
    if not same_joints_other_order(motion.names, reference_names):
        return motion
    order = np.array([motion.names.index(name) for name in reference_names])
    new_index = np.empty_like(order)
    new_index[order] = np.arange(len(order))
    parents = np.array([-1 if motion.parents[old] < 0 else new_index[motion.parents[old]] for old in order])
    if np.any(parents >= np.arange(len(parents))):
        return motion
    return dataclasses.replace(
        motion, names=list(reference_names), parents=parents, offsets=np.asarray(motion.offsets)[order],
        channels=[list(motion.channels[old]) for old in order], rotations=motion.rotations[:, order],
        positions=motion.positions[:, order],
        end_sites={int(new_index[joint]): offset for joint, offset in motion.end_sites.items()})


def reorder_finding(path, reference_path) -> Finding:
    return Finding(str(path), "note", f"same joints as {reference_path} in another order; reordered to match")
