"""Motion matching's queries after a sharp change of the input: the trajectory asked for (a database
frame's own future) finds a frame moving the new way, from standing (a start, which the data does not
hold), from a walk turned away (a turn) and from a walk asked to stand (a stop)."""
import numpy as np
import pytest
from test_matching_build import CLIPS, linked_folder

from pfnn_core.models.matching.build import build_matching
from pfnn_core.models.matching.features import SLICES, TRAJECTORY_PART
from pfnn_core.models.matching.model import TRAJECTORY_MISS
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.runtime.character import Character


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = linked_folder(tmp_path_factory.mktemp("clips"), CLIPS)
    out = folder.parent / "mm.safetensors"
    build_matching(folder, out, say=lambda message: None)
    return Character(load_checkpoint(out)).model


def normal(model) -> np.ndarray:
    style = np.zeros((1, model.num_styles))
    style[0, model.style_names.index("normal")] = 1.0
    return style


def clip_rows(model, word: str) -> np.ndarray:
    """Searchable rows of the unmirrored clip whose file name holds `word`."""
    database = model.database
    clips = [k for k, name in enumerate(model.config.clips) if word in name]
    segment = np.isin(database.segments[database.segment_of, 2], clips) & (database.segments[database.segment_of, 6] == 0)
    return np.flatnonzero(segment & database.candidates)


def ahead(features) -> np.ndarray:
    """[N, 2] the +1 s trajectory position (x, z, root frame) of feature rows."""
    return features[..., SLICES["trajectory_position"]][..., 4:6]


def facing_ahead(features) -> np.ndarray:
    return features[..., SLICES["trajectory_facing"]][..., 4:6]


def search(model, rows, trajectory):
    queries = model.queries(np.asarray(rows), np.asarray(trajectory)[None])
    return queries, model.index.search_borrowing(queries, normal(model), TRAJECTORY_PART, TRAJECTORY_MISS)


