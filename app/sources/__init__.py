"""What the viewer shows moving, each as a source with one interface (`step(command, dt)`, `frames()` ->
`SceneFrame`s, `reset`, `snapshot` / `restore` for stepping back, `label`, `gait`): `live.py` the network
character (or a crowd), `playback.py` a BVH file, `puppet.py` the stand-in walker when no model loads.
`loading.py` opens a checkpoint or a BVH for the viewer (a failure into the panel), `styles.py` keeps the
live character's style and the panel's Style section in step."""
