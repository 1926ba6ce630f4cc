"""Every keyboard, mouse and gamepad control of the viewer, in one table (`CONTROLS`).

The input code dispatches through this table (`action_for_key`, `held_keys`, `action_for_button`,
`gamepad_axes`, `mouse_drag_action`), and the F1 help overlay and the README's controls table are
generated from it (`help_sections`, `markdown_table`), so what the help says and what the keys do
cannot disagree. An action is a name; the viewer maps each name to one method.
"""

from dataclasses import dataclass

from pyglet.window import key, mouse

SHIFT, CTRL = key.MOD_SHIFT, key.MOD_CTRL
# Modifiers that select a different chord; the others (Num Lock, Caps Lock, ...) are ignored.
CHORD_MODIFIERS = SHIFT | CTRL | key.MOD_ALT


@dataclass(frozen=True)
class Control:
    action: str  # what the viewer does: one method per name in the viewer's action table
    section: str  # heading in the help overlay and the README
    description: str
    keys: tuple = ()  # (symbol, modifiers) chords; a press runs the action
    held: bool = False  # the keys are read every tick while held (movement), not on press
    mouse: str = ""  # how the mouse does it, as the help says it
    mouse_buttons: int = 0  # pyglet mouse button mask a drag needs (with `mouse`)
    shift_mouse_buttons: int = 0  # ... and the buttons that do it with Shift held (taken before `mouse_buttons`)
    gamepad: tuple = ()  # controller button names (a press runs the action) or, when held, axis names
    gamepad_label: str = ""  # how the help names the gamepad control ("" = from `gamepad`)


def _keys(*symbols, modifiers=0) -> tuple:
    return tuple((symbol, modifiers) for symbol in symbols)


