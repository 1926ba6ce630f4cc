"""Rendering: the generated body mesh (pure geometry: closed, weighted, skinned right, on the bundled
skeleton and on others), the shadow-map helpers, and the renderer in a real EGL context (a character's
shadow falls where the sun says, each view mode draws the character, a crowd is drawn in full)."""

import numpy as np
import pytest
from conftest import BVH_DIR
from test_other_skeleton import POSER_NO_TOES, retarget

from app.render.body import cache as body_cache
from app.render.body.build import build_body
from app.render.body.cache import load_or_build_body
from app.render.body.rig import Rig, body_layout, rig_from_positions
from app.render.body.skinning import INFLUENCES, rotations_from_positions, skin_vertices, skinning_matrices
from app.render.renderer import VIEW_MODES
from app.render.scene import SceneFrame
from app.render.shadows import shadow_footprints, shadow_texture_matrix, shadow_view_projection
from pfnn_core.math.quat import quat_from_angle_axis, quat_from_yaw, quat_mul, quat_mul_vec, quat_normalize
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import forward_kinematics

FAST_VOXEL = 0.014  # metres: coarser than the viewer's, the same properties, a few times faster


def _reference(motion: bvh.Motion, frame: int = 0):
    rotations, positions = forward_kinematics(motion.rotations[frame], motion.positions[frame], motion.parents)
    return rotations, positions


def _rig(motion: bvh.Motion, frame: int = 0) -> Rig:
    rotations, positions = _reference(motion, frame)
    return Rig(np.asarray(motion.parents), np.asarray(motion.offsets, np.float64), rotations, positions,
               np.array([0.0, 0.0, 1.0]))


@pytest.fixture(scope="module")
def walk():
    return bvh.load(BVH_DIR / "dataset-2_walk_normal_001.bvh.gz")


@pytest.fixture(scope="module")
def bundled_body(walk):
    return build_body(_rig(walk), voxel=FAST_VOXEL)


@pytest.fixture(scope="module")
def poser(walk):
    """The walk on a skeleton with other names, no toes, metres and every bone along its parent's +Y."""
    motion, _, _ = retarget(walk, POSER_NO_TOES, None, "bone_y", ["Xposition", "Yposition", "Zposition", "Zrotation",
                                                                  "Yrotation", "Xrotation"],
                            ["Zrotation", "Yrotation", "Xrotation"], 1.0, 30.0)
    return motion


def _edges(triangles):
    edges = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return counts


def _segment_distance(points, a, b):
    ab = b - a
    t = np.clip(((points - a) @ ab) / max(ab @ ab, 1e-12), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=-1)


# ---- the body mesh (pure geometry) ------------------------------------------------------------

def test_the_bundled_skeleton_gets_a_closed_body_of_human_size(bundled_body, walk):
    lod0 = bundled_body.lods[0]
    counts = _edges(lod0.triangles)
    assert np.mean(counts == 2) > 0.999  # every edge between exactly two triangles: no holes
    a, b, c = (lod0.vertices[lod0.triangles[:, k]].astype(np.float64) for k in range(3))
    assert np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6.0 > 0.03  # outward-wound, ~0.06 m^3 of body
    height = np.ptp(lod0.vertices[:, 1])
    assert 1.55 < height < 1.85
    # the vertex normals agree with the outward winding of the triangles around them
    face = np.cross(b - a, c - a)
    around = np.zeros_like(lod0.normals, dtype=np.float64)
    for k in range(3):
        np.add.at(around, lod0.triangles[:, k], face)
    agree = np.einsum("ij,ij->i", around / np.linalg.norm(around, axis=-1, keepdims=True), lod0.normals)
    assert np.mean(agree > 0.5) > 0.99
    assert np.allclose(np.linalg.norm(lod0.normals, axis=-1), 1.0, atol=1e-3)
    sizes = [len(lod.triangles) for lod in bundled_body.lods]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < 0.1 * sizes[0] + 1000


