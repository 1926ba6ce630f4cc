"""Motion matching's gait rule: a walk is searched among walking clips' frames, a run among run clips', on a
hand-made database where the frame nearest by features alone is of the other gait; the gait asked is read
from the planned path's speed seen without the runtime's slow-walk warp; the clips' gaits travel through the
file; with the rule on (the live `matching_gait_rule`) the runtime plays walks for a walk and runs for a run."""
import numpy as np
import pytest
from test_matching_build import CLIPS, linked_folder

from pfnn_core.features.contract import TRAJ_OFFSETS
from pfnn_core.features.layout import make_layouts
from pfnn_core.models.matching.build import build_matching
from pfnn_core.models.matching.database import SEGMENT_COLUMNS, MatchingDatabase
from pfnn_core.models.matching.features import (
    FEATURE_SIZE,
    SLICES,
    TRAJECTORY_PART,
    Normalisation,
    default_weights,
    weight_vector,
)
from pfnn_core.models.matching.model import asked_gait
from pfnn_core.models.matching.search import ANY_GAIT, RUN, WALK, MatchingIndex
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.runtime.character import Character
from pfnn_core.runtime.command import command_from_world_move

JOINTS = 3
ROWS = 40  # frame_step 2: the first 10 rows of a moving segment have a second ahead (searchable)
HIP = SLICES["hip_velocity"].start
DT = 1.0 / 60.0


def tiny_database(clip_gait=(0, 1, 0), styles=(0, 0, 0), standing=(0, 0, 1), near=(0.3, 0.1, 0.5)) -> MatchingDatabase:
    """A segment per clip (three by default: a walk, a run, standing): every feature 5 except in row 2
    of each segment, all 0 but the hips' x velocity `near` (None: that row stays 5). Against the
    query 0 the run row (0.1 off) is the nearest by default."""
    count = ROWS * len(styles)
    features = np.full((count, FEATURE_SIZE), 5.0, np.float32)
    for k, offset in enumerate(near):
        if offset is not None:
            features[k * ROWS + 2] = 0.0
            features[k * ROWS + 2, HIP] = offset
    table = [[k * ROWS, ROWS, k, styles[k], standing[k], 0, 0] for k in range(len(styles))]
    return MatchingDatabase(
        rotations=np.tile(np.array([1.0, 0, 0, 0], np.float16), (count, JOINTS, 1)),
        hips=np.zeros((count, 3), np.float16), root_motion=np.zeros((count, 3), np.float32),
        contacts=np.zeros((count, 4), np.float32), phase=np.zeros(count, np.float16), features=features,
        segments=np.array(table, np.int64).reshape(-1, len(SEGMENT_COLUMNS)), mirror_pairs=np.arange(JOINTS),
        mirror_reflections=np.tile(np.eye(3, dtype=np.float32), (JOINTS, 1, 1)),
        clip_gait=None if clip_gait is None else np.array(clip_gait, np.int8))


def index_of(database, styles=1) -> MatchingIndex:
    index = MatchingIndex(database, Normalisation.of(database.features), num_styles=styles)
    index.set_weights(weight_vector(default_weights()))
    return index


def query() -> np.ndarray:
    return np.zeros((1, FEATURE_SIZE))


def test_a_walk_takes_the_walking_frame_where_the_run_frame_is_nearer():
    database = tiny_database()
    index = index_of(database)
    style = np.ones((1, 1))
    assert index.search(query(), style).rows[0] == ROWS + 2  # features alone: the run clip's row (0.1 off)
    assert index.search(query(), style, np.array([ANY_GAIT])).rows[0] == ROWS + 2
    walk = index.search(query(), style, np.array([WALK]))
    assert walk.rows[0] == 2  # the walking clip's row, 0.3 off: d^2 = (0.3 / scale)^2 x weight 1
    scale = index.normalisation.scale[HIP]
    np.testing.assert_allclose(walk.cost[0], (0.3 / scale) ** 2, rtol=1e-5)
    assert index.search(query(), style, np.array([RUN])).rows[0] == ROWS + 2


def test_a_batch_of_both_gaits_answers_each_as_alone():
    index = index_of(tiny_database())
    found = index.search(np.zeros((3, FEATURE_SIZE)), np.ones((3, 1)), np.array([WALK, RUN, WALK]))
    np.testing.assert_array_equal(found.rows, [2, ROWS + 2, 2])


def test_standing_frames_stay_searchable_for_both_gaits():
    # the standing row is 0.5 off, the others further: a walk or a run query near it finds it
    database = tiny_database()
    database.features[[2, ROWS + 2], HIP] = (0.9, 0.8)
    index = index_of(database)
    for gait in (WALK, RUN):
        assert index.search(query(), np.ones((1, 1)), np.array([gait])).rows[0] == 2 * ROWS + 2


def test_a_style_without_frames_of_the_gait_asked_searches_its_other_gait():
    # style 1 holds only the walking clip (and the standing one): a run asked there takes the walk
    database = tiny_database(styles=(1, 0, 1))
    index = index_of(database, styles=2)
    style = np.array([[0.0, 1.0]])
    assert index.search(query(), style, np.array([RUN])).rows[0] == 2


def test_unlabelled_clips_are_searched_by_every_gait():
    index = index_of(tiny_database(clip_gait=None))
    assert index.search(query(), np.ones((1, 1)), np.array([WALK])).rows[0] == ROWS + 2


