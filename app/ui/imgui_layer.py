"""This viewer's ImGui: its own ImGui and ImPlot contexts (several viewers may live in one process, as in
the tests), the theme, the pyglet backend that draws the panel into the window, and the frame's UI pass
(`app.ui.panel.gui`)."""

from imgui_bundle import imgui, implot

from app.ui.panel import gui, notice_window
from app.ui.theme import apply_style


class ImguiLayer:
    def __init__(self):
        self.context = imgui.create_context()
        imgui.set_current_context(self.context)  # create_context only sets it when none is current
        self.implot_context = implot.create_context()
        implot.set_current_context(self.implot_context)
        imgui.get_io().set_ini_filename("")
        apply_style()
        self.window, self.renderer = None, None

    def attach(self, window) -> None:
        """Draw into `window`, its events going to ImGui (the backend's handlers go on top of those pushed
        before), with the Ctrl/Shift/Alt state taken from every key event (on top of the backend's)."""
        from imgui_bundle.python_backends import pyglet_backend

        self.window = window
        self.renderer = pyglet_backend.create_renderer(window)
        window.push_handlers(on_key_press=self._sync_modifiers, on_key_release=self._sync_modifiers)

    def io(self):
        imgui.set_current_context(self.context)
        return imgui.get_io()

    def _sync_modifiers(self, symbol, modifiers):
        """imgui's backend tracks Ctrl/Shift/Alt only from their own key events, so a modifier pressed
        before the window had focus was unknown to it (Ctrl+A typed an 'a' or nothing). Every key event
        carries the modifier state: hand it to imgui before the key itself."""
        from pyglet.window import key

        io = self.io()
        for mask, imgui_key in ((key.MOD_CTRL, imgui.Key.mod_ctrl), (key.MOD_SHIFT, imgui.Key.mod_shift),
                                (key.MOD_ALT, imgui.Key.mod_alt)):
            io.add_key_event(imgui_key, bool(modifiers & mask))

    def focus_lost(self) -> None:
        """The window lost the focus: imgui releases its keys (and modifiers) too."""
        self.io().add_focus_event(False)
        imgui.get_io().add_focus_event(True)

    def draw(self, state, display_size, real_dt: float) -> None:
        """This frame's UI from `state`, drawn into the window."""
        imgui.set_current_context(self.context)
        implot.set_current_context(self.implot_context)
        imgui.get_io().delta_time = max(real_dt, 1e-4)
        imgui.new_frame()
        gui(state, display_size)
        imgui.render()
        self.renderer.render(imgui.get_draw_data())

    def draw_notice(self, text: str, display_size) -> None:
        """One frame of the UI that only says `text`, centred (`app.ui.panel.notice_window`): what the
        window shows while the viewer starts."""
        imgui.set_current_context(self.context)
        implot.set_current_context(self.implot_context)
        for _ in range(2):  # an auto-sized window is measured, not shown, in its first frame
            imgui.new_frame()
            notice_window(text, display_size)
            imgui.render()
        self.renderer.render(imgui.get_draw_data())

    def close(self) -> None:
        imgui.set_current_context(self.context)
        if self.renderer is not None:
            self.renderer.shutdown()
        implot.destroy_context(self.implot_context)
        imgui.destroy_context(self.context)