def test_weights_are_normalised_and_bind_every_vertex_to_bones_next_to_it(bundled_body, walk):
    parents = np.asarray(walk.parents)
    bind = bundled_body.bind_pos
    for lod in bundled_body.lods:
        assert np.allclose(lod.weights.sum(axis=-1), 1.0, atol=1e-5)
        assert (lod.weights >= 0).all()
        for influence in range(INFLUENCES):
            joints, weights = lod.joints[:, influence], lod.weights[:, influence]
            used = weights > 0.1
            # the joint's own bones: to its parent and to its children (or the joint itself for a leaf)
            distance = np.full(len(lod.vertices), np.inf)
            for joint in np.unique(joints[used]):
                mine = used & (joints == joint)
                points = lod.vertices[mine].astype(np.float64)
                near = np.linalg.norm(points - bind[joint], axis=-1)
                for child in np.flatnonzero(parents == joint):
                    near = np.minimum(near, _segment_distance(points, bind[joint], bind[child]))
                if parents[joint] >= 0:
                    near = np.minimum(near, _segment_distance(points, bind[parents[joint]], bind[joint]))
                distance[mine] = near
            assert np.all(distance[used] < 0.26), f"influence {influence}: a vertex {distance[used].max():.2f} m away"


def test_a_rigid_motion_of_the_whole_skeleton_moves_the_mesh_rigidly(bundled_body):
    turn = quat_from_angle_axis(0.7, np.array([0.3, 1.0, -0.2]))
    shift = np.array([1.5, 0.2, -3.0])
    rotations = quat_mul(turn, bundled_body.bind_rot)
    positions = quat_mul_vec(turn, bundled_body.bind_pos) + shift
    lod = bundled_body.lods[1]
    same = skinning_matrices(bundled_body.bind_rot, bundled_body.bind_pos, bundled_body.bind_rot, bundled_body.bind_pos)
    rest, _ = skin_vertices(lod, same)
    assert np.allclose(rest, lod.vertices, atol=1e-5)  # the bind pose reproduces the rest mesh
    moved, normals = skin_vertices(lod, skinning_matrices(rotations, positions, bundled_body.bind_rot,
                                                          bundled_body.bind_pos))
    assert np.allclose(moved, quat_mul_vec(turn, lod.vertices.astype(np.float64)) + shift, atol=1e-5)
    assert np.allclose(normals, quat_mul_vec(turn, lod.normals.astype(np.float64)), atol=1e-4)


def test_bending_one_elbow_moves_only_the_forearm_and_hand(bundled_body, walk):
    names = list(walk.names)
    elbow, hand = names.index("LowerArm_L"), names.index("Hand_L")
    rotations, positions = bundled_body.bind_rot.copy(), bundled_body.bind_pos.copy()
    bend = quat_from_angle_axis(1.3, np.array([0.0, 0.0, 1.0]))
    for joint in (elbow, hand):
        rotations[joint] = quat_mul(bend, rotations[joint])
    positions[hand] = positions[elbow] + quat_mul_vec(bend, positions[hand] - positions[elbow])
    lod = bundled_body.lods[0]
    moved, _ = skin_vertices(lod, skinning_matrices(rotations, positions, bundled_body.bind_rot, bundled_body.bind_pos))
    displacement = np.linalg.norm(moved - lod.vertices, axis=-1)
    on_arm = np.isin(lod.joints, [elbow, hand]) & (lod.weights > 0)
    untouched = ~on_arm.any(axis=-1)
    assert untouched.mean() > 0.85 and np.allclose(displacement[untouched], 0.0, atol=1e-6)
    hand_only = np.all((lod.joints == hand) | (lod.weights == 0), axis=-1)
    assert hand_only.sum() > 20
    radius_before = np.linalg.norm(lod.vertices[hand_only] - positions[elbow], axis=-1)
    radius_after = np.linalg.norm(moved[hand_only] - positions[elbow], axis=-1)
    assert np.allclose(radius_before, radius_after, atol=1e-5) and displacement[hand_only].min() > 0.1


