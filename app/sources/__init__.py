"""What the viewer shows moving, each as a source with one interface (`step(command, dt)`, `frames()` ->
`SceneFrame`s, `reset`, `snapshot` / `restore` for stepping back, `label`): `live.py` the network
character (or a crowd), `playback.py` a BVH file, `puppet.py` the stand-in walker when no model loads."""
