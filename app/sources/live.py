"""The live network character as a viewer source: wraps `pfnn_core.runtime.Character` (model +
settings + batched state), feeds it the command every tick and turns its state into `SceneFrame`s.

Crowd mode runs B characters in one batched tick, placed on a grid, all following the same command.
With the physics on (`app.sources.physics.LivePhysics`, set by the viewer) the followed character's
simulated body steps in the same tick and its pose is what the frames carry; a motion VAE's latents of
the last seconds are kept for the panel (`LatentTrail`).
"""

from pathlib import Path

import numpy as np

from app.render.scene import SceneFrame
from pfnn_core.math.quat import quat_to_yaw
from pfnn_core.runtime.trajectory import facing_from_yaw

CROWD_SPACING = 1.6  # m between neighbours in crowd mode
KIND_LABELS = {"pfnn": "PFNN", "matching": "Motion matching", "mvae": "Motion VAE"}  # the HUD's name of each kind


def crowd_positions(count: int, spacing: float = CROWD_SPACING) -> np.ndarray:
    """[count, 2] ground (x, z) positions on a square grid, nearest the centre first; the first one,
    the character the camera follows, stands at the origin."""
    side = int(np.ceil(np.sqrt(count)))
    cells = np.stack(np.meshgrid(np.arange(side), np.arange(side), indexing="ij"), -1).reshape(-1, 2).astype(float)
    centre = np.full(2, (side - 1) // 2, float)
    order = np.argsort(np.linalg.norm(cells - centre, axis=-1), kind="stable")
    chosen = cells[order[:count]]
    return (chosen - chosen[0]) * spacing


def checkpoint_summary(checkpoint, device) -> list[str]:
    """A few lines about the model, the data it was trained on and its training run (fields missing
    from older checkpoints are skipped)."""
    meta, config = checkpoint.meta, checkpoint.config
    joints = len(checkpoint.card.names) if checkpoint.card is not None else 0
    if checkpoint.kind == "pfnn":
        lines = [f"{config.phase_function} phase function, hidden {config.hidden_size}, {joints} joints, on {device}"]
    else:  # motion matching, motion VAE: their configs differ; the kind says what runs
        lines = [f"{KIND_LABELS.get(checkpoint.kind, checkpoint.kind)}, {joints} joints, on {device}"]
    data = meta.get("data") or {}
    if isinstance(data.get("files"), (list, tuple)):
        samples = data.get("samples", data.get("rows"))
        lines.append(f"data: {len(data['files'])} files" + (f", {samples} samples" if samples else "")
                     + (" (mirrored)" if data.get("mirror") else ""))
    training = meta.get("training") or {}
    history = (checkpoint.card.extra.get("loss_history") if checkpoint.card is not None else None) or {}
    if checkpoint.kind == "mvae" and isinstance(history.get("vae"), dict):
        # its stages' epochs from the loss curves the panel plots (a policy-only run's `epochs_completed`
        # counts the VAE epochs of its config, which it did not train), the last run's time
        stages = [f"{name} {len(next(iter(history[key].values()), []))} epochs"
                  for key, name in (("vae", "VAE"), ("policy", "policy")) if history.get(key)]
        text = ", ".join(stages)
        if isinstance(training.get("wall_s"), (int, float)):
            text += f"; its last run {training['wall_s'] / 60:.1f} min"
        lines.append(text)
    elif isinstance(training.get("epochs_completed"), int):
        text = f"from epoch {training.get('best_epoch') or training['epochs_completed']} of its run (the best)"
        if isinstance(training.get("val_loss"), (int, float)):
            text += f", val loss {training['val_loss']:.4f}"
        if isinstance(training.get("wall_s"), (int, float)):
            text += f", {training['wall_s'] / 60:.1f} min"
        lines.append(text)
    speeds = {k: v for k, v in (meta.get("gait_speeds") or {}).items() if isinstance(v, (int, float))}
    if speeds:
        lines.append("gait speeds: " + ", ".join(f"{k} {v:.2f} m/s" for k, v in speeds.items()))
    return lines


def from_runtime_state(state, index: int, parents: np.ndarray, contact_joints: np.ndarray | None,
                       names: tuple | None = None, pose_only: bool = False,
                       offsets: np.ndarray | None = None) -> SceneFrame:
    """Frame of character `index` of a batched `runtime.CharacterState` (arrays copied). `pose_only`
    leaves out the overlay data (crowd members other than the followed one); the pose (positions and
    rotations, which the skinned bodies need) is always there."""
    overlay_fields = {"contacts", "locks.target", "locks.weight", "traj_past_pos", "traj_past_dir",
                      "traj_future_pos", "traj_future_dir", "traj_command_pos", "traj_command_dir"}

    def pick(name):  # a field, or a dotted path to a field of a group ("locks.target")
        value = state
        for part in name.split("."):
            value = getattr(value, part, None)
        if value is None or (pose_only and name in overlay_fields):
            return None
        return np.array(value[index], np.float64)

    return SceneFrame(
        joint_pos=pick("world_joint_pos"),
        parents=np.asarray(parents),
        root_pos=pick("root_pos"),
        root_dir=facing_from_yaw(quat_to_yaw(pick("root_rot"))),
        phase=float(np.asarray(state.phase)[index]),
        names=names,
        joint_rot=pick("world_joint_rot"),
        offsets=offsets,
        contact_joints=None if contact_joints is None else np.asarray(contact_joints),
        contacts=pick("contacts"),
        lock_target=pick("locks.target"),
        lock_weight=pick("locks.weight"),
        traj_past_pos=pick("traj_past_pos"),
        traj_past_dir=pick("traj_past_dir"),
        traj_future_pos=pick("traj_future_pos"),
        traj_future_dir=pick("traj_future_dir"),
        traj_command_pos=pick("traj_command_pos"),
        traj_command_dir=pick("traj_command_dir"),
    )


def latent_trail(model):
    """A motion VAE's latent path of the last seconds (the followed character's), None for other kinds."""
    if getattr(model, "kind", "") != "mvae":
        return None
    from pfnn_core.models.mvae.model import LatentTrail

    return LatentTrail(int(model.config.latent_size))


class LiveSource:
    def __init__(self, character, path: str, checkpoint=None):
        self.character, self.path, self.checkpoint = character, path, checkpoint
        self.last_command = None
        self.physics = None  # LivePhysics: the followed character's simulated body (the viewer sets it)
        self.trail = latent_trail(character.model)

    @classmethod
    def from_checkpoint(cls, path, settings, crowd: int = 1) -> "LiveSource":
        from pfnn_core.models.registry import load_checkpoint
        from pfnn_core.runtime.character import Character

        checkpoint = load_checkpoint(path)
        settings.apply_style(checkpoint.card, None)  # the default style's full-stick speeds
        character = Character(checkpoint, settings=settings, batch=crowd, positions=crowd_positions(crowd))
        return cls(character, str(path), checkpoint)

    def swap_model(self, path) -> None:
        """Hot swap: the characters keep their place, heading and trajectory."""
        from pfnn_core.models.registry import load_checkpoint

        checkpoint = load_checkpoint(path)
        self.character.swap_model(checkpoint)
        self.character.settings.apply_style(checkpoint.card, None)
        self.path, self.checkpoint = str(path), checkpoint
        self.trail = latent_trail(self.character.model)
        if self.physics is not None:
            self.physics.forget_body()

    @property
    def label(self) -> str:
        count = self.character.batch
        kind = getattr(self.character.model, "kind", "pfnn")
        return f"{KIND_LABELS.get(kind, kind)}: {Path(self.path).name}" + (f"  ({count} characters)" if count > 1 else "")

    @property
    def gait(self) -> str | None:
        return None if self.last_command is None else self.last_command.gait

    @property
    def style_names(self) -> list[str]:
        """The model's styles in its style input's order (empty without a style input)."""
        return list(self.character.model.style_names) if self.character.model.num_styles else []

    @property
    def style_weights(self) -> np.ndarray:
        """Style weights [S] of the followed character (the first)."""
        return self.character.state.style[0]

    def set_style(self, weights) -> None:
        """Style weights [S] for every character, from the next tick."""
        self.character.set_style(np.asarray(weights, float))

    @property
    def timings(self) -> dict:
        return {**self.character.state.timings, "device": str(self.character.model.device)}

    def summary(self) -> list[str]:
        return checkpoint_summary(self.checkpoint, self.character.model.device) if self.checkpoint else []

    def step(self, command, dt: float) -> None:
        self.last_command = command
        self.character.tick(command, dt)
        if self.physics is not None:
            self.physics.step(self.character.state, dt)
        if self.trail is not None:
            self.trail.push(self.character.state.model_state["latent"][0])

    def reset(self, yaw: float = 0.0) -> None:
        """Every character back on its place of the grid, facing `yaw` (0 = +Z)."""
        batch = self.character.batch
        self.character.reset(positions=crowd_positions(batch), yaws=np.full(batch, float(yaw)))
        self._restart_extras()

    def _restart_extras(self) -> None:
        """The body starts again on the kinematic pose, the latent path afresh."""
        if self.physics is not None:
            self.physics.reset()
        self.trail = latent_trail(self.character.model)

    def snapshot(self):
        """What stepping back restores. A tick builds a new state and never changes the old one, so
        the state itself (not a copy) is kept; the simulated body's state is copied."""
        physics = self.physics.snapshot() if self.physics is not None else None
        return self.character.state, self.last_command, physics

    def restore(self, snapshot) -> None:
        state, self.last_command, physics = snapshot
        self.character.state = self.character.previous_state = state
        self.trail = latent_trail(self.character.model)
        if self.physics is not None:
            self.physics.restore(physics)

    def frames(self) -> list[SceneFrame]:
        network, state = self.character.model, self.character.state
        contact_joints, names = np.asarray(network.contact_joints), tuple(network.names)
        frames = [from_runtime_state(state, b, network.parents, contact_joints, names, pose_only=b > 0,
                                     offsets=network.offsets) for b in range(state.batch_size)]
        if self.physics is not None:
            frames[0] = self.physics.shown(frames[0])
        return frames