def test_another_skeleton_without_toes_and_other_axes_gets_a_body_too(poser, bundled_body):
    rig = _rig(poser)
    layout = body_layout(rig)
    assert len(layout.legs) == 2 and len(layout.arms) == 2
    model = build_body(rig, voxel=FAST_VOXEL)
    lod0 = model.lods[0]
    assert np.mean(_edges(lod0.triangles) == 2) > 0.999
    assert np.allclose(lod0.weights.sum(axis=-1), 1.0, atol=1e-5)
    # the same bone lengths in other joint frames: the same body, within a voxel or two
    assert abs(np.ptp(lod0.vertices[:, 1]) - np.ptp(bundled_body.lods[0].vertices[:, 1])) < 0.03
    # no toe joints, yet feet: the mesh reaches below and ahead of each ankle
    names = list(poser.names)
    for ankle in (names.index("lFoot"), names.index("rFoot")):
        below = lod0.vertices[np.linalg.norm(lod0.vertices[:, [0, 2]] - model.bind_pos[ankle, [0, 2]], axis=-1) < 0.2]
        assert below[:, 1].min() < model.bind_pos[ankle, 1] - 0.06
        assert below[:, 2].max() > model.bind_pos[ankle, 2] + 0.1
    # skinned to a posed frame, the hands end up at the posed wrists
    rotations, positions = _reference(poser, 20)
    posed, _ = skin_vertices(lod0, skinning_matrices(rotations, positions, model.bind_rot, model.bind_pos))
    for wrist in (names.index("lHand"), names.index("rHand")):
        bound = lod0.joints[:, 0] == wrist
        assert np.linalg.norm(posed[bound].mean(axis=0) - positions[wrist]) < 0.12


def test_a_bigger_skeleton_gets_a_proportionally_bigger_body(walk):
    small = build_body(_rig(walk), voxel=FAST_VOXEL, lod_triangles=(4000,))
    rig = _rig(walk)
    big = build_body(Rig(rig.parents, rig.offsets * 1.2, rig.ref_rot, rig.ref_pos * 1.2, rig.facing),
                     voxel=FAST_VOXEL * 1.2, lod_triangles=(4000,))
    ratio = np.ptp(big.lods[0].vertices, axis=0) / np.ptp(small.lods[0].vertices, axis=0)
    assert np.allclose(ratio, 1.2, atol=0.04)


def test_a_source_with_positions_only_is_skinned_from_its_joint_positions(walk):
    rotations, positions = _reference(walk, 0)
    rig = rig_from_positions(walk.parents, positions, np.array([0.0, 0.0, 1.0]))
    model = build_body(rig, voxel=FAST_VOXEL, lod_triangles=(3000,))
    _, later = _reference(walk, 15)
    lod = model.lods[0]
    posed, _ = skin_vertices(lod, skinning_matrices(rotations_from_positions(rig, later), later, model.bind_rot,
                                                    model.bind_pos))
    names = list(walk.names)
    for joint in (names.index("Hand_L"), names.index("Foot_R"), names.index("Head")):
        bound = lod.joints[:, 0] == joint
        assert np.linalg.norm(posed[bound].mean(axis=0) - later[joint]) < 0.15


def test_the_cache_is_keyed_by_the_skeleton_and_survives_a_broken_file(tmp_path, walk, monkeypatch):
    rig = _rig(walk)
    other_pose = _rig(walk, 10)
    assert rig.key() == other_pose.key()  # the reference pose is not part of the key
    assert rig.key() != Rig(rig.parents, rig.offsets * 1.1, rig.ref_rot, rig.ref_pos, rig.facing).key()
    builds = []
    real_build = body_cache.build_body
    monkeypatch.setattr(body_cache, "build_body", lambda r: builds.append(1) or real_build(r, voxel=0.03,
                                                                                            lod_triangles=(800,)))
    first = load_or_build_body(rig, tmp_path)
    second = load_or_build_body(rig, tmp_path)
    assert len(builds) == 1 and np.array_equal(first.lods[0].triangles, second.lods[0].triangles)
    (tmp_path / f"{rig.key()}.npz").write_bytes(b"not a zip file")
    third = load_or_build_body(rig, tmp_path)
    assert len(builds) == 2 and len(third.lods[0].vertices) == len(first.lods[0].vertices)


