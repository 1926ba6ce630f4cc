"""The motion-matching search against brute force: the KD-trees return the exact nearest searchable
frame of the character's style, a blend of styles weighs each style's distance, weights rescale the space."""
import numpy as np
import pytest

from pfnn_core.models.matching.database import SEGMENT_COLUMNS, MatchingDatabase
from pfnn_core.models.matching.features import FEATURE_SIZE, SLICES, Normalisation, default_weights, weight_vector
from pfnn_core.models.matching.search import MatchingIndex, brute_force_nearest

JOINTS = 3


def random_database(rng, segments=((0, 0), (1, 0), (2, 0), (0, 1), (1, 0)), rows=80) -> MatchingDatabase:
    """Segments of `rows` rows with random features; each (style, standing)."""
    count = rows * len(segments)
    table = [[k * rows, rows, k, style, standing, 0, 0] for k, (style, standing) in enumerate(segments)]
    return MatchingDatabase(
        rotations=np.tile(np.array([1.0, 0, 0, 0], np.float16), (count, JOINTS, 1)),
        hips=np.zeros((count, 3), np.float16), root_motion=np.zeros((count, 3), np.float32),
        contacts=np.zeros((count, 4), np.float32), phase=np.zeros(count, np.float16),
        features=(rng.normal(size=(count, FEATURE_SIZE)) * rng.uniform(0.1, 3.0, FEATURE_SIZE)).astype(np.float32),
        segments=np.array(table, np.int64).reshape(-1, len(SEGMENT_COLUMNS)),
        mirror_pairs=np.arange(JOINTS), mirror_reflections=np.tile(np.eye(3, dtype=np.float32), (JOINTS, 1, 1)))


@pytest.fixture
def index():
    rng = np.random.default_rng(7)
    database = random_database(rng)
    index = MatchingIndex(database, Normalisation.of(database.features), num_styles=3)
    index.set_weights(weight_vector(default_weights()))
    return index


def test_candidates_leave_out_the_last_second_of_moving_clips_only():
    database = random_database(np.random.default_rng(0))
    # frame_step 2: a moving row needs 30 rows (60 frames of 60 Hz) of its segment after it
    assert database.candidates[:80].sum() == 80 - 30
    assert not database.candidates[79] and database.candidates[49] and not database.candidates[50]
    assert database.candidates[240:320].all()  # the standing segment is searchable to its end


def test_each_style_finds_the_exact_nearest_of_its_own_and_the_standing_frames(index):
    database = index.database
    rng = np.random.default_rng(1)
    queries = database.features[rng.integers(0, database.num_rows, 40)] + rng.normal(0, 0.5, (40, FEATURE_SIZE))
    for style in range(3):
        weights = np.zeros((40, 3))
        weights[:, style] = 1.0
        found = index.search(queries, weights)
        allowed = np.flatnonzero(database.candidates & ((database.row_style == style) | database.row_standing))
        points = index.normalised(database.features[allowed])
        nearest, distance = brute_force_nearest(points, index.normalised(queries))
        np.testing.assert_array_equal(found.rows, allowed[nearest])
        np.testing.assert_allclose(found.distance, distance, rtol=1e-9)
        np.testing.assert_allclose(found.cost, distance ** 2, rtol=1e-9)


def test_a_model_without_styles_searches_every_candidate(index):
    database = index.database
    queries = np.random.default_rng(2).normal(size=(25, FEATURE_SIZE))
    found = index.search(queries, None)
    allowed = np.flatnonzero(database.candidates)
    nearest, _ = brute_force_nearest(index.normalised(database.features[allowed]), index.normalised(queries))
    np.testing.assert_array_equal(found.rows, allowed[nearest])


def test_a_blend_takes_the_cheapest_distance_over_weight(index):
    database = index.database
    rng = np.random.default_rng(3)
    queries = rng.normal(size=(30, FEATURE_SIZE))
    weights = np.tile([0.8, 0.2, 0.0], (30, 1))
    found = index.search(queries, weights)
    costs = []
    for style, weight in ((0, 0.8), (1, 0.2)):
        allowed = np.flatnonzero(database.candidates & ((database.row_style == style) | database.row_standing))
        nearest, distance = brute_force_nearest(index.normalised(database.features[allowed]), index.normalised(queries))
        costs.append((allowed[nearest], distance ** 2 / weight))
    better = costs[0][1] <= costs[1][1]
    np.testing.assert_array_equal(found.rows, np.where(better, costs[0][0], costs[1][0]))
    np.testing.assert_allclose(found.cost, np.minimum(costs[0][1], costs[1][1]), rtol=1e-9)
    assert not np.isin(found.rows, np.flatnonzero((database.row_style == 2) & ~database.row_standing)).any()


def test_weights_change_the_space_searched(index):
    """With every weight but the trajectory facings at 0, the nearest frame is the one whose facings
    alone are nearest (brute force on those 6 numbers)."""
    database = index.database
    weights = {name: 0.0 for name in default_weights()}
    weights["trajectory_facing"] = 2.0
    index.set_weights(weight_vector(weights))
    queries = np.random.default_rng(4).normal(size=(20, FEATURE_SIZE))
    found = index.search(queries, None)
    allowed = np.flatnonzero(database.candidates)
    part = SLICES["trajectory_facing"]
    scale = index.normalisation.scale[part]
    nearest, distance = brute_force_nearest(database.features[allowed][:, part] / scale * 2.0,
                                            queries[:, part] / scale * 2.0)
    np.testing.assert_allclose(found.distance, distance, rtol=1e-6)
    np.testing.assert_array_equal(found.rows, allowed[nearest])


def test_group_normalisation_divides_each_group_by_one_deviation():
    features = np.random.default_rng(5).normal(size=(500, FEATURE_SIZE)) * np.arange(1, FEATURE_SIZE + 1)
    norm = Normalisation.of(features)
    for part in SLICES.values():
        assert np.allclose(norm.scale[part], features[:, part].std(axis=0).mean())
    np.testing.assert_allclose(norm.apply(features, np.ones(FEATURE_SIZE)).mean(axis=0), 0.0, atol=1e-12)


def test_the_standing_search_finds_the_exact_nearest_standing_frame_of_any_style(index):
    database = index.database
    rng = np.random.default_rng(3)
    queries = database.features[rng.integers(0, database.num_rows, 30)] + rng.normal(0, 0.5, (30, FEATURE_SIZE))
    found = index.search_standing(queries)
    allowed = np.flatnonzero(database.candidates & database.row_standing)
    assert len(allowed) == 80  # the one standing segment
    nearest, distance = brute_force_nearest(index.normalised(database.features[allowed]), index.normalised(queries))
    np.testing.assert_array_equal(found.rows, allowed[nearest])
    np.testing.assert_allclose(found.cost, distance ** 2, rtol=1e-9)