def test_a_start_from_standing_finds_a_walking_frame_going_the_asked_way(model):
    database = model.database
    standing = int(np.flatnonzero(database.row_standing & database.candidates)[0])
    walk = clip_rows(model, "_walk_normal_")
    straight = walk[(ahead(database.features[walk])[:, 1] > 1.0) & (facing_ahead(database.features[walk])[:, 1] > 0.99)]
    asked = database.features[straight[len(straight) // 2], TRAJECTORY_PART]
    queries, found = search(model, [standing], asked)
    # the body's velocities are the asked path's first third of a second: 3 x its +20 frame sample, y 0
    velocity = np.array([3.0 * asked[0], 0.0, 3.0 * asked[1]])
    np.testing.assert_allclose(queries[0, SLICES["hip_velocity"]], velocity, atol=1e-12)
    np.testing.assert_allclose(queries[0, SLICES["foot_velocity"]], np.tile(velocity, 2), atol=1e-12)
    row = int(found.rows[0])
    assert not database.row_standing[row]
    got, want = ahead(database.features[row]), asked[4:6]
    # going the asked way (within 15 degrees at +1 s) and at least half as far (a walk getting going)
    assert np.degrees(np.arccos(got @ want / np.linalg.norm(got) / np.linalg.norm(want))) < 15.0
    assert np.linalg.norm(got) > 0.5 * np.linalg.norm(want)


def test_a_walk_asked_to_turn_finds_a_frame_turning_that_way(model):
    database = model.database
    walk, turn = clip_rows(model, "_walk_normal_"), clip_rows(model, "walk-turn-left")
    playing = int(walk[(facing_ahead(database.features[walk])[:, 1] > 0.99)][0])
    facings = facing_ahead(database.features[turn])
    turned = turn[np.degrees(np.arctan2(np.abs(facings[:, 0]), facings[:, 1])) > 45.0]
    asked = database.features[turned[len(turned) // 2], TRAJECTORY_PART]
    _, found = search(model, [playing], asked)
    row = int(found.rows[0])
    got, want = facing_ahead(database.features[row]), asked[10:12]
    assert np.degrees(np.arccos(np.clip(got @ want, -1.0, 1.0))) < 20.0  # facing where the asked path faces at +1 s
    assert np.linalg.norm(ahead(database.features[row]) - asked[4:6]) < 0.3


def test_a_walk_asked_to_stand_finds_a_standing_frame(model):
    database = model.database
    walk = clip_rows(model, "_walk_normal_")
    playing = int(walk[len(walk) // 2])
    standing = int(np.flatnonzero(database.row_standing & database.candidates)[0])
    asked = database.features[standing, TRAJECTORY_PART]
    queries, found = search(model, [playing], asked)
    np.testing.assert_allclose(queries[0, SLICES["hip_velocity"]], np.zeros(3), atol=1e-6)
    assert database.row_standing[int(found.rows[0])]


def stopping_path(ahead_at_third, ahead_at_two_thirds, ahead_at_one):
    """[12] trajectory groups straight ahead (+z, facing +z) with the given distances at +1/3, +2/3, +1 s."""
    return np.array([0.0, ahead_at_third, 0.0, ahead_at_two_thirds, 0.0, ahead_at_one, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0])


def test_a_path_at_rest_before_one_second_asks_to_stand_though_it_ends_ahead():
    from pfnn_core.models.matching.features import asks_to_stand
    from pfnn_core.models.matching.model import REST_STEP, STAND_DISTANCE
    walking = stopping_path(0.47, 0.93, 1.40)  # 1.4 m/s
    released = stopping_path(0.30, 0.42, 0.44)  # a released stick: still 0.44 m to go, 2 cm in the last third
    slow = stopping_path(0.14, 0.28, 0.42)  # a 0.4 m/s walk: 14 cm in the last third
    standing = stopping_path(0.0, 0.0, 0.05)
    asked = asks_to_stand(np.stack([walking, released, slow, standing]), STAND_DISTANCE, REST_STEP)
    assert asked.tolist() == [False, True, False, True]


def test_a_walk_asked_to_stop_switches_to_a_standing_frame_at_its_first_search(model):
    """The path of a released stick still ends ahead; the walking frame playing costs less than any
    standing frame (its pose groups are its own), and it used to go on for up to 0.45 s."""
    database = model.database
    walk = clip_rows(model, "_walk_normal_")
    playing = walk[len(walk) // 2: len(walk) // 2 + 1]
    inputs = type("Inputs", (), {"settings": None, "style": normal(model), "x": None})()
    state = model.initial_model_state(1)
    trajectory = stopping_path(0.30, 0.42, 0.44)[None]
    found, switch = model._search(inputs, state, playing, np.zeros(1, bool), np.ones(1, bool), trajectory)
    assert switch[0] and database.row_standing[found[0]]
    # the standing frame taken is the nearest standing frame to the query
    queries = model.queries(playing, trajectory)
    standing = np.flatnonzero(database.row_standing & database.candidates)
    costs = model.index.cost_of(np.repeat(queries, len(standing), axis=0), standing)
    assert found[0] == standing[np.argmin(costs)]


def test_a_walk_whose_clip_ran_out_switches_though_its_last_frame_fits_best(model):
    """The playback holds a moving clip's last frame until a switch; that frame, asked for its own path,
    costs nothing, so the margin rule kept it and the pose stood frozen while the root moved on (a
    backward strafe slid a statue for 2.2 s). A moving clip that ran out is always left."""
    database = model.database
    walk = clip_rows(model, "_walk_normal_")
    last = np.array([database.segment_end[walk[0]]])
    assert not database.row_standing[last[0]] and not database.candidates[last[0]]
    inputs = type("Inputs", (), {"settings": None, "style": normal(model), "x": None})()
    state = model.initial_model_state(1)
    trajectory = database.features[last, TRAJECTORY_PART]
    assert model.index.cost_of(model.queries(last, trajectory), last)[0] < 1e-9  # it fits itself exactly
    found, switch = model._search(inputs, state, last, np.zeros(1, bool), np.ones(1, bool), trajectory)
    assert switch[0] and found[0] != last[0] and database.candidates[found[0]]
    # a frame in the middle of the clip asked for its own path goes on (nothing else changed)
    middle = walk[len(walk) // 2: len(walk) // 2 + 1]
    found, switch = model._search(inputs, state, middle, np.zeros(1, bool), np.ones(1, bool),
                                  database.features[middle, TRAJECTORY_PART])
    assert not switch[0] and found[0] == middle[0]
