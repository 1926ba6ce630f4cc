"""The panel's View section: how bodies are drawn, the camera mode, framing and reset, strafing by default
(shooter style), the overlays with their legends as tooltips (`app.ui.legend`)."""

from imgui_bundle import imgui

from app.input import keys
from app.render.camera import CAMERA_MODES
from app.render.renderer import VIEW_MODES
from app.ui.legend import legend_tooltip
from app.ui.widgets import remember_rect, tooltip

OVERLAY_TOGGLES = (("trajectory", "Trajectory", "toggle_trajectory"), ("contacts", "Foot contacts", "toggle_contacts"),
                   ("phase", "Phase dial", "toggle_phase"), ("joint_axes", "Joint axes", "toggle_joint_axes"))


def _key(action: str) -> str:
    return keys.keys_label(keys.control(action))


def view_section(state) -> None:
    imgui.push_item_width(130)
    index = VIEW_MODES.index(state.view_mode) if state.view_mode in VIEW_MODES else 0
    changed, index = imgui.combo(f"Body ({_key('cycle_view_mode')})", index, list(VIEW_MODES))
    if changed:
        state.view_mode = VIEW_MODES[index]
    index = CAMERA_MODES.index(state.camera_mode) if state.camera_mode in CAMERA_MODES else 0
    changed, index = imgui.combo("Camera (1-4)", index, list(CAMERA_MODES))
    if changed:
        state.request(f"camera_{CAMERA_MODES[index]}")  # the control table's camera mode actions
    imgui.pop_item_width()
    if imgui.button(f"Frame ({_key('camera_frame')})"):
        state.request("camera_frame")
    tooltip("The whole body in view, from where the camera looks")
    imgui.same_line()
    if imgui.button(f"Reset ({_key('camera_reset')})"):
        state.request("camera_reset")
    _, state.strafe_default = imgui.checkbox("Strafe by default (shooter style)", state.strafe_default)
    remember_rect(state, "strafe_default")
    tooltip("The character faces where the camera looks and every key or stick direction steps that way "
            "(S walks backward); off: it turns toward where it walks")
    for name, label, action in OVERLAY_TOGGLES:
        _, state.overlays[name] = imgui.checkbox(f"{label} ({_key(action)})", state.overlays[name])
        remember_rect(state, f"overlay_{name}")
        legend_tooltip(name)