def test_borrowing_from_every_style_keeps_the_gait():
    # style 0: a walk clip 5 away everywhere, a run clip and standing; style 1: a walk clip 0.3 off. A
    # walk in style 0 misses the path and borrows style 1's walking frame, not the nearer run frame
    database = tiny_database(clip_gait=(0, 1, 0, 0), styles=(0, 0, 0, 1), standing=(0, 0, 1, 0),
                             near=(None, 0.1, None, 0.3))
    index = index_of(database, styles=2)
    style = np.array([[1.0, 0.0]])
    assert index.search(query(), style, np.array([WALK])).rows[0] != ROWS + 2  # a far frame of its own, not the run
    found = index.search_borrowing(query(), style, TRAJECTORY_PART, 10.0, np.array([WALK]))
    assert found.rows[0] == 3 * ROWS + 2
    assert index.search_borrowing(query(), style, TRAJECTORY_PART, 10.0, np.array([RUN])).rows[0] == ROWS + 2


def path_input(now_speed: float, end_speed: float, layout) -> np.ndarray:
    """A model input whose planned path (straight ahead, +z) moves at `now_speed` m/s from -10 to +10
    frames and at `end_speed` from +40 to +50 frames."""
    x = np.zeros(layout.size)
    z = np.zeros(12)
    for k, frame in enumerate(TRAJ_OFFSETS):
        if frame <= 10:
            z[k] = now_speed * frame / 60.0
    z[TRAJ_OFFSETS.index(20)] = z[TRAJ_OFFSETS.index(10)] + now_speed / 6.0
    z[TRAJ_OFFSETS.index(30)] = z[TRAJ_OFFSETS.index(20)] + now_speed / 6.0
    z[TRAJ_OFFSETS.index(40)] = z[TRAJ_OFFSETS.index(30)] + end_speed / 6.0
    z[TRAJ_OFFSETS.index(50)] = z[TRAJ_OFFSETS.index(40)] + end_speed / 6.0
    positions = np.zeros((12, 2))
    positions[:, 1] = z
    x[layout.slice("traj_pos")] = positions.reshape(-1)
    return x


def test_the_gait_asked_is_the_paths_speed_at_its_end_seen_without_the_speed_warp():
    layout = make_layouts(22).x
    cases = [  # (speed now, speed at the end as shown, the runtime's warp, the gait asked)
        (1.2, 1.4, 1.0, WALK),  # a walk: 1.4 m/s < 1.9
        (2.7, 2.7, 1.0, RUN),  # a run
        (2.7, 1.2, 1.0, WALK),  # a run slowing to a walk: the end's speed
        (0.3, 4.2, 3.0, WALK),  # a start from standing, warped 3x: 4.2 / 3 = 1.4 m/s, a walk
        (0.3, 6.0, 3.0, RUN),  # a run from standing, warped 3x: 2.0 m/s
        (0.8, 2.0, 1.125, WALK),  # a slow walk warped 1.125x (0.9 / 0.8): 2.0 / 1.125 = 1.78 m/s
        (0.8, 2.2, 1.125, RUN),  # 2.2 / 1.125 = 1.96 m/s
    ]
    x = np.stack([path_input(now, end, layout) for now, end, _, _ in cases])
    warp = np.array([k for _, _, k, _ in cases])
    np.testing.assert_array_equal(asked_gait(x, layout, warp), [gait for *_, gait in cases])
    # no warp known (a model stepped outside the runtime): the end's speed is read as it is
    np.testing.assert_array_equal(asked_gait(x, layout, None), [WALK, RUN, WALK, RUN, RUN, RUN, RUN])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = linked_folder(tmp_path_factory.mktemp("clips"), CLIPS)
    out = folder.parent / "mm.safetensors"
    build_matching(folder, out, say=lambda message: None)
    return load_checkpoint(out)


def test_the_clips_gaits_come_through_the_file(built):
    database, clips = built.model, built.config.clips
    for k, name in enumerate(clips):
        rows = database.segments[database.segment_of, 2] == k
        expected = 1 if ("_run_" in name or "_dash_" in name) else 0
        assert (database.row_gait[rows] == expected).all(), name


def played_gaits(checkpoint, rule: bool, run: bool) -> np.ndarray:
    """The gait of the clip played at every tick of 1 s standing and 3 s walking (or running) straight
    ahead, with the gait rule on or off."""
    character = Character(checkpoint)
    character.settings.matching_gait_rule = rule
    stand = command_from_world_move(np.array([0.0, 0.0]), False, character.settings)
    move = command_from_world_move(np.array([0.0, 1.0]), run, character.settings)
    states = [character.tick(stand, DT) for _ in range(60)] + [character.tick(move, DT) for _ in range(180)]
    assert not character.faults
    return np.array([checkpoint.model.row_gait[s.model_state["row"][0]] for s in states])


def test_with_the_rule_on_a_start_from_standing_plays_walking_clips_only_and_a_run_run_clips(built):
    walking = played_gaits(built, rule=True, run=False)
    assert (walking == 0).all()  # standing frames (the standing clip is labelled a walk) and walks
    running = played_gaits(built, rule=True, run=True)
    assert (running[-60:] == 1).all()  # running at full speed: run frames


@pytest.mark.parametrize("rule", [True, False])
def test_prepared_trees_are_the_ones_a_first_walk_and_run_search(built, rule):
    """`MatchingModel.prepare` (the viewer calls it after a load) builds the trees the first ticks search,
    so none is built while the character steps (each cost the first step 0.1-0.2 s on the bundled data)."""
    character = Character(built)
    character.settings.matching_gait_rule = rule
    model = character.model
    model.prepare(character.settings, character.state.style[0])
    prepared = set(model.index._trees)
    assert prepared
    stand = command_from_world_move(np.array([0.0, 0.0]), False, character.settings)
    for move in (np.array([0.0, 1.0]), np.array([1.0, 0.0])):
        for run in (False, True):
            command = command_from_world_move(move, run, character.settings)
            for _ in range(40):
                character.tick(command, DT)
    for _ in range(40):
        character.tick(stand, DT)
    assert not character.faults
    assert set(model.index._trees) == prepared
