"""The network alone on held-out mocap clips: its contacts and phase against the clip's labels.

Owns `Rollout`, `rollout_on_clip` (trajectory from the mocap, the network's own pose and phase fed
back), `held_out_rollouts` and `phase_rows`. The root path integrated from the network's velocities is
compared with the mocap's too ("trajectory correlation": weak, a straight line scores 0.998; kept
under its true name).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pfnn_core.evaluation import measures, metrics
from pfnn_core.evaluation.analysis import (
    MAX_PHASE_DRIFT,
    MIN_CONTACT_F1,
    MIN_TRAJECTORY_CORRELATION,
    PHASE_ROLLOUT_S,
    Row,
    at_least,
    at_most,
)
from pfnn_core.features import samples
from pfnn_core.features.contract import SIM_FPS
from pfnn_core.features.layout import ModelLayout
from pfnn_core.features.samples import ClipFeatures
from pfnn_core.models.base import ModelInput
from pfnn_core.models.registry import build_model
from pfnn_core.runtime.settings import RuntimeSettings

CONTACT_THRESHOLD = 0.5


@dataclass
class Rollout:
    clip: str
    predicted_contacts: np.ndarray   # [T, 4] bool (network output > 0.5)
    labelled_contacts: np.ndarray    # [T, 4] bool
    network_phase: np.ndarray        # [T]
    labelled_phase: np.ndarray       # [T]
    predicted_path: np.ndarray       # [T + 1, 2]
    mocap_path: np.ndarray           # [T + 1, 2]
    dt: float

    @property
    def contact_f1(self) -> float:
        return measures.contact_f1(self.predicted_contacts, self.labelled_contacts)

    def phase_drift_at(self, seconds: float) -> float:
        frame = min(int(round(seconds / self.dt)), len(self.network_phase) - 1)
        return float(measures.phase_drift(self.network_phase[frame], self.labelled_phase[frame]))

    @property
    def correlation(self) -> float:
        return float(metrics.phase_consistency(self.predicted_path, self.mocap_path))


def rollout_on_clip(model, clip: ClipFeatures, name: str, style=None, settings=None) -> Rollout:
    """Run a motion model (any kind: `models.base.MotionModel.step`) through a clip at the simulation
    rate: the input trajectory from the mocap, the model's own pose fed back, its phase advanced by its
    own dphase from the clip's first phase. `style`: the clip's style weights [S] for a style model;
    `settings`: the live settings the model reads (default: the bare network's)."""
    x_layout, y_layout = model.x_layout, model.y_layout
    settings = settings if settings is not None else RuntimeSettings.bare_network(model.card)
    state = model.initial_model_state(1)
    inputs = np.array(clip.x, dtype=np.float64)
    predictions = np.empty((len(inputs), y_layout.size))
    phases = np.empty(len(inputs))
    phase = float(clip.phase[0])
    pose = None
    style_batch = None if style is None else np.asarray(style, float)[None]
    for i in range(len(inputs)):
        x = inputs[i:i + 1].copy()
        if pose is not None:
            parts = x_layout.unpack(x)
            parts["joint_pos"][...] = pose[0]
            parts["joint_vel"][...] = pose[1]
        phases[i] = phase
        y, state = model.step(ModelInput(x, np.array([phase]), style_batch, state, settings, 1.0 / SIM_FPS))
        predictions[i] = y[0]
        outputs = y_layout.unpack(y)
        pose = (np.array(outputs["joint_pos"]), np.array(outputs["joint_vel"]))
        phase = (phase + float(np.clip(outputs["dphase"][0, 0], 0.0, 0.5))) % 1.0

    def root_path(y):
        parts = y_layout.unpack(np.asarray(y, dtype=np.float64))
        return metrics.integrate_root_motion(parts["root_vel"], parts["root_yaw_rate"][..., 0], 1.0 / SIM_FPS)[0]

    predicted = y_layout.unpack(predictions)["contacts"] > CONTACT_THRESHOLD
    labelled = y_layout.unpack(np.asarray(clip.y, np.float64))["contacts"] > CONTACT_THRESHOLD
    return Rollout(clip=name, predicted_contacts=predicted, labelled_contacts=labelled, network_phase=phases,
                   labelled_phase=np.asarray(clip.phase, float), predicted_path=root_path(predictions),
                   mocap_path=root_path(clip.y), dt=1.0 / SIM_FPS)


def held_out_rollouts(checkpoint, clips, count: int) -> list[Rollout]:
    """Rollouts on up to `count` moving held-out clips (reference.MocapClip, spread over styles and kinds)
    at least PHASE_ROLLOUT_S long when any is."""
    from pfnn_core.evaluation.reference import spread
    from pfnn_core.motion import bvh

    model = build_model(checkpoint, device="cpu")
    layouts = ModelLayout(model.x_layout, model.y_layout)
    styles = list(model.style_names)
    num_styles = model.num_styles
    moving = [c for c in clips if c.kind in ("walk", "run", "back", "side")]
    long_enough = [c for c in moving if (len(c.positions) - 1) * c.dt >= PHASE_ROLLOUT_S] or moving
    chosen = [long_enough[i] for i in spread([(c.style, c.kind) for c in long_enough], count)]
    rollouts = []
    for clip in chosen:
        clip_features = samples.clip_features(bvh.load(clip.path), layouts,
                                               runs=None if clip.kind == "stand" else clip.kind == "run")
        style = None
        if num_styles:
            style = np.zeros(num_styles)
            if clip.style in styles:
                style[styles.index(clip.style)] = 1.0
            else:
                style[:] = 1.0 / num_styles
        rollouts.append(rollout_on_clip(model, clip_features, clip.path.name, style))
    return rollouts


def phase_rows(rollouts: list[Rollout], note: str) -> list[Row]:
    """Contact F1, phase drift after PHASE_ROLLOUT_S and the trajectory correlation (network subject)."""
    where = "held-out clips"
    if not rollouts:
        return [Row("contacts: F1 against the labels", "network", where, math.nan, "", f">= {MIN_CONTACT_F1:g}",
                    False, None, "no moving held-out clip to roll out")]
    f1 = float(measures.contact_f1(np.concatenate([r.predicted_contacts for r in rollouts]),
                                   np.concatenate([r.labelled_contacts for r in rollouts])))
    drifts = [r.phase_drift_at(PHASE_ROLLOUT_S) for r in rollouts]
    drift = float(np.median(drifts))
    correlations = [r.correlation for r in rollouts]
    shortest = min((len(r.network_phase) - 1) * r.dt for r in rollouts)
    return [
        Row("contacts: F1 against the labels", "network", where, f1, "", f">= {MIN_CONTACT_F1:g}",
            at_least(f1, MIN_CONTACT_F1), 1.0, f"{len(rollouts)} clips; {note}"),
        Row(f"phase drift after {PHASE_ROLLOUT_S:g} s (median)", "network", where, drift, "cycles",
            f"<= {MAX_PHASE_DRIFT:g}", at_most(drift, MAX_PHASE_DRIFT), 0.0,
            f"worst {max(drifts):.2f}; clips shorter than {PHASE_ROLLOUT_S:g} s judged at their end"
            if shortest < PHASE_ROLLOUT_S else f"worst {max(drifts):.2f}"),
        Row("trajectory correlation (worst clip)", "network", where, float(np.min(correlations)), "",
            f">= {MIN_TRAJECTORY_CORRELATION:g}", at_least(float(np.min(correlations)), MIN_TRAJECTORY_CORRELATION),
            1.0, f"mean {np.mean(correlations):.3f}; weak: a straight line scores 0.998"),
    ]
