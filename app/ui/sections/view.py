"""The panel's View section: how bodies are drawn, the camera mode and its reset, the overlays."""

from imgui_bundle import imgui

from app.input import keys
from app.render.camera import CAMERA_MODES
from app.render.renderer import VIEW_MODES

OVERLAY_TOGGLES = (("trajectory", "Trajectory", "toggle_trajectory"), ("contacts", "Foot contacts", "toggle_contacts"),
                   ("phase", "Phase dial", "toggle_phase"), ("joint_axes", "Joint axes", "toggle_joint_axes"))


def view_section(state) -> None:
    imgui.push_item_width(150)
    index = VIEW_MODES.index(state.view_mode) if state.view_mode in VIEW_MODES else 0
    changed, index = imgui.combo(f"Body ({keys.keys_label(keys.control('cycle_view_mode'))})", index, list(VIEW_MODES))
    if changed:
        state.view_mode = VIEW_MODES[index]
    index = CAMERA_MODES.index(state.camera_mode) if state.camera_mode in CAMERA_MODES else 0
    changed, index = imgui.combo("Camera (1-4)", index, list(CAMERA_MODES))
    if changed:
        state.request(f"camera_{CAMERA_MODES[index]}")  # the control table's camera mode actions
    imgui.pop_item_width()
    imgui.same_line()
    if imgui.button(f"Reset ({keys.keys_label(keys.control('camera_reset'))})"):
        state.request("camera_reset")
    for name, label, action in OVERLAY_TOGGLES:
        _, state.overlays[name] = imgui.checkbox(f"{label} ({keys.keys_label(keys.control(action))})",
                                                 state.overlays[name])
