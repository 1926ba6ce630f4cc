"""The ImGui panel and overlays: `state.py` (the one `ViewerState` every widget reads and writes),
`panel.py` (the frame's UI: HUD, panel, browser, help, quit dialog), `sections/` (one file per panel
section), `hud.py`, `help.py`, `file_browser.py`, `path_fields.py`, `widgets.py`, `messages.py` (errors
as one readable line) and `theme.py` (the colours and the look, defined once)."""
