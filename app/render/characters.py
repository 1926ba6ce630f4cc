"""The characters' part of a frame: per skeleton its capsule and stick styles and its skinned body on the
GPU (built or read from the caches on first use), view culling (a character is drawn when it or its
shadow is in view), detail tiers, the upload of this frame's poses (joint matrices into a texture for
the bodies, capsule instances for the other views) and the instanced draws of both passes. Each mesh kind
is one instanced draw call for all the characters that use it."""

from dataclasses import dataclass, field

import moderngl
import numpy as np

from app.render.body.cache import load_or_build_body
from app.render.body.mesh import BodyModel
from app.render.body.rig import Rig, rig_from_positions
from app.render.body.skinning import rotation_plan, rotations_from_positions, skinning_matrices
from app.render.geometry import capsule_mesh, character_bounds, spheres_in_view
from app.render.gpu import InstanceStream
from app.render.palette import Palette
from app.render.scene import SceneFrame
from app.render.shadows import shadow_footprints
from app.render.skeleton_view import SkeletonStyle, capsule_instances, skeleton_style

BODY_VERTEX = np.dtype([("position", np.float32, 3), ("normal", np.float32, 3), ("joints", np.int32, 4),
                        ("weights", np.float32, 4), ("materials", np.float32, 4)])
BODY_FORMAT = ("3f 3f 4i 4f 4f", "in_position", "in_normal", "in_joints", "in_weights", "in_material")
BODY_INSTANCE = ("1f 3f/i", "in_row", "in_shirt")


# Detail tiers: the followed character, crowd members near the camera, the rest of a crowd. Each tier is
# one instanced draw per pass, with a coarser mesh in the shadow pass (its soft edge hides the facets).
LOD_NEAR_DISTANCE = 8.0  # metres from the camera
BODY_TIER_LODS = ((0, 1), (1, 2), (2, 2))  # (main pass, shadow pass) body level of detail per tier
CAPSULE_MESHES = {"high": (12, 4), "low": (8, 2), "coarse": (6, 1)}  # (segments, rings)
CAPSULE_TIER_MESHES = (("high", "low"), ("low", "coarse"), ("coarse", "coarse"))


class BodyBuffers:
    """One skeleton's body model on the GPU: its levels of detail, and one instance stream per detail
    tier, each with a main-pass and a shadow-pass vertex array."""

    def __init__(self, ctx, programs, model: BodyModel):
        self.model = model
        meshes = []
        for lod in model.lods:
            vertices = np.zeros(len(lod.vertices), BODY_VERTEX)
            vertices["position"], vertices["normal"] = lod.vertices, lod.normals
            vertices["joints"], vertices["weights"], vertices["materials"] = lod.joints, lod.weights, lod.materials
            meshes.append((ctx.buffer(vertices.tobytes()), ctx.buffer(lod.triangles.astype(np.int32).tobytes())))

        def factory(lods):
            lods = [min(lod, len(meshes) - 1) for lod in lods]

            def make(instances):
                return {pass_name: ctx.vertex_array(programs[program], [
                    (meshes[lod][0], *BODY_FORMAT), (instances, *BODY_INSTANCE)], meshes[lod][1], skip_errors=True)
                    for pass_name, program, lod in (("main", "body", lods[0]), ("shadow", "body_shadow", lods[1]))}
            return make

        self.tiers = [InstanceStream(ctx, factory(lods), 4 * 4) for lods in BODY_TIER_LODS]


@dataclass
class _SkeletonEntry:
    """What the renderer keeps per skeleton: the frames' own arrays (to recognise the skeleton without
    hashing every frame), the capsule and stick styles, the body (built on first use) and its rig."""
    parents: np.ndarray
    offsets: np.ndarray | None
    names: tuple | None
    capsules: SkeletonStyle
    sticks: SkeletonStyle
    rig: Rig | None = None
    body: BodyBuffers | None = None
    body_error: str = ""
    positions_only: bool = False
    rotation_fit: object = None


@dataclass
class _Group:
    """The characters of one skeleton in this frame, the followed one first when it is among them."""
    entry: _SkeletonEntry
    frames: list = field(default_factory=list)
    crowd_index: list = field(default_factory=list)  # each frame's index in the source (shirt colours)
    tier: list = field(default_factory=list)  # each frame's detail tier


