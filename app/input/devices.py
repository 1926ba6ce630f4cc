"""Keyboard and gamepad -> one `InputFrame` per tick (stick vectors + run/strafe flags).

The move stick is camera-relative (x right, y forward, length <= 1); `pfnn_core.controller` turns it
into a `Command`. Gamepads come and go through pyglet's ControllerManager; when the platform has no
input devices (no /dev/input, no permission) the viewer simply runs keyboard-only.
"""

from dataclasses import dataclass, field

import numpy as np

from app.input.keys import action_for_button, gamepad_axes, held_keys
from pfnn_core.runtime.command import clamp_stick, stick_from_keys

MOVE_KEYS = {"up": held_keys("move_forward"), "down": held_keys("move_back"), "left": held_keys("move_left"),
             "right": held_keys("move_right")}
RUN_KEYS = held_keys("run")
STRAFE_KEYS = held_keys("strafe")
SIDE_STEP_KEYS = {"left": held_keys("strafe_left"), "right": held_keys("strafe_right")}
TRIGGER_ON = 0.5


@dataclass
class InputFrame:
    move: np.ndarray  # [2] camera-relative stick (x right, y forward)
    run: bool
    strafe: bool
    camera: np.ndarray  # [2] right-stick (x yaw, y pitch), -1..1


def keyboard_frame(held: set) -> InputFrame:
    """What the held keys ask for: Q / E side-step (a move left / right that keeps the facing)."""
    def down(keys):
        return any(k in held for k in keys)

    side_left, side_right = down(SIDE_STEP_KEYS["left"]), down(SIDE_STEP_KEYS["right"])
    move = stick_from_keys(down(MOVE_KEYS["up"]), down(MOVE_KEYS["down"]), down(MOVE_KEYS["left"]) or side_left,
                           down(MOVE_KEYS["right"]) or side_right)
    strafe = down(STRAFE_KEYS) or side_left or side_right
    return InputFrame(move, down(RUN_KEYS), strafe, np.zeros(2))


def radial_deadzone(stick, deadzone: float) -> np.ndarray:
    """Zero inside the dead zone, rescaled so the edge of the zone maps to 0 and full tilt to 1."""
    stick = clamp_stick(stick)
    length = float(np.linalg.norm(stick))
    if length <= deadzone:
        return np.zeros(2)
    return stick / length * (length - deadzone) / (1.0 - deadzone)


def gamepad_frame(controller, deadzone: float = 0.15) -> InputFrame:
    """Poll a pyglet Controller through the control table (`app.input.keys`): by default the left stick moves,
    the right stick turns the camera, the right trigger runs, the left one strafes. pyglet's y axes
    point down, so they are negated to make 'up' positive."""
    def stick(action):
        x_axis, y_axis = gamepad_axes(action)
        return radial_deadzone([getattr(controller, x_axis), -getattr(controller, y_axis)], deadzone)

    def trigger(action):
        return getattr(controller, gamepad_axes(action)[0]) > TRIGGER_ON

    return InputFrame(stick("move"), trigger("run"), trigger("strafe"), stick("camera_turn"))


def combine(frames: list[InputFrame]) -> InputFrame:
    """Sum of sources (keyboard + every pad), sticks clamped to unit length, flags OR-ed."""
    if not frames:
        return InputFrame(np.zeros(2), False, False, np.zeros(2))
    return InputFrame(clamp_stick(sum(f.move for f in frames)), any(f.run for f in frames),
                      any(f.strafe for f in frames), clamp_stick(sum(f.camera for f in frames)))


def open_controller_manager():
    """pyglet's ControllerManager, or None when the platform has no input devices to offer."""
    try:
        import pyglet.input
        return pyglet.input.ControllerManager()
    except Exception:  # no /dev/input, no permission, no backend: run keyboard-only
        return None


@dataclass
class InputDevices:
    """Held keys and connected gamepads. Keep this object alive: pyglet holds weak handler refs."""
    held: set = field(default_factory=set)
    controllers: list = field(default_factory=list)
    manager: object = None
    messages: list = field(default_factory=list)  # faults for the panel's message lines (a pad that fails to open)
    notices: list = field(default_factory=list)  # passing news for a toast (a pad connected, none found)
    actions: list = field(default_factory=list)  # actions of gamepad buttons pressed since the last `take_actions`

    def attach_gamepads(self) -> None:
        self.manager = open_controller_manager()
        if self.manager is None:
            self.notices.append("No gamepad input available: keyboard and mouse only.")
            return
        self.manager.push_handlers(on_connect=self.on_connect, on_disconnect=self.on_disconnect)
        try:
            found = list(self.manager.get_controllers())
        except Exception:
            found = []
        for controller in found:
            self.on_connect(controller)

    def on_connect(self, controller) -> None:
        try:
            controller.open()
        except Exception as error:  # a pad that vanished while opening
            self.messages.append(f"Gamepad could not be opened: {error}")
            return
        controller.push_handlers(on_button_press=self.on_button_press)
        self.controllers.append(controller)
        self.notices.append(f"Gamepad connected: {getattr(controller, 'name', 'controller')}")

    def on_disconnect(self, controller) -> None:
        if controller in self.controllers:
            self.controllers.remove(controller)
            self.notices.append(f"Gamepad disconnected: {getattr(controller, 'name', 'controller')}")
        try:
            controller.close()
        except Exception:
            pass

    def describe(self) -> str:
        """Which devices steer, for the Stats section: 'keyboard and mouse' plus the pads' names."""
        names = [getattr(pad, "name", "gamepad") for pad in self.controllers]
        return "keyboard and mouse" + "".join(f", {name}" for name in names)

    def on_button_press(self, controller, button: str) -> None:
        action = action_for_button(button)
        if action is not None:
            self.actions.append(action)

    def take_actions(self) -> list:
        taken, self.actions = self.actions, []
        return taken

    def on_key_press(self, symbol, modifiers) -> None:
        self.held.add(symbol)

    def on_key_release(self, symbol, modifiers) -> None:
        self.held.discard(symbol)

    def release_all(self) -> None:
        """Forget held keys (the window lost focus: releases will not arrive)."""
        self.held.clear()

    def frame(self, deadzone: float = 0.15) -> InputFrame:
        frames = [keyboard_frame(self.held)]
        for controller in list(self.controllers):
            try:
                frames.append(gamepad_frame(controller, deadzone))
            except Exception:  # unplugged between the event and the poll
                self.controllers.remove(controller)
        return combine(frames)
