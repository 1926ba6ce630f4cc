"""Drawing the 3D view with moderngl: `renderer.py` runs a frame's passes; `characters.py` (culling, detail
tiers, pose upload, instanced draws), `shadows.py` (the sun's shadow map), `skeleton_view.py` (capsule and
skeleton views), `body/` (the generated skinned body), `geometry.py`, `gpu.py`, `programs.py` and
`palette.py` serve it; `scene.py` is what one frame shows (`SceneFrame`, interpolation), `overlays.py` the
overlay geometry built from it, `camera.py` the camera modes and matrices."""
