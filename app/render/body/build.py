"""`build_body(rig)`: the body model of a skeleton, stage by stage: layout, bind pose, round cones, surface,
then per level of detail the decimated mesh moved onto the surface, its normals, skinning weights and
material scores."""

from __future__ import annotations

import numpy as np

from app.render.body.mesh import LOD_TRIANGLES, BodyMesh, BodyModel
from app.render.body.primitives import body_primitives
from app.render.body.rig import Rig, bind_pose, body_layout
from app.render.body.skinning import skin_weights
from app.render.body.surface import decimate, field_normals, marching_cubes_surface, material_scores, project_to_surface


def build_body(rig: Rig, voxel: float | None = None, lod_triangles=LOD_TRIANGLES) -> BodyModel:
    """The body model of a rig: bind pose, surface, levels of detail with normals, weights and material
    scores."""
    layout = body_layout(rig)
    bind_rot, bind_pos = bind_pose(rig, layout)
    prims = body_primitives(rig, layout, bind_pos)
    s = layout.scale
    voxel = 0.009 * s if voxel is None else voxel
    blend = 0.02 * s
    vertices, triangles = marching_cubes_surface(prims, voxel, blend)
    lods = []
    for count in lod_triangles:
        points, faces = decimate(vertices, triangles, count)
        points = project_to_surface(points, prims, blend, 0.25 * voxel)
        normals = field_normals(points, prims, blend, 0.25 * voxel)
        joints, weights = skin_weights(points, prims, rig.parents, falloff=0.022 * s)
        materials = material_scores(points, prims, layout.neck[-1], bind_pos[layout.neck[-1]], s)
        lods.append(BodyMesh(points.astype(np.float32), normals.astype(np.float32), faces.astype(np.int32),
                             joints, weights, materials))
    return BodyModel(rig.key(), bind_rot, bind_pos, lods)