# ---- shadow map helpers -----------------------------------------------------------------------

def test_the_sun_view_holds_every_caster_and_snaps_to_whole_texels():
    light = np.array([0.5, 0.8, -0.33])
    centres = np.array([[0.0, 0.9, 0.0], [3.0, 0.9, 1.0]])
    radii = np.array([1.0, 1.0])
    clip, size = shadow_view_projection(light, centres, radii)
    basis = np.linalg.qr(np.stack([light, [1.0, 0, 0], [0, 0, 1.0]], axis=1))[0]
    for centre, radius in zip(centres, radii):
        for sign in (-1, 1):
            for axis in basis.T:
                point = clip @ np.append(centre + sign * radius * axis, 1.0)
                assert np.all(np.abs(point[:3]) <= 1.0 + 1e-6)
    texel = 2.0 / clip[0, 0] / size
    moved, _ = shadow_view_projection(light, centres + np.array([0.3 * texel, 0.0, 0.0]), radii)
    offset = (moved - clip)[:2, 3] / clip[0, 0] / texel
    assert np.allclose(offset, np.round(offset), atol=1e-6)  # the box moves by whole texels only
    texture = shadow_texture_matrix(clip) @ np.append(centres[0], 1.0)
    assert np.all((texture[:3] > 0) & (texture[:3] < 1))


def test_a_shadow_footprint_holds_the_ground_shadow_of_every_joint():
    light = np.array([0.5, 0.8, -0.33]) / np.linalg.norm([0.5, 0.8, -0.33])
    rng = np.random.default_rng(0)
    poses = rng.uniform([-0.3, 0.0, -0.3], [0.3, 1.8, 0.3], size=(3, 22, 3)) + np.array([[[0, 0, 0]], [[4, 0, 1]], [[-2, 0, 5]]])
    poses[:, :4, 1] = 0.0  # feet on the ground: their shadows are where they stand
    quads = shadow_footprints(poses, light)
    for pose, quad in zip(poses, quads):
        shadows = pose[:, [0, 2]] - light[[0, 2]] * (pose[:, 1:2] / light[1])
        local = shadows - quad[:2]
        u = local @ quad[2:4] / (quad[2:4] @ quad[2:4])
        v = local @ quad[4:6] / (quad[4:6] @ quad[4:6])
        assert np.all(np.abs(u) <= 1.0) and np.all(np.abs(v) <= 1.0)
        assert np.abs(u).max() > 0.7 and np.abs(v).max() > 0.5  # and not much larger than needed


# ---- the renderer in a real EGL context -------------------------------------------------------

WIDTH, HEIGHT = 480, 320


@pytest.fixture(scope="module")
def gl(tmp_path_factory):
    import moderngl

    from app.render.renderer import Renderer

    ctx = moderngl.create_standalone_context(backend="egl")
    framebuffer = ctx.simple_framebuffer((WIDTH, HEIGHT))
    renderer = Renderer(ctx, samples=0, cache_dir=tmp_path_factory.mktemp("body-cache"))
    yield renderer, framebuffer
    ctx.release()


def _frames(walk, offsets=((0.0, 0.0),), frame: int = 0, yaw: float = 0.0):
    rotations, positions = _reference(walk, frame)
    turn = quat_from_yaw(yaw)
    rotations, positions = quat_mul(turn, rotations), quat_mul_vec(turn, positions)
    positions = positions - positions[1] * np.array([1.0, 0.0, 1.0])
    out = []
    for x, z in offsets:
        shift = np.array([x, 0.0, z])
        out.append(SceneFrame(joint_pos=positions + shift, parents=np.asarray(walk.parents), root_pos=shift,
                              root_dir=quat_mul_vec(turn, np.array([0.0, 0.0, 1.0])), names=tuple(walk.names),
                              joint_rot=quat_normalize(rotations), offsets=np.asarray(walk.offsets, np.float64)))
    return out


