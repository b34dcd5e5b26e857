"""MST's key columns (mechanisms/synthesizers/mst/): a label's relation to a column the spanning tree leaves out
is kept when the label is a key column (and lost without it); with key_in_tree the tree's edges are measured with
the key columns attached, (keys, a, b), and a relation between two columns that differs by label value is kept
(and lost with the tree's pairs alone); the parameter is validated with clear messages; a model too large is
refused before any budget; the key pairs are recorded and survive the summary. Budget accounting with key
columns: tests/mechanisms/synthesizers/test_aim_mst.py (RecordingNoise)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from mechanisms import accounting, pgm
from mechanisms.noise import Noise
from mechanisms.runner import build
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from mechanisms.synthesizers.mst import (
    KEY_TREE_MAX_CELLS,
    MAX_MODEL_MIB,
    key_model_mib,
    key_pairs_for,
    measured_pairs,
    tree_conditioned,
)
from tests.mechanisms.npz import through_npz

FOUR = ("0", "1", "2", "3")
SCHEMA = Schema(
    columns=(
        Column("y", "categorical", categories=("0", "1")),
        Column("z", "categorical", categories=("0", "1")),
        Column("x", "categorical", categories=FOUR),
        Column("u", "categorical", categories=FOUR),
        Column("w", "categorical", categories=FOUR),
    )
)
N, EPS, DELTA = 10_000, 1.0, 1e-6


def _raw(n=N, seed=0) -> pd.DataFrame:
    """The label y copies z (70%) or else the parity of x: P(y = 1 | x) is 0.35 or 0.65. The tree prefers
    other edges: u copies x (90%), w = 2 z + [x >= 2] ties x to z (both stronger than y-x), and y joins the
    tree through z or w, which say nothing of x's parity: along the tree y and x are independent."""
    rng = np.random.default_rng(seed)
    z, x = rng.integers(0, 2, n), rng.integers(0, 4, n)
    u = np.where(rng.random(n) < 0.9, x, rng.integers(0, 4, n))
    w = 2 * z + (x >= 2)
    y = np.where(rng.random(n) < 0.7, z, x % 2)
    return pd.DataFrame({name: v.astype(str) for name, v in zip("yzxuw", (y, z, x, u, w))})


def _label_gap(real: pd.DataFrame, synthetic: pd.DataFrame) -> float:
    """Mean over x's values of |P(y = 1 | x) real - synthetic|."""
    p = lambda f: f["y"].eq("1").groupby(f["x"]).mean()  # noqa: E731
    return float((p(real) - p(synthetic).reindex(p(real).index).fillna(0)).abs().mean())


def _fit(seed: int, **params):
    params = {"iters": 1000, **params}
    mech = build("mst", SCHEMA, epsilon=EPS, delta=DELTA, params=params, noise=Noise.seeded(seed), n=N)
    return mech.fit(TableSource.from_frame(SCHEMA, _raw()))


def test_a_key_label_keeps_its_relation_to_a_column_the_tree_leaves_out():
    raw = _raw()
    plain, keyed = _fit(1), _fit(1, key_columns="y")
    assert not {("y", "x"), ("x", "y")} & set(plain.edges)  # the data make the tree join y through z or w
    assert _label_gap(raw, plain.sample(N)) > 0.10  # the check can fail: without the key, P(y | x) is ~0.5
    assert ("y", "x") in keyed.key_pairs and all("y" not in e for e in keyed.edges)
    assert _label_gap(raw, keyed.sample(N)) < 0.03  # real 0.35 / 0.65; noise std ~0.015 on each


def test_key_pairs_are_every_pair_with_a_key_column_once_and_the_tree_spans_the_others():
    names = ["a", "b", "c", "d", "e"]
    assert key_pairs_for(names, ("c",)) == [("c", "a"), ("c", "b"), ("c", "d"), ("c", "e")]
    two = key_pairs_for(names, ("b", "d"))
    assert len(two) == len(set(map(frozenset, two))) == sum(measured_pairs(5, 2)[1:])  # 2 x 3 + 1
    with_key = {frozenset(p) for p in itertools.combinations(names, 2) if {"b", "d"} & set(p)}
    assert {frozenset(p) for p in two} == with_key
    assert measured_pairs(5, 0) == (4, 0) and measured_pairs(5, 2) == (2, 7) and measured_pairs(3, 3) == (0, 3)


