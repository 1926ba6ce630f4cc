"""The heads-up display, top left: what drives the character, its phase dial, speed, gait and style, the
frame rate and the transport; bottom left the help hint."""

import time

import numpy as np
from imgui_bundle import imgui

from app.input import keys
from app.render.overlays import phase_dial_outline
from app.ui.sections.style import blend_label
from app.ui.theme import DIAL_RING_COLOUR, DIM_COLOUR, ERROR_COLOUR, HIGHLIGHT_COLOUR
from pfnn_core.features.contract import GAIT_NAMES, gait_from_speed

HUD_WRAP = 300  # px: the HUD's notices wrap here, so a long one does not widen it over the character
HUD_SPEED_TICKS = 30  # the speed shown: distance over the last 0.5 s of the root path (60 Hz ticks)


def hud_values(frame, gait: str | None, style: str, tick_dt: float) -> dict:
    """What the HUD shows of the followed character's frame: phase, speed (mean over about one step, not
    the wobble within it), gait (the source's own, else the one the feature contract's soft labels
    weigh most at that speed) and style."""
    past = frame.traj_past_pos
    speed = 0.0
    if past is not None and len(past) > HUD_SPEED_TICKS:
        speed = float(np.linalg.norm((past[-1] - past[-1 - HUD_SPEED_TICKS])[[0, 2]]) / (HUD_SPEED_TICKS * tick_dt))
    return {"phase": float(frame.phase), "speed": speed, "gait": gait or gait_of_speed(speed), "style": style}


def gait_of_speed(speed: float) -> str:
    """'stand', 'walk' or 'run': the gait label `gait_from_speed` gives most weight at this ground speed."""
    return GAIT_NAMES[int(np.argmax(gait_from_speed(np.asarray(float(speed)))))]


def phase_dial(phase: float, radius: float = 26.0) -> None:
    """The phase as a dial: ring, ticks at the touchdowns (0 right, 0.5 left) and a needle."""
    draw = imgui.get_window_draw_list()
    origin = imgui.get_cursor_screen_pos()
    centre = imgui.ImVec2(origin.x + radius + 4, origin.y + radius + 4)
    circle, needle = phase_dial_outline(phase)
    ring = imgui.color_convert_float4_to_u32(imgui.ImVec4(*DIAL_RING_COLOUR))
    accent = imgui.color_convert_float4_to_u32(imgui.ImVec4(*HIGHLIGHT_COLOUR))
    draw.add_circle(centre, radius, ring, 48, 2.0)
    for touchdown in (0.0, 0.5):
        _, tick = phase_dial_outline(touchdown)
        draw.add_line(imgui.ImVec2(centre.x + tick[0] * radius * 0.8, centre.y - tick[1] * radius * 0.8),
                      imgui.ImVec2(centre.x + tick[0] * radius, centre.y - tick[1] * radius), ring, 2.0)
    tip = imgui.ImVec2(centre.x + needle[0] * radius * 0.9, centre.y - needle[1] * radius * 0.9)
    draw.add_line(centre, tip, accent, 3.0)
    draw.add_circle_filled(tip, 4.0, accent)
    imgui.dummy(imgui.ImVec2(2 * radius + 8, 2 * radius + 8))


def recording_label(state) -> str:
    """'REC' (a BVH take), 'REC video' or 'REC BVH + video' while recording on screen (headless captures
    keep the sign out of their own frames), with the frames the video has dropped so far when the
    encoder falls behind."""
    capture = state.capture
    dropped = capture.video_dropped if capture.video_recording else 0
    label = ""
    if state.on_screen and (state.record.recording or capture.video_recording):
        label = "REC" if not capture.video_recording else "REC BVH + video" if state.record.recording else "REC video"
    if dropped:
        label += f"{'  ' if label else ''}{dropped} frame{'s' * (dropped != 1)} dropped (encoder behind)"
    return label


def physics_label(state) -> str:
    """'physics on' / 'physics both' (with the pushes given) while the simulated body is shown, so the mode
    G picked stays on screen after its toast; '' with the physics off."""
    physics = state.physics
    if physics.mode == "off":
        return ""
    pushes = f", {physics.pushes} push{'es' * (physics.pushes != 1)}" if physics.pushes else ""
    return f"physics {physics.mode}{pushes}"


def hud_window(state, display_size) -> None:
    """Top-left: what drives the character, its phase dial, speed and gait, the transport; bottom-left
    the help hint."""
    flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize |
             imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_move)
    imgui.set_next_window_pos(imgui.ImVec2(12, 12))
    imgui.set_next_window_bg_alpha(0.72)
    imgui.begin("##hud", None, flags)
    imgui.text(state.source_label)
    if state.overlays.get("phase", False):
        phase_dial(state.hud.get("phase", 0.0))
        imgui.same_line()
    imgui.begin_group()
    imgui.text(f"phase {state.hud.get('phase', 0.0):.2f}")
    imgui.text(f"speed {state.hud.get('speed', 0.0):.2f} m/s")
    imgui.text(f"gait  {state.hud.get('gait', '-')}")
    if state.style.blending and state.style.names:
        imgui.text(f"style {blend_label(state.style)}")  # the panel's order, not the larger weight first
    elif state.hud.get("style"):
        imgui.text(f"style {state.hud['style']}")
    physics = physics_label(state)
    if physics:
        imgui.text(physics)
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"{state.stats.get('fps', 0.0):.0f} FPS")
    imgui.end_group()
    transport = state.transport
    if transport.paused or abs(transport.speed - 1.0) > 1e-6:
        imgui.text_colored(imgui.ImVec4(*HIGHLIGHT_COLOUR),
                           ("PAUSED" if transport.paused else "") + (f"  {transport.speed:.2f}x"
                                                                     if abs(transport.speed - 1.0) > 1e-6 else ""))
    imgui.push_text_wrap_pos(imgui.get_cursor_pos_x() + HUD_WRAP)
    label = recording_label(state)
    if label:
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), label)
    if state.toast_text and time.monotonic() < state.toast_until:
        imgui.text_colored(imgui.ImVec4(*HIGHLIGHT_COLOUR), state.toast_text)
    imgui.pop_text_wrap_pos()
    low, size = imgui.get_window_pos(), imgui.get_window_size()
    state.field_rects["hud"] = (low.x, low.y, low.x + size.x, low.y + size.y)
    imgui.end()
    if not state.show_help:
        imgui.set_next_window_pos(imgui.ImVec2(12, display_size[1] - 12), 0, imgui.ImVec2(0, 1))
        imgui.set_next_window_bg_alpha(0.6)
        imgui.begin("##controls", None, flags)
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR),
                           f"{keys.keys_label(keys.control('toggle_help'))}  all controls")
        imgui.end()
