"""AIM and MST (mechanisms/synthesizers/aim/, mst.py): noise off reproduces the measured marginals; every noise
draw is accounted and the total equals the rho of the requested (epsilon, delta) (a miscalibrated
variant is caught); plan refusals before any budget; summaries round-trip; Gaussian modes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mechanisms import accounting, pgm
from mechanisms.noise import Noise
from mechanisms.runner import build
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.mechanisms.npz import through_npz

SCHEMA = Schema(
    columns=(
        Column("a", "categorical", categories=("x", "y", "z")),
        Column("b", "categorical", categories=("p", "q")),
        Column("c", "integer", lower=0, upper=3),
        Column("d", "continuous", lower=0, upper=1, bins=4),
    )
)
EPS, DELTA = 1.0, 1e-6


def _raw(n=3000, seed=0) -> pd.DataFrame:
    """a drives b and c; d is noise."""
    rng = np.random.default_rng(seed)
    a = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.8, (a > 0).astype(int), rng.integers(0, 2, n))
    c = np.clip(a + rng.integers(0, 2, n), 0, 3)
    return pd.DataFrame(
        {
            "a": np.array(["x", "y", "z"])[a],
            "b": np.array(["p", "q"])[b],
            "c": c.astype(str),
            "d": rng.random(n).round(3).astype(str),
        }
    )


class ZeroNoise(Noise):
    """Noise switched off: exact counts, the true maximum selected."""

    def __init__(self):
        super().__init__(secure=False, seed=0)

    def gaussian_int(self, counts, *, scale):
        return np.asarray(counts, dtype=np.int64).copy()

    def select_max_zcdp(self, scores, *, sensitivity, rho):
        return int(np.argmax(scores))


class RecordingNoise(Noise):
    """Seeded noise that records the zCDP cost of every draw, computed here independently of the
    mechanisms: a marginal with discrete Gaussian std s costs (sqrt 2)^2 / (2 s^2) under replace-one;
    a selection costs the rho it was given (OpenDP checks that against its scale)."""

    def __init__(self, seed=0):
        super().__init__(secure=False, seed=seed)
        self.costs: list[float] = []

    def gaussian_int(self, counts, *, scale):
        self.costs.append(2 / (2 * scale**2))
        return super().gaussian_int(counts, scale=scale)

    def select_max_zcdp(self, scores, *, sensitivity, rho):
        assert sensitivity >= 2.0, "replace-one: an L1 error score moves by up to 2"
        self.costs.append(rho)
        return super().select_max_zcdp(scores, sensitivity=sensitivity, rho=rho)


def _fit(name, noise, raw=None, **params):
    mech = build(name, SCHEMA, epsilon=EPS, delta=DELTA, params=params, noise=noise, n=3000)
    return mech.fit(TableSource.from_frame(SCHEMA, _raw() if raw is None else raw))


def _true(clique):
    cells = SCHEMA.to_cells(SCHEMA.prepare(_raw()))
    return pgm.CellTable(cells, SCHEMA.names, SCHEMA.cell_sizes).counts(clique)


def test_mst_without_noise_reproduces_the_measured_marginals():
    mech = _fit("mst", ZeroNoise(), compress=False)
    assert len(mech.edges) == 3
    assert ("a", "b") in mech.edges or ("b", "a") in mech.edges  # the strongest relation is in the tree
    for clique in [(a,) for a in SCHEMA.names] + list(mech.edges):
        model = mech.model.marginal(clique).ravel() * 3000
        assert 0.5 * np.abs(model - _true(clique)).sum() / 3000 < 0.01, clique


def test_aim_without_noise_reproduces_the_measured_marginals():
    mech = _fit("aim", ZeroNoise(), max_rounds=4, iters=500)
    assert len(mech.selected) >= 1
    for clique in [(a,) for a in SCHEMA.names] + [tuple(c) for c, _ in mech.selected]:
        model = mech.model.marginal(clique).ravel() * 3000
        assert 0.5 * np.abs(model - _true(clique)).sum() / 3000 < 0.01, clique


@pytest.mark.parametrize(
    "name,params",
    [
        ("mst", {}),
        ("mst", {"key_columns": "b"}),  # quarters: 1-way, key pairs, the tree of a, c, d given b, its marginals
        ("mst", {"key_columns": "b", "key_in_tree": False}),  # the tree's pairs and the key pairs share a third
        ("mst", {"key_columns": ["a", "b", "c"]}),  # no tree to select: halves for 1-way and key pairs
        ("aim", {"max_rounds": 5, "iters": 200}),
    ],
)
def test_every_draw_is_accounted_and_spends_exactly_the_budget(name, params):
    noise = RecordingNoise()
    mech = _fit(name, noise, **params)
    rho = accounting.zcdp_rho(EPS, DELTA)
    spent = math.fsum(noise.costs)
    assert spent <= rho * (1 + 1e-9)
    assert spent >= rho * 0.999  # nothing left unused either
    cost = mech.privacy_cost()
    assert (cost.epsilon, cost.delta, cost.guarantee) == (EPS, DELTA, "approximate")
    assert cost.details["zcdp_rho"] == pytest.approx(rho)
    keys = len(mech.params.get("key_columns", ()))
    if keys:  # every key pair measured besides the tree of the other columns, each draw recorded above
        assert len(mech.key_pairs) == keys * (4 - keys) + keys * (keys - 1) // 2
        assert len(mech.edges) == max(4 - keys - 1, 0)


@pytest.mark.parametrize(
    "name,params",
    [
        ("mst", {}),
        ("mst", {"key_columns": "b"}),
        ("mst", {"key_columns": "b", "key_in_tree": False}),
        ("aim", {"max_rounds": 5, "iters": 200}),
    ],
)
def test_a_miscalibrated_variant_is_caught(name, params, monkeypatch):
    """Mutant: the add/remove calibration (sensitivity 1) used under replace-one."""
    monkeypatch.setattr(pgm.measurement, "MARGINAL_RHO_PER_INV_VAR", 0.5)
    noise = RecordingNoise()
    _fit(name, noise, **params)
    assert math.fsum(noise.costs) > accounting.zcdp_rho(EPS, DELTA) * 1.2


def test_mst_synthetic_data_keeps_the_strong_pair_and_round_trips_through_its_summary():
    mech = _fit("mst", Noise.seeded(5))
    syn = mech.sample(3000)
    raw = SCHEMA.prepare(_raw())
    agree = lambda f: ((f["a"] == "x") == (f["b"] == "p")).mean()  # noqa: E731
    assert abs(agree(syn) - agree(raw)) < 0.05  # real 0.8 + 0.2/2 = 0.9; independence would give ~0.5
    again = type(mech).from_summary(
        SCHEMA, through_npz(mech.summary()), epsilon=EPS, delta=DELTA, params=mech.params, noise=Noise.seeded(9)
    )
    syn2 = again.sample(3000)
    assert abs(agree(syn2) - agree(raw)) < 0.05
    assert set(syn2.columns) == set(SCHEMA.names)


def test_aim_summary_round_trips_and_target_workload_covers_the_target():
    mech = _fit("aim", Noise.seeded(6), workload="target", target="b", max_rounds=4, iters=200)
    assert all("b" in c or len(c) < 3 for c, _ in mech.selected)
    again = type(mech).from_summary(
        SCHEMA, through_npz(mech.summary()), epsilon=EPS, delta=DELTA, params=mech.params, noise=Noise.seeded(1)
    )
    assert len(again.sample(100)) == 100


def test_aim_target_workload_needs_a_target():
    with pytest.raises(ValueError, match="workload='target' needs the parameter 'target'"):
        build("aim", SCHEMA, epsilon=1, delta=1e-6, params={"workload": "target"})


def _wide(columns: int, categories: int) -> Schema:
    cats = tuple(f"v{i}" for i in range(categories))
    return Schema(columns=tuple(Column(f"col{i}", "categorical", categories=cats) for i in range(columns)))


def test_plans_too_large_are_refused_before_any_budget_naming_the_limit_and_columns():
    with pytest.raises(
        ValueError, match=r"aim: workload 'all-3way' on 40 columns .* above the limits .*col0 \(100 cells\)"
    ):
        build("aim", _wide(40, 100), epsilon=1, delta=1e-6, params={"workload": "all-3way"}, n=1000)
    with pytest.raises(ValueError, match=r"mst: the 60 columns' 2-way marginals have .* above the limit of"):
        build("mst", _wide(60, 1000), epsilon=1, delta=1e-6, n=1000)
    with pytest.raises(ValueError, match=r"aim: the 1-way model alone needs .* above max_model_size=1"):
        build("aim", _wide(20, 10_000), epsilon=1, delta=1e-6, params={"max_model_size": 1}, n=1000)
    build("aim", _wide(20, 10), epsilon=1, delta=1e-6, n=1000)  # an ordinary plan passes


@pytest.mark.parametrize("name", ["baseline", "density-lp"])
def test_gaussian_modes_spend_the_rho_of_the_requested_epsilon_delta(name):
    noise = RecordingNoise()
    mech = build(name, SCHEMA, epsilon=EPS, delta=DELTA, params={"noise_type": "gaussian"}, noise=noise)
    mech.fit(TableSource.from_frame(SCHEMA, _raw()))
    rho = accounting.zcdp_rho(EPS, DELTA)
    # each recorded draw is one replace-one histogram: multiply by the tables it covers
    tables = {"baseline": [1] * 4, "density-lp": [1, 10]}[name]  # density-lp: full histogram, then T=10 tables
    spent = math.fsum(c * t for c, t in zip(noise.costs, tables))
    assert rho * 0.999 <= spent <= rho * (1 + 1e-9)
    cost = mech.privacy_cost()
    assert (cost.guarantee, cost.delta) == ("approximate", DELTA)
    assert len(mech.sample(50)) == 50


def test_pure_modes_refuse_a_delta_and_say_how_to_use_one():
    with pytest.raises(ValueError, match="choose noise_type='gaussian'"):
        build("baseline", SCHEMA, epsilon=1, delta=1e-6)
    with pytest.raises(ValueError, match="needs a positive delta"):
        build("baseline", SCHEMA, epsilon=1, params={"noise_type": "gaussian"})
    assert build("baseline", SCHEMA, epsilon=1).privacy_cost().guarantee == "pure"


# -- small-signal rules: public inputs decide, and the budget is still spent exactly ----------------------


def test_mst_measures_no_tree_when_the_rows_are_too_few_for_the_budget_and_spends_all_on_1way():
    from mechanisms.synthesizers.mst import tree_is_informative

    rho_small = accounting.zcdp_rho(0.1, 1e-5)
    assert tree_is_informative(3000, accounting.zcdp_rho(EPS, DELTA), SCHEMA.cell_sizes)
    assert not tree_is_informative(300, rho_small, SCHEMA.cell_sizes)
    raw = _raw(300)
    for tree, measured in (("auto", False), ("always", True)):
        noise = RecordingNoise()
        mech = build("mst", SCHEMA, epsilon=0.1, delta=1e-5, params={"tree": tree}, noise=noise, n=300)
        mech.fit(TableSource.from_frame(SCHEMA, raw))
        assert bool(mech.edges) is measured and mech.report()["tree_measured"] is measured
        assert math.fsum(noise.costs) == pytest.approx(rho_small, rel=1e-3)  # no budget left unused
        assert len(mech.sample(50)) == 50


def test_mst_keeps_a_column_whole_when_fewer_than_two_values_clear_three_sigma():
    from mechanisms.synthesizers.mst import compress_support

    sigma = 10.0
    assert compress_support(np.array([100, 5, 2, 0]), sigma).tolist() == [True] * 4  # one clears: not merged
    assert compress_support(np.array([1, 5, 2, 0]), sigma).tolist() == [True] * 4  # none clears
    assert compress_support(np.array([100, 40, 2, 0]), sigma).tolist() == [True, True, False, False]


def test_aim_rounds_follow_the_paper_unless_the_rows_are_few_for_the_budget():
    from mechanisms.synthesizers.aim import default_rounds

    sizes = [5] * 20
    rho = accounting.zcdp_rho(0.1, 1e-5)
    assert default_rounds(1_000_000, rho, sizes) == 16 * 20  # the paper's T = 16 d
    assert default_rounds(500, rho, sizes) == 20  # never below d
    mid = default_rounds(12_000, rho, sizes)
    assert 20 < mid < 320
    assert mid == math.floor(0.9 * rho * (12_000 / (6 * 5)) ** 2)  # sigma_0 = n / (6 k)
    # a fit at small n uses the lowered T: with T = d the 1-way start takes 90% of the budget
    noise = RecordingNoise()
    mech = build("aim", SCHEMA, epsilon=0.1, delta=1e-5, params={"iters": 50, "final_iters": 50}, noise=noise, n=300)
    mech.fit(TableSource.from_frame(SCHEMA, _raw(300)))
    assert default_rounds(300, accounting.zcdp_rho(0.1, 1e-5), SCHEMA.cell_sizes) == 4
    assert len(mech.selected) <= 2  # the initialisation + at most the last round
    assert math.fsum(noise.costs) == pytest.approx(accounting.zcdp_rho(0.1, 1e-5), rel=1e-3)


def test_a_fit_leaves_no_compiled_program_behind():
    """A worker runs many jobs: after AIM's or MST's fit the estimation programs (one per model structure,
    never reused by another job) are dropped and the freed heap is given back (pgm.release_programs)."""
    from mechanisms import pgm

    for name in ("aim", "mst"):
        mech = build(
            name,
            SCHEMA,
            epsilon=1.0,
            delta=1e-5,
            params={"iters": 50, "final_iters": 50} if name == "aim" else {"iters": 100},
            noise=RecordingNoise(),
            n=300,
        )
        mech.fit(TableSource.from_frame(SCHEMA, _raw(300)))
        assert "structure" not in pgm.estimation._COMPILED
        assert all(run._cache_size() == 0 for run in pgm.estimation._COMPILED["run"].values())
    pgm.release_freed_memory()  # callable again at any time (a no-op where the C library has no malloc_trim)


def test_aim_estimates_after_every_round_but_the_last_and_its_final_estimate_fits_every_measurement(monkeypatch):
    """The last round's estimate would only decide annealing, which ends with it: the fit goes from the last
    measurement to the final estimate (one estimate fewer; on credit_default_taiwan a level-2 compile and
    250 iterations of the largest model). The old order (estimate, then final estimate) makes one call more."""
    from mechanisms.synthesizers import aim

    calls = []
    real = aim.estimate

    def spy(mbi, sizes, names, log, **kw):
        calls.append((set(log.cliques), kw["iters"]))
        return real(mbi, sizes, names, log, **kw)

    monkeypatch.setattr(aim, "estimate", spy)
    mech = _fit("aim", RecordingNoise(), max_rounds=10, iters=60, final_iters=70)
    rounds = len(mech.batches)
    assert rounds >= 2
    assert [iters for _, iters in calls] == [60] * rounds + [70]  # the 1-way start, rounds 1..T-1, the final
    assert {tuple(c) for c, _ in mech.selected} <= calls[-1][0]


def test_mst_privacy_report_states_how_the_budget_was_spent_by_this_fit():
    fitted = _fit("mst", Noise.seeded(3))
    assert fitted.use_tree
    split = fitted.privacy_cost().details["rho_split"]
    assert split == "1/3 one-way, 1/3 tree selection, 1/3 tree pairs: the spanning tree was measured"
    assert "all on the 1-way" not in split
    small = build("mst", SCHEMA, epsilon=0.05, delta=DELTA, noise=Noise.seeded(3), n=60)
    small.fit(TableSource.from_frame(SCHEMA, _raw(n=60)))
    assert not small.use_tree
    cost = small.privacy_cost()
    assert cost.details["rho_split"].startswith("all on the 1-way marginals: the spanning tree was not measured")
    assert any(c.startswith("only the 1-way marginals are measured") for c in cost.caveats)
    planned = build("mst", SCHEMA, epsilon=EPS, delta=DELTA).privacy_cost().details["rho_split"]
    assert "tree='auto' with too few rows" in planned  # before a fit: the plan, both ways


def test_aim_batched_rounds_select_several_marginals_each_paid_and_spend_exactly_the_budget():
    """With fewer rounds than selections (``estimates``), a round selects several marginals without replacement,
    one exponential mechanism each (each selection's rho recorded), measures them, and re-estimates once; the
    whole budget is spent and never more. A round that paid one selection for all its picks is caught: the
    draws recorded would then fall short of the budget's selections."""
    mech, noise = _batched()
    assert 1 <= len(mech.batches) <= 2 and max(mech.batches) > 1 and sum(mech.batches) == len(mech.selected)
    rho = accounting.zcdp_rho(EPS, DELTA)
    assert rho * 0.999 <= math.fsum(noise.costs) <= rho * (1 + 1e-9)
    assert _every_pick_selected(mech, noise)
    assert mech.plan.fixed_estimates and mech.plan.estimates == 2 and mech.plan.units == 14


def _batched():
    noise = RecordingNoise()
    return _fit("aim", noise, workload="all-3way", max_rounds=14, estimates=2, iters=60, final_iters=60), noise


def _every_pick_selected(mech, noise) -> bool:
    selections = [c for c in noise.costs if c < min(noise.costs[:4])]  # a selection costs 1/9 of a measurement
    return len(selections) >= len(mech.selected)


def test_a_batch_that_takes_the_next_best_scores_without_selecting_them_is_caught(monkeypatch):
    """Mutant: one exponential mechanism per round, then the next highest (private) scores taken as they are."""
    from mechanisms.synthesizers.aim import AIM

    def greedy(self, model, names, sizes, candidates, scores, batch, size_limit, sensitivity, rho_select, sigma, spent):
        first = self.noise.select_max_zcdp(scores, sensitivity=sensitivity, rho=rho_select)
        spent.append(rho_select)
        rest = [i for i in np.argsort(-scores) if i != first][: batch - 1]
        return [candidates[i] for i in [first, *rest]]

    monkeypatch.setattr(AIM, "_select_batch", greedy)
    mech, noise = _batched()
    assert not _every_pick_selected(mech, noise)


def test_aim_time_budget_plans_fewer_rounds_before_any_data_is_read():
    """The plan is a function of public inputs: a smaller time budget gives fewer rounds (each selecting more),
    the same T, and the same plan whatever the data."""
    small = build("aim", SCHEMA, epsilon=EPS, delta=DELTA, params={"time_budget": 5}).selection_plan(3000)
    large = build("aim", SCHEMA, epsilon=EPS, delta=DELTA, params={"time_budget": 600}).selection_plan(3000)
    assert small.units == large.units and small.estimates <= large.estimates
    assert large.seconds <= 600 and not large.fixed_estimates
    fitted = _fit("aim", Noise.seeded(3), time_budget=600)
    assert fitted.plan == large and len(fitted.batches) <= large.estimates
