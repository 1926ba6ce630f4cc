"""What the person at the viewer does: `keys.py` is the control table (every key, mouse and gamepad
control, which the dispatch, the F1 help and the README's tables all come from), `devices.py` turns held
keys and gamepads into one stick frame per tick."""