def test_the_key_pairs_are_recorded_and_round_trip_through_the_summary():
    mech = _fit(2, key_columns=["y"])
    pairs = [["y", a] for a in "zxuw"]
    assert mech.report()["key_pairs"] == pairs
    details = mech.privacy_cost().details
    assert details["key_columns"] == ["y"] and details["key_pairs"] == pairs
    assert details["rho_split"].startswith("1/4 one-way, 1/4 key pairs, 1/4 tree selection given the key columns")
    assert details["key_in_tree"] is True
    assert any("every pair with a key column (y)" in c for c in mech.privacy_cost().caveats)
    assert len(mech.noisy_queries()) == 5 + 3 + 4  # 1-way marginals, the tree of the 4 others, the key pairs
    again = type(mech).from_summary(
        SCHEMA, through_npz(mech.summary()), epsilon=EPS, delta=DELTA, params=mech.params, noise=Noise.seeded(9)
    )
    assert again.key_pairs == mech.key_pairs and again.report()["key_pairs"] == pairs
    assert again.report()["tree_marginals"] == mech.report()["tree_marginals"]
    assert _label_gap(_raw(), again.sample(N)) < 0.03


def _raw_within(n=5_000, seed=0) -> pd.DataFrame:
    """y is a fair coin; given y = 1, b copies a (95%), given y = 0 it is independent of a: P(b = a) is 0.96 or
    0.25 by label, and only the marginal (y, a, b) says so. c is independent of everything; (a, b) is the
    strongest pair, so it is in any tree."""
    rng = np.random.default_rng(seed)
    y, a, c = rng.integers(0, 2, n), rng.integers(0, 4, n), rng.integers(0, 4, n)
    b = np.where((y == 1) & (rng.random(n) < 0.95), a, rng.integers(0, 4, n))
    return pd.DataFrame({name: v.astype(str) for name, v in zip("yabc", (y, a, b, c))})


WITHIN = Schema(
    columns=(
        Column("y", "categorical", categories=("0", "1")),
        *(Column(name, "categorical", categories=FOUR) for name in "abc"),
    )
)


def _agreement(frame: pd.DataFrame) -> pd.Series:
    """P(b = a | y) by value of y."""
    return frame["a"].eq(frame["b"]).groupby(frame["y"]).mean()


def _fit_within(seed: int, **params):
    mech = build("mst", WITHIN, epsilon=EPS, delta=DELTA, params={"iters": 300, **params}, noise=Noise.seeded(seed))
    return mech.fit(TableSource.from_frame(WITHIN, _raw_within()))


def test_the_tree_given_the_key_column_measures_its_edges_with_the_key_and_keeps_their_relation_by_label():
    raw = _raw_within()
    tan = _fit_within(4, key_columns="y")
    measured = {m.clique for m in tan.measurements.items}
    assert tan.conditioned and len(tan.edges) == 2 and {"a", "b"} in [set(e) for e in tan.edges]
    assert {("y",) + e for e in tan.edges} <= measured  # each tree edge measured with the key column attached
    assert {("y", a) for a in "abc"} <= measured and not {e for e in measured if len(e) == 2 and "y" not in e}
    assert {len(c) for c in tan.model.cliques} == {3}  # Private-PGM's cliques: (y, a, b) for each tree edge
    assert all("y" in c for c in tan.model.cliques)
    sigma1, sigma_tree, sigma_key = tan.sigmas  # a quarter of rho each: 4, 3 key pairs, 2 tree marginals
    rho = accounting.zcdp_rho(EPS, DELTA)
    assert (sigma1, sigma_key, sigma_tree) == pytest.approx([math.sqrt(m / (rho / 4)) for m in (4, 3, 2)])
    assert math.isclose(sum(tan.spent), rho, rel_tol=1e-9) and tan.rho_select == pytest.approx(rho / 4)
    real, kept = _agreement(raw), _agreement(tan.sample(N))
    # 0.96 and 0.25 on 2,500 rows a label value; sigma_t about 19 per cell of (y, a, b)
    assert abs(kept["1"] - real["1"]) < 0.05 and abs(kept["0"] - real["0"]) < 0.05

    pairs = _fit_within(4, key_columns="y", key_in_tree=False)  # the tree's pairs (a, b) alone: no 3-way relation
    assert not pairs.conditioned and len(pairs.sigmas) == 2
    assert {e for e in pairs.edges} <= {m.clique for m in pairs.measurements.items}
    assert pairs.privacy_cost().details["rho_split"].startswith("1/3 one-way, 1/3 tree selection, 1/3 tree pairs")
    lost = _agreement(pairs.sample(N))
    assert lost["1"] < real["1"] - 0.2 and lost["0"] > real["0"] + 0.2  # the check can fail: both near 0.6


def test_the_tree_is_conditioned_only_on_at_most_16_key_cells_and_a_tree_to_select():
    assert KEY_TREE_MAX_CELLS == 16
    assert tree_conditioned(SCHEMA, ("y",), True) and not tree_conditioned(SCHEMA, ("y",), False)
    assert tree_conditioned(SCHEMA, ("x", "u"), True)  # 4 x 4 = 16 cells
    assert not tree_conditioned(SCHEMA, ("y", "x", "u"), True)  # 32 cells: the tree's pairs alone
    assert not tree_conditioned(SCHEMA, (), True)
    assert not tree_conditioned(Schema(columns=SCHEMA.columns[:3]), ("y", "z"), True)  # one other column: no tree
    three = build("mst", SCHEMA, epsilon=EPS, delta=DELTA, params={"key_columns": "y,x,u"})
    assert three.privacy_cost().details["key_in_tree"] is False