class Characters:
    """What the renderer keeps and does for the characters (see the module docstring)."""

    def __init__(self, ctx, programs: dict, palette: Palette, cache_dir=None):
        self.ctx, self.programs, self.palette, self.cache_dir = ctx, programs, palette, cache_dir
        self._skeletons: list[_SkeletonEntry] = []
        self._entry_by_arrays: dict = {}
        self._bodies: dict[str, BodyModel] = {}  # by skeleton key: the in-memory cache
        meshes = {detail: tuple(ctx.buffer(array.tobytes()) for array in capsule_mesh(*shape))
                  for detail, shape in CAPSULE_MESHES.items()}

        def capsule_vaos(tier_meshes):
            return lambda instances: {name: ctx.vertex_array(programs[program], [
                (meshes[mesh][0], "3f 3f 1f", "in_position", "in_normal", "in_end"),
                (instances, "3f 3f 1f 3f/i", "in_a", "in_b", "in_radius", "in_colour")], meshes[mesh][1],
                skip_errors=True) for name, program, mesh in zip(("main", "shadow"), ("mesh", "mesh_shadow"), tier_meshes)}

        self._capsules = [InstanceStream(ctx, capsule_vaos(tier), 10 * 4) for tier in CAPSULE_TIER_MESHES]
        self.skin_texture = None  # [rows = characters, 3 texels per joint] joint matrices

    def _ensure_skin_texture(self, width: int, rows: int) -> None:
        texture = self.skin_texture
        if texture is not None and texture.width >= width and texture.height >= rows:
            return
        if texture is not None:
            texture.release()
        width = max(width, texture.width if texture is not None else 0)
        rows = max(64, rows, texture.height if texture is not None else 0)
        self.skin_texture = self.ctx.texture((width, rows), 4, dtype="f4")
        self.skin_texture.filter = (moderngl.NEAREST, moderngl.NEAREST)

    # ---- skeletons and bodies --------------------------------------------------------------------
    def _entry_for(self, frame: SceneFrame) -> _SkeletonEntry:
        """The skeleton's entry: found by the identity of the frame's arrays (sources hand the same
        arrays to every frame), else by their values, else made."""
        key = (id(frame.parents), id(frame.offsets), frame.names)
        known = self._entry_by_arrays.get(key)
        if known is not None and known[0] is frame.parents and known[1] is frame.offsets:
            return known[2]
        entry = next((entry for entry in self._skeletons
                      if np.array_equal(entry.parents, frame.parents) and entry.names == frame.names
                      and (entry.offsets is None) == (frame.offsets is None)
                      and (frame.offsets is None or np.allclose(entry.offsets, frame.offsets, atol=1e-6))), None)
        if entry is None:
            entry = _SkeletonEntry(frame.parents, frame.offsets, frame.names,
                                   skeleton_style(frame.parents, frame.names, self.palette),
                                   skeleton_style(frame.parents, frame.names, self.palette, sticks=True))
            self._skeletons.append(entry)
        self._entry_by_arrays[key] = (frame.parents, frame.offsets, entry)  # holds the arrays: ids stay theirs
        return entry

    def body_for(self, entry: _SkeletonEntry, frame: SceneFrame) -> BodyBuffers | None:
        """The skeleton's body on the GPU, built (or read from the caches) on first use; None when the
        skeleton cannot have one (then it is drawn as capsules)."""
        if entry.body is not None or entry.body_error:
            return entry.body
        try:
            if frame.joint_rot is not None and frame.offsets is not None:
                rig = Rig(np.asarray(frame.parents), np.asarray(frame.offsets, np.float64),
                          np.asarray(frame.joint_rot, np.float64), np.asarray(frame.joint_pos, np.float64),
                          np.asarray(frame.root_dir, np.float64))
            else:
                rig = rig_from_positions(frame.parents, frame.joint_pos, frame.root_dir)
                entry.positions_only = True
            key = rig.key()
            if key not in self._bodies:
                self._bodies[key] = load_or_build_body(rig, self.cache_dir)
            model = self._bodies[key]
            if not entry.positions_only:
                rig = Rig(rig.parents, rig.offsets, model.bind_rot, model.bind_pos, rig.facing)
            entry.rig, entry.body = rig, BodyBuffers(self.ctx, self.programs, model)
        except Exception as error:  # any skeleton the generator cannot dress: keep drawing it as capsules
            entry.body_error = f"{type(error).__name__}: {error}"
        return entry.body

    def _groups(self, frames: list[SceneFrame], indices: list[int], tiers: np.ndarray) -> list[_Group]:
        groups: dict[int, _Group] = {}
        for index, frame, tier in zip(indices, frames, tiers):
            entry = self._entry_for(frame)
            group = groups.setdefault(id(entry), _Group(entry))
            group.frames.append(frame)
            group.crowd_index.append(index)
            group.tier.append(int(tier))
        return list(groups.values())

    def _skin_rows(self, group: _Group, model: BodyModel) -> np.ndarray:
        """[B, J * 3, 4] rows of the bind-to-pose matrices of the group's characters."""
        positions = np.stack([frame.joint_pos for frame in group.frames])
        entry = group.entry
        if entry.positions_only:
            if entry.rotation_fit is None:
                entry.rotation_fit = rotation_plan(entry.rig)
            rotations = rotations_from_positions(entry.rig, positions, entry.rotation_fit)
        else:
            rotations = np.stack([frame.joint_rot for frame in group.frames])
        matrices = skinning_matrices(rotations, positions, model.bind_rot, model.bind_pos)
        return matrices.reshape(len(group.frames), -1, 4).astype(np.float32)

    # ---- this frame ------------------------------------------------------------------------------
    def cull(self, frames, view_proj, eye, light_direction) -> tuple[list[SceneFrame], list[int], np.ndarray]:
        """The characters to draw (in view, or casting a shadow into it), their indices in `frames` (0:
        the followed one, then front to back from `eye`) and their shadow footprints on the ground [N, 6]."""
        if not frames:
            return [], [], np.zeros((0, 6), np.float32)
        if len({np.shape(frame.joint_pos) for frame in frames}) == 1:
            footprints = shadow_footprints(np.stack([frame.joint_pos for frame in frames]), light_direction)
        else:
            footprints = np.concatenate([shadow_footprints(frame.joint_pos[None], light_direction)
                                         for frame in frames])
        # a software rasteriser pays vertex work for every character drawn, seen or not
        cull_centres, cull_radii = character_bounds(frames)
        footprint_radii = np.linalg.norm(footprints[:, 2:4], axis=-1) + np.linalg.norm(footprints[:, 4:6], axis=-1)
        footprint_centres = np.stack([footprints[:, 0], np.zeros(len(frames)), footprints[:, 1]], axis=-1)
        keep = spheres_in_view(cull_centres, cull_radii, view_proj) | \
            spheres_in_view(footprint_centres, footprint_radii, view_proj)
        indices = np.flatnonzero(keep)
        # front to back (the followed character first): hidden surfaces fail the early depth test
        distance = np.linalg.norm(cull_centres[indices] - eye, axis=-1)
        indices = [int(index) for index in indices[np.lexsort((distance, indices != 0))]]
        return [frames[index] for index in indices], indices, footprints[indices]

    def prepare(self, casters: list[SceneFrame], indices: list[int], view_mode: str, eye: np.ndarray) -> dict:
        """Upload this frame's character data (joint matrices or capsule instances) for both passes."""
        draw = {"view": view_mode, "bodies": [], "tiers": [0, 0, 0], "capsule_instances": 0, "body_instances": 0}
        tiers = np.zeros(len(casters), int)
        if casters:
            distance = np.linalg.norm(np.stack([frame.root_pos for frame in casters]) - eye, axis=-1)
            tiers = np.where(np.array(indices) == 0, 0, np.where(distance < LOD_NEAR_DISTANCE, 1, 2))
        capsule_parts = [[] for _ in CAPSULE_TIER_MESHES]
        skin_rows, body_draws, row = [], [], 0
        shirts = np.array(self.palette.shirts, np.float32)
        for group in self._groups(casters, indices, tiers):
            group_tiers = np.array(group.tier)
            for tier in group_tiers:
                draw["tiers"][tier] += 1
            body = self.body_for(group.entry, group.frames[0]) if view_mode == "mesh" else None
            if body is not None and not group.entry.positions_only and any(f.joint_rot is None for f in group.frames):
                body = None  # a body made from rotations cannot follow a frame without them: capsules this time
            if body is None:
                style = group.entry.sticks if view_mode == "skeleton" else group.entry.capsules
                poses = np.stack([frame.joint_pos for frame in group.frames]).astype(np.float32)
                for tier, parts in enumerate(capsule_parts):  # (instances, how many of them are bones) pairs
                    chosen = group_tiers == tier
                    if np.any(chosen):
                        parts += [capsule_instances(style, poses[chosen]), len(style.bones) * int(np.sum(chosen))]
                continue
            rows = self._skin_rows(group, body.model)
            skin_rows.append(rows)
            instance = np.concatenate([np.arange(row, row + len(rows), dtype=np.float32)[:, None],
                                       shirts[np.array(group.crowd_index) % len(shirts)]], axis=-1)
            for tier, stream in enumerate(body.tiers):
                stream.upload(instance[group_tiers == tier])
            body_draws.append(body)
            draw["body_instances"] += len(rows)
            row += len(rows)
        if skin_rows:
            width = max(rows.shape[1] for rows in skin_rows)
            self._ensure_skin_texture(width, row)
            packed = np.zeros((row, width, 4), np.float32)
            start = 0
            for rows in skin_rows:
                packed[start:start + len(rows), :rows.shape[1]] = rows
                start += len(rows)
            self.skin_texture.write(packed.tobytes(), viewport=(0, 0, width, row))
        for stream, parts in zip(self._capsules, capsule_parts):
            # bones of every character first, then their joint spheres: the shadow pass draws the bones only
            bones = [part[:count] for part, count in zip(parts[::2], parts[1::2])]
            spheres = [part[count:] for part, count in zip(parts[::2], parts[1::2])]
            data = np.concatenate(bones + spheres) if bones else np.zeros((0, 10), np.float32)
            draw["capsule_instances"] += stream.upload(data)
            stream.counts = {"shadow": sum(len(b) for b in bones)}
        draw["bodies"] = body_draws
        return draw

    def draw(self, draw: dict, pass_name: str) -> None:
        if draw["bodies"] and self.skin_texture is not None:
            self.skin_texture.use(1)
            for body in draw["bodies"]:
                for stream in body.tiers:
                    stream.render(pass_name)
        for stream in self._capsules:
            stream.render(pass_name)