def _camera(yaw=0.6, pitch=0.35, distance=4.0):
    from app.render.camera import OrbitCamera

    camera = OrbitCamera(yaw=yaw, pitch=pitch, distance=distance)
    camera.snap(np.zeros(3))
    return camera


def _draw(gl, frames, camera, view_mode="mesh"):
    from app.render.overlays import OverlayGeometry

    renderer, framebuffer = gl
    renderer.render(frames, OverlayGeometry(), camera, (WIDTH, HEIGHT), view_mode=view_mode, framebuffer=framebuffer)
    data = framebuffer.read(components=3)
    return np.frombuffer(data, np.uint8).reshape(HEIGHT, WIDTH, 3)[::-1].astype(int)


def _pixels(camera, points):
    from app.render.camera import project_points

    return project_points(np.asarray(points, np.float64), camera.projection(WIDTH / HEIGHT) @ camera.view(), WIDTH, HEIGHT)


def test_a_character_darkens_the_ground_where_the_sun_casts_its_shadow(gl, walk):
    camera = _camera(yaw=0.0, pitch=1.2, distance=5.0)  # looking down from above
    frames = _frames(walk)
    empty = _draw(gl, [], camera)
    with_character = _draw(gl, frames, camera)
    light = gl[0].light_direction
    chest = frames[0].joint_pos[3]
    shadow_point = chest - light * chest[1] / light[1]  # where the chest's shadow lies on the ground
    mirror_point = chest * np.array([1.0, 0.0, 1.0]) * 2 - shadow_point * np.array([1.0, 0.0, 1.0])
    (sx, sy), (mx, my) = _pixels(camera, [shadow_point, mirror_point])
    darkening = (empty - with_character).sum(axis=-1)

    def around(x, y):
        return darkening[int(y) - 3:int(y) + 4, int(x) - 3:int(x) + 4].mean()

    assert around(sx, sy) > 60  # clearly darker where the shadow falls
    assert abs(around(mx, my)) < 5  # and untouched on the sunny side, as far from the body
    # the shadow is one connected patch from the feet toward the shadow point, no speckles elsewhere
    dark = darkening > 30
    foot = _pixels(camera, [frames[0].joint_pos[17] * np.array([1.0, 0.0, 1.0])])[0]
    ys, xs = np.nonzero(dark)
    along = np.array([sx - foot[0], sy - foot[1]])
    t = ((xs - foot[0]) * along[0] + (ys - foot[1]) * along[1]) / (along @ along)
    assert np.mean((t > -0.6) & (t < 1.6)) > 0.95


def test_each_view_mode_draws_the_character_around_its_joints(gl, walk):
    camera = _camera()
    frames = _frames(walk, frame=12)
    empty = _draw(gl, [], camera)
    joints = _pixels(camera, frames[0].joint_pos[1:])
    covered = {}
    for mode in VIEW_MODES:
        image = _draw(gl, frames, camera, mode)
        changed = np.abs(image - empty).sum(axis=-1) > 24
        for x, y in joints:  # something drawn at every joint
            assert changed[int(y) - 3:int(y) + 4, int(x) - 3:int(x) + 4].any(), mode
        # the body itself (not its shadow): pixels that are not just a darker ground
        body = changed & ~np.all((image <= empty + 2) & (image >= empty * 0.4), axis=-1)
        covered[mode] = body.sum()
        assert gl[0].last_draw["view"] == mode
    assert covered["skeleton"] < 0.5 * covered["capsules"]
    assert 0.5 * covered["capsules"] < covered["mesh"] < 2.5 * covered["capsules"]
    assert gl[0].last_draw["body_instances"] == 0  # the skeleton view drew no body


