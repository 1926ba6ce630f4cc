"""The panel's Stats section: frame rate and where a frame's time goes."""

from imgui_bundle import imgui

from app.ui.theme import DIM_COLOUR


def stats_section(state) -> None:
    stats = state.stats
    imgui.text(f"{stats.get('fps', 0.0):6.1f} FPS   frame {stats.get('frame_ms', 0.0):5.2f} ms")
    imgui.text(f"sim {stats.get('sim_ms', 0.0):5.2f}  ui {stats.get('ui_ms', 0.0):5.2f}  "
               f"render {stats.get('render_ms', 0.0):5.2f} ms")
    imgui.text(f"tick {stats.get('tick_ms', 0.0):5.2f} ms   inference {stats.get('infer_ms', 0.0):5.2f} ms")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"device: {stats.get('device', 'cpu')}   "
                                                  f"ticks this frame {stats.get('substeps', 0)}")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"input: {stats.get('input', 'keyboard and mouse')}")