@pytest.mark.parametrize(
    "value,message",
    [
        ("income", r"parameter 'key_columns' must name kept columns of the schema, got 'income'"),
        ("y, z, x, u", r"parameter 'key_columns' may name at most 3 columns, got 4: \['y', 'z', 'x', 'u'\]"),
        ("y,y", r"parameter 'key_columns' names the column 'y' twice"),
        (7, r"parameter 'key_columns' must be a list of column names or one comma-separated string, got 7"),
        (["y", 3], r"must be a list of column names or one comma-separated string, got \['y', 3\]"),
    ],
)
def test_bad_key_columns_are_refused_naming_the_bad_value(value, message):
    with pytest.raises(ValueError, match=message):
        build("mst", SCHEMA, epsilon=EPS, delta=DELTA, params={"key_columns": value})


def test_key_columns_accept_a_list_or_a_comma_separated_string_and_default_to_none():
    for value in ("y, x", ["y", "x"], ("y", "x"), " y ,x,"):
        assert build("mst", SCHEMA, epsilon=EPS, delta=DELTA, params={"key_columns": value}).params["key_columns"] == (
            "y",
            "x",
        )
    assert build("mst", SCHEMA, epsilon=EPS, delta=DELTA).params["key_columns"] == ()
    excluded = Schema(columns=(*SCHEMA.columns, Column("note", "excluded")))
    with pytest.raises(ValueError, match="must name kept columns of the schema, got 'note'"):
        build("mst", excluded, epsilon=EPS, delta=DELTA, params={"key_columns": "note"})


def _wide(sizes: list[int]) -> Schema:
    return Schema(
        columns=tuple(
            Column(f"c{i}", "categorical", categories=tuple(f"v{j}" for j in range(k))) for i, k in enumerate(sizes)
        )
    )


def test_a_model_too_large_for_the_key_columns_is_refused_before_any_budget():
    schema = _wide([100] * 30 + [200])
    build("mst", schema, epsilon=EPS, delta=DELTA, n=1_000_000)  # no key column: a tree (2.2 MiB at most)
    with pytest.raises(
        ValueError, match=r"mst: with key_columns c30 the model could need 443 MiB, above the limit of 80 MiB"
    ):
        build("mst", schema, epsilon=EPS, delta=DELTA, params={"key_columns": "c30"}, n=1_000_000)
    mib = key_model_mib(schema.names, schema.cell_sizes, ("c30",))
    assert mib > MAX_MODEL_MIB
    # compression bounds the cells by what the rows can show: at 5,000 rows (at most 23 cells a column) it passes
    build("mst", schema, epsilon=EPS, delta=DELTA, params={"key_columns": "c30", "tree": "always"}, n=5_000)


