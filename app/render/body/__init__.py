"""A skinned body mesh for any humanoid skeleton, made from its bone lengths alone (pure numpy).

The body is a smooth implicit surface: tapered capsules ("round cones") along the bones, their signed
distance fields blended with a smooth minimum, meshed once with marching cubes in a bind pose (legs
straight and slightly apart, arms out at 45 degrees, spine upright, twists taken from a reference pose so
that joints bend the way they do in the data), decimated into levels of detail, and skinned with linear
blend skinning: each vertex follows up to four joints, weighted by its distance to their body parts.

- `rig.py`: `Rig` (what the generator needs to know about a skeleton: parents, bone offsets, a reference
  pose), `body_layout` (which joints form the pelvis, spine, neck, arms and legs) and `bind_pose` (the
  pose the mesh is made in).
- `primitives.py`: `body_primitives`, the round cones, each with the joint that drives it and a material.
- `surface.py`: their signed distance field, marching cubes, normals, decimation, material scores.
- `skinning.py`: the 4 joints and weights per vertex, `skinning_matrices` / `skin_vertices` (the CPU
  reference of the blend the GPU does in `shaders/body.glsl`), rotations for positions-only sources.
- `mesh.py`: `BodyMesh` (one level of detail) and `BodyModel`; `build.py`: `build_body(rig)`.
- `cache.py`: `load_or_build_body`, kept on disk under a hash of the skeleton.

Conventions as in `pfnn_core/math/quat.py`: metres, +Y up, quaternions (w, x, y, z). The body frame used
for the bind pose faces +Z with its left side on +X.
"""