def test_a_crowd_is_drawn_in_full_with_one_instanced_draw_per_mesh_kind(gl, walk, monkeypatch):
    from app.render import characters, gpu

    grid = [(x, z) for x in (-2.4, -1.2, 0.0, 1.2, 2.4) for z in (-1.5, 0.0, 1.5)]
    camera = _camera(yaw=0.0, pitch=0.9, distance=9.0)
    frames = _frames(walk, offsets=[(0.0, 0.0)] + [g for g in grid if g != (0.0, 0.0)], frame=5)
    empty = _draw(gl, [], camera)
    draws = []
    real_render = gpu.InstanceStream.render
    monkeypatch.setattr(gpu.InstanceStream, "render",
                        lambda stream, name, mode=4: (draws.append((name, stream.counts.get(name, stream.count)))
                                                      if stream.counts.get(name, stream.count) else None,
                                                      real_render(stream, name, mode)))
    image = _draw(gl, frames, camera, "mesh")
    drawn = gl[0].last_draw
    assert drawn["body_instances"] == len(frames) and sum(drawn["tiers"]) == len(frames)
    body_draws = [count for name, count in draws if name in ("main", "shadow")]
    assert sum(count for name, count in draws if name == "main") == len(frames)
    assert len(body_draws) <= 2 * len(characters.BODY_TIER_LODS)
    changed = np.abs(image - empty).sum(axis=-1) > 24
    for frame in frames:  # every character is there: pixels around its chest
        x, y = _pixels(camera, [frame.joint_pos[3]])[0]
        assert changed[int(y) - 2:int(y) + 3, int(x) - 2:int(x) + 3].mean() > 0.8
    draws.clear()
    _draw(gl, frames, camera, "capsules")
    assert gl[0].last_draw["capsule_instances"] > 30 * len(frames)
    assert len([1 for name, _ in draws if name == "main"]) <= len(characters.CAPSULE_TIER_MESHES)


def test_a_skeleton_that_cannot_have_a_body_is_drawn_as_capsules_in_the_mesh_view(gl):
    # a branching arm: no pelvis with a spine and two legs
    positions = np.array([[0.0, 1.0, 0.0], [0.0, 1.3, 0.0], [0.3, 1.3, 0.0], [-0.3, 1.3, 0.0]])
    frame = SceneFrame(joint_pos=positions, parents=np.array([-1, 0, 1, 1]), root_pos=np.zeros(3),
                       root_dir=np.array([0.0, 0.0, 1.0]))
    camera = _camera()
    empty = _draw(gl, [], camera)
    image = _draw(gl, [frame], camera, "mesh")
    assert gl[0].last_draw["body_instances"] == 0 and gl[0].last_draw["capsule_instances"] == 2 + 3
    changed = np.abs(image - empty).sum(axis=-1) > 24
    for point in (positions[1], 0.5 * (positions[1] + positions[2])):  # a joint, a bone
        x, y = _pixels(camera, [point])[0]
        assert changed[int(y) - 2:int(y) + 3, int(x) - 2:int(x) + 3].mean() > 0.8


def test_the_stand_in_character_with_positions_only_gets_a_skinned_body(gl):
    from app.sources.puppet import PuppetSource

    puppet = PuppetSource()
    frame = puppet.frames()[0]
    assert frame.joint_rot is None
    camera = _camera()
    empty = _draw(gl, [], camera)
    image = _draw(gl, [frame], camera, "mesh")
    assert gl[0].last_draw["body_instances"] == 1
    changed = np.abs(image - empty).sum(axis=-1) > 24
    for joint in (5, 9, 13, 17, 21):  # head, hands, toes
        x, y = _pixels(camera, [frame.joint_pos[joint]])[0]
        assert changed[int(y) - 4:int(y) + 5, int(x) - 4:int(x) + 5].any()
