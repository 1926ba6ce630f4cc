"""The live character's style, kept in step with the panel's Style section: set from the panel, the
cycle keys or a script segment, and what runs mirrored back into the section (and the full-stick speeds
of Tune follow it). A source without a style input (the stand-in, a model trained on one style) is left
alone."""

import numpy as np

from app.ui.sections.style import ONE_HOT, dominant_style, next_style, one_style
from pfnn_core.drive.cli import ScriptError, style_weights


def styled(live):
    """The live source when its model has a style input, else None."""
    return live if getattr(live, "style_names", None) else None


def set_style(state, live, weights) -> None:
    """Every live character's style weights [S] from the next tick."""
    live = styled(live)
    if live is None:
        return
    try:
        live.set_style(weights)
    except ValueError as error:
        state.messages.append(f"Style not set: {error}")
    sync_style(state, live)


def cycle_style(state, live, step: int) -> None:
    """The next (or previous) style of the list, most data first, after the one running."""
    panel, live = state.style, styled(live)
    if live is None:
        return
    # out of a blend: from the style box's style (the blend's first), not whichever weight is largest
    current = panel.selected if panel.blending else dominant_style(panel.names, live.style_weights)
    panel.selected = next_style(panel.rows, current, step)
    panel.blending = False
    set_style(state, live, one_style(panel.names, panel.selected))


def sync_style(state, live) -> None:
    """Mirror the followed character's style into the panel; when it changed (the panel, a key, a
    script, stepping back, a new model) the full-stick speeds follow it."""
    panel, live = state.style, styled(live)
    if live is None:
        panel.running = ()
        return
    running = tuple(float(w) for w in live.style_weights)
    if running == panel.running:
        return
    panel.running = running
    for settings in (state.settings, state.model_defaults):
        settings.apply_style(live.checkpoint.card, np.asarray(running))
    if not panel.blending and max(running) >= ONE_HOT:
        panel.selected = dominant_style(panel.names, running)


def script_style(state, live, segment) -> None:
    """A script segment's style (the keys and the panel may change it after the segment starts)."""
    live = styled(live)
    try:
        weights = style_weights(segment.style, live.style_names if live else [], "script style")
    except ScriptError as error:
        state.messages.append(str(error))
        return
    set_style(state, live, weights)

