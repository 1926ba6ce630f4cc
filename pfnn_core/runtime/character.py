"""`Character`: a motion model + settings + the state of B characters; `tick` with its guards (a bad
tick is reported and the characters recovered), `reset`, `swap_model`, `set_style`."""

from __future__ import annotations

import dataclasses
import logging
from typing import Sequence

import numpy as np

from pfnn_core.models.registry import build_model
from pfnn_core.runtime.command import Command, CommandBatch, stand_command
from pfnn_core.runtime.guards import Fault
from pfnn_core.runtime.root_motion import DriftErrors
from pfnn_core.runtime.settings import RuntimeSettings
from pfnn_core.runtime.state import CharacterState, initial_state, local_pose, placed, replace_characters
from pfnn_core.runtime.tick import step

log = logging.getLogger(__name__)

SETTLE_TICKS = 60  # standing ticks run on reset so the first shown pose is the network's own, not the mean pose


class Character:
    """Model + settings + state of B characters: what the viewer and the headless drive hold.

    Every tick the settings are clamped to the ranges that suit the model (`RuntimeSettings.fit_to_model`)
    and the tick is checked (`guards.check_tick`): a character whose tick ran away is put back in the
    settled standing pose where it stood, and a `guards.Fault` is recorded (`faults`, `take_messages`)
    and logged, naming the settings that were away from the model's defaults.
    """

    MAX_FAULTS = 50

    def __init__(self, checkpoint, settings: RuntimeSettings | None = None, batch: int = 1,
                 device: str = "auto", backend: str = "auto", positions=None, yaws=None,
                 settle_ticks: int = SETTLE_TICKS, style=None):
        self.settings = settings if settings is not None else RuntimeSettings.for_model(checkpoint.card)
        self.batch = batch
        self.settle_ticks = settle_ticks
        self.faults: list[Fault] = []
        self._unreported: list[str] = []
        self._load(checkpoint, device, backend)
        self.state = self._fresh(positions, yaws, style)
        self.previous_state = self.state

    # ---- model ---------------------------------------------------------------------------------
    def _load(self, checkpoint, device, backend) -> None:
        self.model = build_model(checkpoint, device=device, backend=backend)
        self.model_defaults = RuntimeSettings.for_model(checkpoint.card)
        self.model_defaults.fit_to_model(checkpoint.card)
        for name, old, new in self.settings.fit_to_model(checkpoint.card):
            self._report(f"Setting {name} = {old:g} is outside what this model supports; using {new:g}")
        self._template = self._settled_template()
        self._last_values = self.settings.values()
        self._last_change = None
        self.time_s = 0.0

    def _settled_template(self) -> CharacterState:
        """One character standing at the origin, settled for `settle_ticks` with the model's default
        settings (the mean input pose is an average, not a pose the network holds)."""
        model = self.model
        state = initial_state(model, 1)
        dt = 1.0 / model.sim_fps
        for _ in range(self.settle_ticks):
            state = step(state, stand_command(), self.model_defaults, dt, model)
            if state.fault is not None:
                raise ValueError(f"{model.checkpoint.path or 'checkpoint'}: the model cannot stand still: "
                                 f"{state.fault.reasons[0]}")
        if self.settle_ticks > 0 and model.floor_heights is None:
            model.floor_heights = state.world_joint_pos[0, model.contact_joints, 1].copy()
            log.warning("%s: no floor_heights in the checkpoint (trained before they were stored); the floor "
                        "of each foot joint is taken from the model's settled standing pose: %s m",
                        model.checkpoint.path or "checkpoint", np.round(model.floor_heights, 3).tolist())
        return dataclasses.replace(state, ticks=0, drift=DriftErrors.empty(1))

    def _fresh(self, positions, yaws, style=None) -> CharacterState:
        positions = np.zeros((self.batch, 2)) if positions is None else np.asarray(positions, dtype=float)
        yaws = np.zeros(self.batch) if yaws is None else yaws
        state = placed(self._template, np.broadcast_to(positions, (self.batch, positions.shape[-1])), yaws)
        if style is not None:
            state = dataclasses.replace(state, style=self._checked_style(style))
        return state

    @property
    def skeleton(self) -> dict:
        return self.model.skeleton

    @property
    def setting_limits(self) -> dict:
        """(low, high) of every numeric setting for this model (what the panel's sliders span)."""
        return self.settings.all_limits()

    # ---- ticking -------------------------------------------------------------------------------
    def tick(self, command: Command | Sequence[Command] | CommandBatch, dt: float) -> CharacterState:
        self._watch_settings()
        self.previous_state = self.state
        state = step(self.state, command, self.settings, dt, self.model)
        if state.fault is not None:
            state = self._recover(state)
        self.state = state
        self.time_s += dt
        return state

    def _watch_settings(self) -> None:
        for name, old, new in self.settings.clamp():
            self._report(f"Setting {name} = {old:g} is outside this model's range; clamped to {new:g}")
        values = self.settings.values()
        if values != self._last_values:
            for name, old, new in zip(self.settings.field_names(), self._last_values, values):
                if old != new:
                    self._last_change = (name, old, new, self.time_s)
            self._last_values = values

    def _settings_note(self) -> str:
        changed = [f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"
                   for name, value, default in zip(self.settings.field_names(), self.settings.values(),
                                                   self.model_defaults.values()) if value != default]
        note = ("Settings away from the model's defaults: " + ", ".join(changed)) if changed else \
            "All settings at the model's defaults"
        if self._last_change is not None:
            name, old, new, when = self._last_change
            note += f"; last changed: {name} {old} -> {new} at {when:.1f} s"
        return note + "."

    def _recover(self, state: CharacterState) -> CharacterState:
        """Put the faulty characters back in the settled pose where they stood before the tick."""
        fault, before = state.fault, self.state
        index = fault.characters
        fresh = placed(self._template, before.root_pos[index], before.root_yaw[index])
        fresh = dataclasses.replace(fresh, style=before.style[index].copy())
        what = fault.reasons[0] + (f" (and {len(index) - 1} more characters)" if len(index) > 1 else "")
        last = self.faults[-1] if self.faults else None
        if last is not None and last.what == what and last.tick >= state.ticks - 2:
            last.count, last.tick = last.count + 1, state.ticks
        else:
            record = Fault(tick=state.ticks, time_s=self.time_s, characters=[int(i) for i in index], what=what,
                           settings_note=self._settings_note())
            self.faults = (self.faults + [record])[-self.MAX_FAULTS:]
            self._report(record.message)
        return replace_characters(state, index, fresh)

    def _report(self, message: str) -> None:
        log.warning("%s", message)
        self._unreported.append(message)

    def take_messages(self) -> list[str]:
        """Fault and clamping messages since the last call (the viewer shows them in its panel)."""
        messages, self._unreported = self._unreported, []
        return messages

    # ---- control -------------------------------------------------------------------------------
    def reset(self, positions=None, yaws=None) -> CharacterState:
        style = self.state.style
        self.state = dataclasses.replace(self._fresh(positions, yaws), style=style)
        self.previous_state = self.state
        self.time_s = 0.0
        return self.state

    def _checked_style(self, style) -> np.ndarray:
        """[B, S] style weights from one style for all (a name, an index or [S] weights) or one per
        character [B, S]; weights must be finite, >= 0 and sum to 1 (within 1e-3; renormalised)."""
        count = self.model.num_styles
        names = self.model.style_names
        if count == 0:
            raise ValueError("this model has no style input (model_config.num_styles = 0)")
        if isinstance(style, str):
            if style not in names:
                raise ValueError(f"unknown style {style!r}; this model's styles are {names or list(range(count))}")
            style = names.index(style)
        if isinstance(style, (int, np.integer)):
            if not 0 <= style < count:
                raise ValueError(f"style index {style} out of range 0..{count - 1}")
            style = np.eye(count)[style]
        weights = np.asarray(style, dtype=float)
        if weights.shape not in ((count,), (self.batch, count)):
            raise ValueError(f"style weights have shape {weights.shape}, expected ({count},) or ({self.batch}, {count})")
        total = weights.sum(axis=-1, keepdims=True)
        if not np.isfinite(weights).all() or (weights < 0).any() or np.any(np.abs(total - 1.0) > 1e-3):
            raise ValueError(f"style weights must be finite, >= 0 and sum to 1, got {weights.tolist()}")
        return np.broadcast_to(weights / total, (self.batch, count)).copy()

    def set_style(self, style) -> None:
        """Style of every character (a name, an index or [S] weights) or per character ([B, S])."""
        self.state = dataclasses.replace(self.state, style=self._checked_style(style))

    def style_name(self, index: int = 0) -> str:
        """Character `index`'s dominant style ('' for a model without styles)."""
        if not self.model.num_styles:
            return ""
        return self.model.style_names[int(np.argmax(self.state.style[index]))]

    def swap_model(self, checkpoint, device: str | None = None, backend: str | None = None) -> None:
        """Hot swap the model (any kind); the characters keep their place, heading, phase and trajectory."""
        old, old_model = self.state, self.model
        self._load(checkpoint, device or str(old_model.device), backend or (old_model.backend if old_model.kind == checkpoint.kind
                                                                            else "auto"))
        fresh = placed(self._template, old.root_pos, old.root_yaw)
        keep = ["phase", "trajectory", "traj_future_pos", "traj_future_dir", "traj_command_pos", "traj_command_dir",
                "net_future_pos", "net_future_dir", "springs",
                "root_vel", "root_yaw_rate", "stand", "warp"]
        if self.model.names == old_model.names:
            keep += ["joint_pos", "joint_vel", "world_joint_pos", "world_joint_rot", "pose_root_pos", "pose_root_rot"]
        if self.model.num_styles == old.style.shape[1]:
            keep.append("style")
        self.state = dataclasses.replace(fresh, **{name: getattr(old, name) for name in keep})
        self.previous_state = self.state

    def local_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return local_pose(self.state, self.model.skeleton)