CONTROLS = (
    # --- the character
    Control("move_forward", "Character", "walk forward (relative to the camera)", _keys(key.W, key.UP), held=True),
    Control("move_back", "Character", "walk toward the camera", _keys(key.S, key.DOWN), held=True),
    Control("move_left", "Character", "walk left", _keys(key.A, key.LEFT), held=True),
    Control("move_right", "Character", "walk right", _keys(key.D, key.RIGHT), held=True),
    Control("move", "Character", "walk in any direction (tilt = speed)", held=True, gamepad=("leftx", "lefty"),
            gamepad_label="left stick"),
    Control("run", "Character", "run", _keys(key.LSHIFT, key.RSHIFT), held=True, gamepad=("righttrigger",),
            gamepad_label="right trigger"),
    Control("strafe_left", "Character", "side-step left (keeps the facing; with W / S: diagonally)", _keys(key.Q),
            held=True),
    Control("strafe_right", "Character", "side-step right (keeps the facing; with W / S: diagonally)", _keys(key.E),
            held=True),
    Control("strafe", "Character", "strafe while held: keep the facing, so S walks backward (the panel's View "
            "section can make it the default)", _keys(key.LALT, key.RALT), held=True, gamepad=("lefttrigger",),
            gamepad_label="left trigger"),
    Control("reset_character", "Character", "reset the character to the origin", _keys(key.SPACE), gamepad=("y",)),
    Control("next_style", "Character", "next style (most data first; the panel's Style section lists them)",
            _keys(key.N), gamepad=("b",)),
    Control("previous_style", "Character", "previous style", _keys(key.N, modifiers=SHIFT)),
    # --- time (the live simulation and playback)
    Control("toggle_pause", "Time", "pause / resume the simulation", _keys(key.K), gamepad=("start",)),
    Control("step_forward", "Time", "one tick (1/60 s) forward (pauses)", _keys(key.PERIOD),
            gamepad=("rightshoulder",)),
    Control("step_back", "Time", "one tick back (pauses)", _keys(key.COMMA), gamepad=("leftshoulder",)),
    Control("rewind_second", "Time", "one second back (pauses)", _keys(key.COMMA, modifiers=SHIFT)),
    Control("slower", "Time", "slower (down to 0.1x)", _keys(key.BRACKETLEFT)),
    Control("faster", "Time", "faster (up to 2x)", _keys(key.BRACKETRIGHT)),
    Control("normal_speed", "Time", "normal speed (1x)", _keys(key.BACKSLASH)),
    # --- camera
    Control("camera_follow", "Camera", "camera mode: follow the character (default)", _keys(key._1)),
    Control("camera_orbit", "Camera", "camera mode: circle around the character", _keys(key._2)),
    Control("camera_free", "Camera", "camera mode: free fly", _keys(key._3)),
    Control("camera_fixed", "Camera", "camera mode: fixed (stays put, keeps the character in view)", _keys(key._4)),
    Control("camera_next", "Camera", "next camera mode", gamepad=("x",)),
    Control("camera_frame", "Camera", "frame the character (the whole body in view, from where the camera looks)",
            _keys(key.F)),
    Control("camera_reset", "Camera", "reset the camera (follow mode, default view)", _keys(key.HOME),
            gamepad=("rightstick",), gamepad_label="right stick click"),
    Control("camera_turn", "Camera", "turn the camera around the character (free fly: look around)", held=True,
            mouse="drag", mouse_buttons=mouse.LEFT | mouse.RIGHT, gamepad=("rightx", "righty"),
            gamepad_label="right stick"),
    Control("camera_pan", "Camera", "pan: slide the view (F or Home centres the character again)", held=True,
            mouse="middle drag / Shift+drag", mouse_buttons=mouse.MIDDLE, shift_mouse_buttons=mouse.LEFT),
    Control("camera_zoom", "Camera", "zoom (free fly: move forward / back)", held=True, mouse="scroll wheel"),
    Control("camera_fly", "Camera", "free fly: W A S D move the camera, Q / E down / up", held=True,
            mouse="hold the right button"),
    # --- what is drawn
    Control("cycle_view_mode", "View", "body: mesh / capsules / skeleton", _keys(key.M)),
    Control("toggle_trajectory", "View", "trajectory overlay", _keys(key.T)),
    Control("toggle_contacts", "View", "foot contacts overlay", _keys(key.C)),
    Control("toggle_phase", "View", "phase overlay", _keys(key.P)),
    Control("toggle_joint_axes", "View", "joint axes overlay", _keys(key.J)),
    # --- the simulated body (pfnn_core.physics)
    Control("cycle_physics", "Physics", "physics: off / on / both (the kinematic pose as a ghost)", _keys(key.G)),
    Control("push_character", "Physics",
            "push the character at the chest toward the screen's right (60 N s; Physics section: strength)", _keys(key.B)),
    # --- capture
    Control("screenshot", "Capture", "save a screenshot (PNG named by date and time)", _keys(key.F12)),
    Control("toggle_video", "Capture", "start / stop recording a video (MP4)", _keys(key.F12, modifiers=SHIFT)),
    Control("toggle_recording", "Capture", "start recording the character to BVH (R twice: stop and save)", _keys(key.R)),
    # --- the panel and the application
    Control("toggle_panel", "Panel and help", "show / hide the panel", _keys(key.TAB)),
    Control("toggle_help", "Panel and help", "show / hide this help", _keys(key.F1), gamepad=("back",)),
    Control("escape", "Panel and help", "close the help, file browser or dialog; leave a text field, undoing what "
            "was typed (Enter keeps it; never quits)", _keys(key.ESCAPE)),
    Control("select_all", "Panel and help", "in a text field: select all (a click in a path field does too)",
            _keys(key.A, modifiers=CTRL)),
    Control("quit", "Panel and help", "quit (asks first while a training run is going)", _keys(key.Q, modifiers=CTRL)),
)

# Chords that act only inside a text field (imgui handles them there); listed so the help is complete.
TEXT_FIELD_ACTIONS = ("select_all",)

KEY_NAMES = {key.PERIOD: ".", key.COMMA: ",", key.BRACKETLEFT: "[", key.BRACKETRIGHT: "]", key.BACKSLASH: "\\",
             key.LSHIFT: "Shift", key.RSHIFT: "Shift", key.LALT: "Alt", key.RALT: "Alt", key.SPACE: "Space",
             key.ESCAPE: "Escape", key.TAB: "Tab", key.HOME: "Home", key.UP: "Up", key.DOWN: "Down", key.LEFT: "Left",
             key.RIGHT: "Right"}
BUTTON_NAMES = {"a": "A", "b": "B", "x": "X", "y": "Y", "start": "Start", "back": "Back",
                "leftshoulder": "left bumper", "rightshoulder": "right bumper", "rightstick": "right stick click",
                "leftstick": "left stick click", "guide": "Guide"}


def control(action: str) -> Control:
    return next(c for c in CONTROLS if c.action == action)


