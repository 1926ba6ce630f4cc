"""Nearest-frame search over the database's normalised, weighted features: one KD-tree per style.

A style's tree holds its searchable rows (`MatchingDatabase.candidates`: frames with a second of their
clip ahead) and every standing row (standing looks alike in every style, and only one style has
standing clips). A character with a blend of styles searches each style it has with weight w > 0 and
takes the cheapest cost d^2 / w: a style with less weight needs a closer frame to win. A model without
styles has one tree over all rows.

A query also names its gait (`WALK`, `RUN`, or `ANY_GAIT`): a walk searches the walking clips' frames
(and the standing ones) only, a run the run clips' (`GAIT_ROWS`). Nearest by features alone, a start from
standing found a run clip's first frames (a run from standing fits a standing pose and an accelerating
path) and played on into the run's flight, both feet up; a run slowed to a walk kept run frames. A style
with no frame of the gait asked searches its frames of every gait.

Trees are built when a style is first searched and rebuilt when the group weights change (a weight
scales the space the tree is built in). `brute_force_nearest` is the same search without a tree, what
the tests hold the trees to.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree

from pfnn_core.models.matching.database import MatchingDatabase
from pfnn_core.models.matching.features import Normalisation

LEAF_SIZE = 16
STANDING = -2  # the tree of the standing rows alone (`search_standing`)
ANY_GAIT, WALK, RUN = -1, 0, 1  # the gait a query asks (`MatchingDatabase.row_gait`: 0 walk, 1 run)
GAIT_ROWS = {WALK: (0, -1), RUN: (1, -1)}  # the row gaits a query's gait may take (-1: unlabelled clips)


class Found(NamedTuple):
    rows: np.ndarray  # [B] int64, the best row of each query
    cost: np.ndarray  # [B] d^2 / w of the style it was found in
    distance: np.ndarray  # [B] d: the normalised, weighted feature distance


class _StyleTree(NamedTuple):
    tree: cKDTree
    rows: np.ndarray  # tree point -> database row


class MatchingIndex:
    """The per-style KD-trees of one database, for one set of group weights at a time."""

    def __init__(self, database: MatchingDatabase, normalisation: Normalisation, num_styles: int):
        self.database, self.normalisation = database, normalisation
        self.num_styles = int(num_styles)
        self.weights: np.ndarray | None = None
        self._trees: dict[tuple[int, int], _StyleTree] = {}

    def set_weights(self, weights: np.ndarray) -> None:
        """Group weights per dimension [27]; a change drops the trees (built again when searched)."""
        weights = np.asarray(weights, dtype=np.float64)
        if self.weights is None or not np.array_equal(weights, self.weights):
            self.weights = weights.copy()
            self._trees = {}

    def style_rows(self, style: int, gait: int = ANY_GAIT) -> np.ndarray:
        """The rows a style searches (-1: every style, a model without styles; STANDING: the standing rows)
        for a query of `gait`: the standing rows and the moving rows of that gait (`GAIT_ROWS`); when the
        style has no moving row of the gait, its moving rows of every gait."""
        database = self.database
        mask = database.candidates.copy()
        if style == STANDING:
            return np.flatnonzero(mask & database.row_standing)
        if style >= 0:
            mask &= (database.row_style == style) | database.row_standing
        if gait != ANY_GAIT:
            of_gait = np.isin(database.row_gait, GAIT_ROWS[gait])
            if (mask & of_gait & ~database.row_standing).any():
                mask &= of_gait | database.row_standing
        return np.flatnonzero(mask)

    def _tree(self, style: int, gait: int = ANY_GAIT) -> _StyleTree:
        found = self._trees.get((style, gait))
        if found is None:
            rows = self.style_rows(style, gait)
            if len(rows) == 0:
                rows = self.style_rows(-1, gait)  # a style with no searchable frame falls back on every frame
            points = self.normalisation.apply(self.database.features[rows], self.weights)
            found = _StyleTree(cKDTree(points, leafsize=LEAF_SIZE, balanced_tree=False, compact_nodes=False), rows)
            self._trees[(style, gait)] = found
        return found

    def prepare(self, styles, gaits) -> None:
        """Build now the trees that searches of these styles (-1: every style) and gaits take, and the
        standing rows' tree (otherwise each is built at its first search: 0.1-0.2 s on the bundled data)."""
        self._tree(STANDING)
        for style in styles:
            for gait in gaits:
                self._tree(int(style), int(gait))

    def normalised(self, queries: np.ndarray) -> np.ndarray:
        return self.normalisation.apply(queries, self.weights)

    def search(self, queries: np.ndarray, style: np.ndarray | None, gait: np.ndarray | None = None) -> Found:
        """The nearest searchable row of each raw query [B, 27] among its styles (`style` [B, S] weights;
        None or S = 0: every row) and of its gait (`gait` [B]: WALK, RUN or ANY_GAIT; None: any)."""
        if self.weights is None:
            raise RuntimeError("MatchingIndex.search before set_weights")
        points = self.normalised(queries)
        batch = len(points)
        gait = np.full(batch, ANY_GAIT) if gait is None else np.asarray(gait)
        found = Found(np.zeros(batch, np.int64), np.full(batch, np.inf), np.full(batch, np.inf))
        for value in np.unique(gait):
            members = np.flatnonzero(gait == value)
            part = self._search_gait(points[members], None if style is None else np.asarray(style)[members], int(value))
            found.rows[members], found.cost[members], found.distance[members] = part
        return found

    def _search_gait(self, points: np.ndarray, style: np.ndarray | None, gait: int) -> Found:
        """`search` of normalised queries [B, 27] of one gait."""
        batch = len(points)
        best_rows = np.zeros(batch, np.int64)
        best_cost, best_distance = np.full(batch, np.inf), np.full(batch, np.inf)
        if style is None or self.num_styles == 0:
            groups = [(-1, np.arange(batch), np.ones(batch))]
        else:
            style = np.asarray(style, dtype=np.float64)
            groups = []
            for s in np.flatnonzero((style > 0.0).any(axis=0)):
                members = np.flatnonzero(style[:, s] > 0.0)
                groups.append((int(s), members, style[members, s]))
            unstyled = np.flatnonzero(~(style > 0.0).any(axis=1))
            if len(unstyled):
                groups.append((-1, unstyled, np.ones(len(unstyled))))
        for s, members, weight in groups:
            tree = self._tree(s, gait)
            distance, index = tree.tree.query(points[members], k=1)
            cost = distance * distance / weight
            better = cost < best_cost[members]
            chosen = members[better]
            best_rows[chosen] = tree.rows[index[better]]
            best_cost[chosen], best_distance[chosen] = cost[better], distance[better]
        return Found(best_rows, best_cost, best_distance)

    def search_borrowing(self, queries: np.ndarray, style: np.ndarray | None, part: slice, miss: float,
                         gait: np.ndarray | None = None) -> Found:
        """`search`, then for each query whose best frame in its styles still misses it by more than `miss`
        (d^2 over the dimensions `part`) the nearest row of every style, taken when it costs less: a style
        with no frame of the motion asked (most have no side-step) borrows one rather than stand still.
        The borrowed frame is of the gait asked too."""
        found = self.search(queries, style, gait)
        if style is None or self.num_styles == 0:
            return found
        points = self.normalised(queries)[:, part] - self.normalised(self.database.features[found.rows])[:, part]
        missed = np.flatnonzero(np.einsum("bi,bi->b", points, points) > miss)
        if len(missed):
            other = self.search(queries[missed], None, None if gait is None else np.asarray(gait)[missed])
            better = other.cost < found.cost[missed]
            chosen = missed[better]
            found.rows[chosen] = other.rows[better]
            found.cost[chosen], found.distance[chosen] = other.cost[better], other.distance[better]
        return found

    def search_standing(self, queries: np.ndarray) -> Found:
        """The nearest standing row of each raw query [B, 27] (every style's standing rows; cost d^2)."""
        tree = self._tree(STANDING)
        distance, index = tree.tree.query(self.normalised(queries), k=1)
        return Found(tree.rows[index], distance * distance, distance)

    def cost_of(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """d^2 of each query [B, 27] to a given row [B] (no style weighting)."""
        gap = self.normalised(queries) - self.normalised(self.database.features[rows])
        return np.einsum("bi,bi->b", gap, gap)


def brute_force_nearest(points: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index [B], distance [B]) of the nearest of `points` [N, D] to each query [B, D], every distance
    computed: the reference the trees are tested against."""
    gaps = queries[:, None, :] - points[None, :, :]
    squared = np.einsum("bnd,bnd->bn", gaps, gaps)
    index = np.argmin(squared, axis=1)
    return index, np.sqrt(squared[np.arange(len(queries)), index])
