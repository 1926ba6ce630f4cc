"""The panel's readouts of the live character, filled every frame after the ticks (`update_readouts`):
the model kind (which sections show), a motion-matching model's clip and frame and last search, a motion
VAE's latent path and active dimensions, the physics' figures; and before the ticks the physics mode the
panel asks for (`apply_physics_mode`)."""

from app.sources.physics import LivePhysics
from app.ui.messages import failure_message


def update_readouts(state, live_source) -> None:
    """`state`'s model kind, Matching, Motion VAE and Physics panels from the live source (any source:
    the puppet and playback have no model and no physics)."""
    character = getattr(live_source, "character", None)
    model = getattr(character, "model", None)
    state.model.kind = getattr(model, "kind", "") if model is not None else ""
    if state.model.kind == "matching":
        state.matching.playing = model.now_playing(character.state.model_state)
    if state.model.kind == "mvae":
        mvae_readout(state.mvae, model, live_source.trail)
    physics_readout(state, live_source)


def mvae_readout(panel, model, trail) -> None:
    panel.latent_size = int(model.config.latent_size)
    panel.active_dimensions = int(model.active_dimensions)
    panel.kl_per_dim = model.kl_per_dim
    panel.loss_history = model.loss_history()
    if trail is not None:
        panel.path = trail.path()


PREPARING = "Physics: making the body (the first time on a machine: a few seconds)"
PREPARING_FRAMES = 2  # frames drawn before the body is made: the HUD sizes itself to the toast in the first


def apply_physics_mode(state, live_source) -> bool:
    """The Physics section's mode on the live character's body, before the frame's ticks (the body is
    made on first use, after `PREPARING_FRAMES` frames saying so; one that cannot be made leaves the physics
    off and says why); True when the mode changed (the frames shown change with it)."""
    panel = state.physics
    character = getattr(live_source, "character", None)
    panel.available = character is not None
    if character is None:
        return False
    if live_source.physics is None:
        live_source.physics = LivePhysics(panel.settings)
    physics = live_source.physics
    if panel.mode == physics.mode and (panel.mode == "off" or physics.tracker is not None):
        return False
    if panel.mode != "off" and physics.tracker is None and panel.preparing < PREPARING_FRAMES:
        # the body is made after frames that say so: the first time on a machine the making compiles the
        # physics' kernels (seconds), and the window stood still on the mode's old picture, the key's
        # toast never shown (a newcomer read the first G as doing nothing)
        if panel.preparing == 0:
            state.toast(PREPARING, 10.0)
        panel.preparing += 1
        return False
    was_preparing, panel.preparing = panel.preparing > 0, 0
    try:
        physics.set_mode(panel.mode, character)
        panel.error = ""
        if was_preparing:
            state.toast(f"Physics {panel.mode}", 1.5)
    except Exception as error:  # a skeleton the physics cannot build a body for: the viewer runs on
        panel.error = failure_message("build the physics body for", live_source.path, error)
        panel.mode = physics.mode
        state.toast(f"Physics {panel.mode}: {panel.error}", 8.0)  # G's own toast said the mode asked for
    return True


def physics_readout(state, live_source) -> None:
    """The last tick's figures and the messages of the body (clamped settings, scaled pushes, resets)."""
    panel, physics = state.physics, getattr(live_source, "physics", None)
    if physics is None:
        panel.figures, panel.error_trace = {}, []
        return
    panel.figures = physics.figures()
    panel.error_trace = list(physics.errors)
    state.messages += physics.take_messages()
