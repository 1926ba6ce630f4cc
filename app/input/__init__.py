"""What the person at the viewer does: `keys.py` is the control table (every key, mouse and gamepad
control, which the dispatch, the F1 help and the README's tables all come from), `devices.py` turns held
keys and gamepads into one stick frame per tick, `window_events.py` takes the window's key, mouse, focus
and close events (press actions run through the viewer's action table) and steers the camera from held
input each frame."""