def test_the_model_size_bound_holds_for_any_tree_private_pgm_may_select():
    """key_model_mib (the star on the largest other column) against Private-PGM's junction tree
    (pgm.JunctionTreeSize, its own elimination order) of random trees + key columns."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        d = int(rng.integers(3, 13))
        k = int(rng.integers(1, min(3, d - 2) + 1))
        sizes = [int(s) for s in rng.choice([1, 2, 3, 5, 7, 10, 16, 40, 100], d)]
        names = [f"c{i}" for i in range(d)]
        keys = tuple(str(a) for a in rng.choice(names, k, replace=False))
        rest = [a for a in names if a not in keys]
        order = list(rng.permutation(rest))
        tree = [(order[i], order[int(rng.integers(0, i))]) for i in range(1, len(order))]
        cliques = tree + key_pairs_for(names, keys) + [(a,) for a in names]
        got = pgm.JunctionTreeSize(names, sizes).size_mb(cliques)
        assert got <= key_model_mib(names, sizes, keys) * (1 + 1e-12), (sizes, keys, tree)


def test_every_column_a_key_column_measures_all_pairs_and_no_tree():
    schema = Schema(columns=SCHEMA.columns[:3])
    mech = build("mst", schema, epsilon=EPS, delta=DELTA, params={"key_columns": "x,y,z", "iters": 300}, n=N)
    mech.fit(TableSource.from_frame(schema, _raw()[["y", "z", "x"]]))
    assert mech.edges == [] and len(mech.key_pairs) == 3
    assert mech.privacy_cost().details["rho_split"].startswith("1/2 one-way, 1/2 key pairs")
    assert math.isclose(sum(mech.spent), accounting.zcdp_rho(EPS, DELTA), rel_tol=1e-9)


def test_the_predictor_spreads_the_pairs_share_over_the_key_pairs():
    from mechanisms.guidance.purposes import Setting
    from mechanisms.synthesizers import mst

    setting = Setting(_wide([5] * 20), 30_000, 1.0, 1e-6)
    plain = mst.MST.predict_accuracy(setting, {})
    keyed = mst.MST.predict_accuracy(setting, {"key_columns": "c0", "key_in_tree": False})
    assert "on the 37 tree and key pairs" in keyed.modelled  # 18 tree edges + 19 key pairs
    assert keyed.one_way == plain.one_way  # the 1-way share is unchanged
    assert keyed.two_way(1, 2) > plain.two_way(1, 2)  # each pair's share is about half
    given = mst.MST.predict_accuracy(setting, {"key_columns": "c0"})  # 5 key cells: the tree given the key
    rho = accounting.zcdp_rho(1.0, 1e-6)
    assert f"{math.sqrt(2) * math.sqrt(19 / (2 * rho / 4)):.3g} on the 37 tree and key pairs" in given.modelled
    assert given.one_way > plain.one_way  # a quarter of rho for the 1-way marginals instead of a third


def test_the_selection_score_given_the_key_columns_moves_by_at_most_2_when_one_record_is_replaced():
    """|| x_Kab - xhat_Kab ||_1 (mst._scores_given) on D and on tables with one record replaced, the model xhat
    the same (fitted to noisy 1-way marginals and key pairs): no score moves by more than the sensitivity 2 the
    selection is calibrated with, and some move by exactly 2 (the bound is tight). The model's xhat_Kab is
    also checked against Private-PGM's own (K, a, b) marginal (variable elimination)."""
    from mechanisms.pgm import QUALITY_L1_SENSITIVITY, CellTable, Measurement, Measurements, candidate_marginals
    from mechanisms.pgm import estimate, load_mbi
    from mechanisms.synthesizers.mst import _scores_given

    mbi, noise = load_mbi(), Noise.seeded(5)
    raw = _raw_within(n=400)
    cells = WITHIN.to_cells(WITHIN.prepare(raw))
    table = CellTable(cells, WITHIN.names, WITHIN.cell_sizes)
    log = Measurements()
    for clique in [(a,) for a in "yabc"] + [("y", a) for a in "abc"]:
        log.add(Measurement(clique, pgm.measure(noise, table.counts(clique), 10.0), 10.0))
    model = estimate(mbi, table.sizes, table.names, log, total=table.n, iters=300)
    pairs = list(itertools.combinations("abc", 2))
    base = _scores_given(mbi, model, table, pairs, ("y",), ())
    fitted = candidate_marginals(mbi, model, [("y",) + e for e in pairs], table.n)
    for e in pairs:  # the broadcast product is the model's own marginal
        assert base[e] == pytest.approx(float(np.abs(table.counts(("y",) + e) - fitted[("y",) + e]).sum()), rel=1e-6)
    rng, moves = np.random.default_rng(0), []
    for _ in range(40):
        other = cells.copy()
        i = int(rng.integers(0, len(cells)))
        other[i] = [rng.integers(0, k) for k in WITHIN.cell_sizes]
        scores = _scores_given(mbi, model, CellTable(other, WITHIN.names, WITHIN.cell_sizes), pairs, ("y",), ())
        moves += [abs(scores[e] - base[e]) for e in pairs]
    assert max(moves) <= QUALITY_L1_SENSITIVITY + 1e-9
    assert max(moves) == pytest.approx(QUALITY_L1_SENSITIVITY)


def test_key_pairs_with_few_cells_are_measured_where_the_mean_pair_would_be_noise():
    """tree='auto' judges the key pairs on their own cells: a 2-cell label's pairs stay measured where the mean
    pair of many-celled columns is past the noise limit (then, without key columns, only 1-way marginals)."""
    from mechanisms.synthesizers.mst import tree_is_informative

    sizes = [2] + [60] * 30
    rho = accounting.zcdp_rho(1.0, 1e-5)
    assert not tree_is_informative(15_000, rho, sizes, compress=False)  # 3,600 cells a pair: noise
    for conditioned in (False, True):
        assert not tree_is_informative(15_000, rho, sizes, compress=False, keys=1, conditioned=conditioned)
        assert tree_is_informative(
            15_000, rho, sizes, compress=False, keys=1, conditioned=conditioned, key_positions=(0,)
        )  # 120 cells a key pair
    schema = _wide(sizes)
    mech = build("mst", schema, epsilon=1.0, delta=1e-5, params={"key_columns": "c0", "compress": False}, n=15_000)
    assert mech._pairs_measured(15_000, rho, sizes)
