"""The window's events and what held input does each frame. Key presses run the control table's actions
(`app.input.keys`) through the viewer's action table, unless a text field of the panel has the keyboard
or the panel has the mouse (a key pressed after the mouse moved is decided after the panel's next frame,
when imgui knows whether the mouse is over it);
every key goes to the held set of `InputDevices` (movement, run, strafe); mouse drags and the wheel turn,
pan and zoom the camera unless the panel has the mouse; losing the focus releases everything held; closing
the window asks the "quit" action. Each frame, the right stick turns the camera and, in free fly, the
held movement keys (with the right mouse button down) fly it."""

import numpy as np
from pyglet.window import key, mouse

from app.input.devices import keyboard_frame
from app.input.keys import PANEL_SAFE_ACTIONS, action_for_key, mouse_drag_action

ORBIT_RATE = 2.5  # rad/s at full right-stick tilt
MOUSE_ORBIT = 0.008  # rad per pixel dragged


class WindowEvents:
    def __init__(self, window, devices, camera, imgui_layer, run_action):
        self.devices, self.camera, self.imgui, self.run_action = devices, camera, imgui_layer, run_action
        self.window = window
        self.mouse_buttons = 0  # mouse buttons held over the 3D view
        # imgui's capture flags are those of its last frame until its next new_frame: a key pressed after
        # the mouse moved (X delivers a move and a key in one batch) waits for the panel's next frame
        self.mouse_moved, self.deferred = False, {}  # symbol -> [modifiers, released since]
        # pushed before imgui's backend, whose handlers (on top) see the events first
        window.push_handlers(self.on_key_press, self.on_key_release, self.on_mouse_press, self.on_mouse_release,
                             self.on_mouse_drag, self.on_mouse_scroll, self.on_mouse_motion, self.on_deactivate,
                             self.on_draw, self.on_close)

    def on_key_press(self, symbol, modifiers):
        # Always handled here (True), so pyglet's default handler never closes the window on Escape.
        action = action_for_key(symbol, modifiers)
        io = self.imgui.io()
        if io.want_text_input:
            return True  # the text field has it (imgui's handler above ours): Escape leaves the field
        if self.mouse_moved and not io.want_capture_keyboard:
            self.deferred[symbol] = [modifiers, False]  # over the panel or the view? known after its frame
            return True
        if (io.want_capture_keyboard or io.want_capture_mouse) and action not in PANEL_SAFE_ACTIONS:
            return True  # the panel has the mouse or a widget is active: keys typed there never steer
        self.devices.on_key_press(symbol, modifiers)
        if action is not None:
            self.run_action(action)
        return True

    def on_key_release(self, symbol, modifiers):
        if symbol in self.deferred:
            self.deferred[symbol][1] = True
        self.devices.on_key_release(symbol, modifiers)

    def on_mouse_motion(self, x, y, dx, dy):
        self.mouse_moved = True

    def after_panel_frame(self) -> None:
        """The panel's frame has taken in the mouse's moves: the keys pressed since are decided now (a key
        released meanwhile is pressed and released, a tap)."""
        deferred, self.deferred, self.mouse_moved = self.deferred, {}, False
        for symbol, (modifiers, released) in deferred.items():
            self.on_key_press(symbol, modifiers)
            if released:
                self.devices.on_key_release(symbol, modifiers)

    def on_mouse_press(self, x, y, button, modifiers):
        if not self.imgui.io().want_capture_mouse:
            self.mouse_buttons |= button

    def on_mouse_release(self, x, y, button, modifiers):
        self.mouse_buttons &= ~button

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        if self.imgui.io().want_capture_mouse:
            return
        action = mouse_drag_action(buttons, modifiers)
        if action == "camera_turn":
            self.camera.orbit(-dx * MOUSE_ORBIT, -dy * MOUSE_ORBIT)
        elif action == "camera_pan":
            self.camera.pan(dx, dy, self.window.height)

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        if not self.imgui.io().want_capture_mouse:
            self.camera.zoom(scroll_y)

    def on_deactivate(self):
        self.devices.release_all()
        self.mouse_buttons, self.deferred = 0, {}
        self.imgui.focus_lost()

    def on_draw(self):
        pass  # drawing happens in the viewer's frame, scheduled on the clock

    def on_close(self):
        self.run_action("quit")
        return True  # the window closes through the viewer's `request_close`, after the question if training

    def flying(self) -> bool:
        """Free-fly camera with the right mouse button held: the movement keys fly the camera."""
        return self.camera.mode == "free" and bool(self.mouse_buttons & mouse.RIGHT)

    def steer_camera(self, real_dt: float) -> None:
        """The held input's share of the camera this frame: the right stick turns it; in free fly the held
        movement keys move it while the right mouse button is down (the character then stands)."""
        frame = self.devices.frame()
        self.camera.orbit(-frame.camera[0] * ORBIT_RATE * real_dt, -frame.camera[1] * ORBIT_RATE * real_dt)
        if self.camera.mode != "free":
            return
        move, up = np.zeros(2), 0.0
        if self.flying():
            move = keyboard_frame(self.devices.held).move
            up = float(key.E in self.devices.held) - float(key.Q in self.devices.held)
        self.camera.fly(move, up, real_dt)