def key_label(symbol: int, modifiers: int = 0) -> str:
    """How the help writes a chord: 'Shift+F12', 'Ctrl+Q', ',', '1'."""
    name = KEY_NAMES.get(symbol) or key.symbol_string(symbol).lstrip("_")
    prefix = ("Ctrl+" if modifiers & CTRL else "") + ("Shift+" if modifiers & SHIFT else "")
    return prefix + name


def keys_label(c: Control) -> str:
    labels = [key_label(symbol, modifiers) for symbol, modifiers in c.keys]
    return " / ".join(dict.fromkeys(labels))  # left and right Shift are both "Shift"


def gamepad_text(c: Control) -> str:
    if c.gamepad_label:
        return c.gamepad_label
    return " / ".join(BUTTON_NAMES.get(name, name) for name in c.gamepad)


# What X11 (pyglet's `XLookupString`) reports for a key pressed with Shift on a US layout: the shifted
# keysym ('<' for Shift+,). Chords are written with the unshifted key, so these map back.
SHIFTED_SYMBOLS = {key.LESS: key.COMMA, key.GREATER: key.PERIOD, key.BRACELEFT: key.BRACKETLEFT,
                   key.BRACERIGHT: key.BRACKETRIGHT, key.BAR: key.BACKSLASH, key.EXCLAMATION: key._1,
                   key.AT: key._2, key.HASH: key._3, key.DOLLAR: key._4, key.QUESTION: key.SLASH,
                   key.COLON: key.SEMICOLON, key.DOUBLEQUOTE: key.APOSTROPHE, key.ASCIITILDE: key.GRAVE,
                   key.UNDERSCORE: key.MINUS, key.PLUS: key.EQUAL}
# Actions that work while the panel has the mouse or the keyboard (no character key among them).
PANEL_SAFE_ACTIONS = ("toggle_help", "escape", "quit", "toggle_panel", "screenshot", "toggle_video")


def unshifted(symbol: int, modifiers: int) -> int:
    """The key of a chord as the control table writes it: Shift+',' arrives from X11 as '<'."""
    return SHIFTED_SYMBOLS.get(symbol, symbol) if modifiers & SHIFT else symbol


def action_for_key(symbol: int, modifiers: int) -> str | None:
    """The press action of a chord (held controls have none); Num Lock and the like are ignored."""
    chord = (unshifted(symbol, modifiers), modifiers & CHORD_MODIFIERS)
    for c in CONTROLS:
        if not c.held and c.action not in TEXT_FIELD_ACTIONS and chord in c.keys:
            return c.action
    return None


def held_keys(action: str) -> frozenset:
    """Key symbols that hold a held control (movement, run, strafe) on."""
    return frozenset(symbol for symbol, _ in control(action).keys)


def action_for_button(button: str) -> str | None:
    """The press action of a gamepad button (pyglet's controller button names)."""
    for c in CONTROLS:
        if not c.held and button in c.gamepad:
            return c.action
    return None


def gamepad_axes(action: str) -> tuple:
    """The controller axis names a held gamepad control reads (e.g. ('leftx', 'lefty'))."""
    return control(action).gamepad


def mouse_drag_action(buttons: int, modifiers: int = 0) -> str | None:
    """What a drag with `buttons` held does (Shift+left drag pans, a plain one turns)."""
    if modifiers & SHIFT:
        for c in CONTROLS:
            if c.shift_mouse_buttons & buttons:
                return c.action
    for c in CONTROLS:
        if c.mouse_buttons & buttons:
            return c.action
    return None


def help_sections() -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """[(section, [(keys, mouse, gamepad, description), ...]), ...] in table order."""
    sections: dict[str, list] = {}
    for c in CONTROLS:
        sections.setdefault(c.section, []).append((keys_label(c), c.mouse, gamepad_text(c), c.description))
    return list(sections.items())


def markdown_table() -> str:
    """The README's controls table (a test keeps the README equal to it)."""
    lines = []
    for section, rows in help_sections():
        lines += ["", f"**{section}**", "", "| keys | mouse | gamepad | action |", "|---|---|---|---|"]
        for keys, mouse_text, pad, description in rows:
            cells = [keys, mouse_text, pad, description]
            lines.append("| " + " | ".join(cell.replace("|", "\\|") or " " for cell in cells) + " |")
    return "\n".join(lines[1:]) + "\n"
