"""The PFNN viewer (pyglet window, moderngl rendering, imgui-bundle panel); depends on `pfnn_core`, never
the reverse.

- `cli.py`: `pfnn-viewer` / `run_viewer.py`; `viewer.py`: the window and its frame loop (fixed-timestep
  accumulator, render interpolation); `actions.py`: the one action table keys and panel requests share;
  `transport.py`: pause, slow motion, stepping back; `paths.py`: where the viewer reads and writes files.
- `input/`: the control table and the devices; `sources/`: what moves (live network, BVH playback,
  stand-in); `render/`: what is drawn; `ui/`: the panel, HUD and help; `jobs/`: training, captures,
  the clip editor's actions.
"""
