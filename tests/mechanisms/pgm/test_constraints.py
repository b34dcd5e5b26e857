"""Declared rules as structural zeros of Private-PGM's model (mechanisms/pgm/constraints.py): the zero cells of
each rule kind; MST and AIM fitted under the rules sample no row that breaks one (no rejection needed), and a
variant that fits the model without them is caught; the rules cost no fit to the measured marginals."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms import pgm
from mechanisms.noise import Noise
from mechanisms.pgm import constraints
from mechanisms.rules import violations
from mechanisms.runner import build
from mechanisms.source import TableSource
from tests.mechanisms.test_rules import RULES, schema_with, table

N = 3000


def test_each_rule_kind_forbids_exactly_the_cells_every_value_of_which_breaks_it():
    s = schema_with(RULES)
    zeros = {z.clique: z for z in constraints.structural_zeros(s)}
    forbid, order, hierarchy = zeros[("age", "income")], zeros[("weeks", "age")], zeros[("detailed", "major")]
    # forbid: ages 0-14 (one cell per integer) with income 50000+, nothing else
    expected = np.ones((101, 2), bool)
    expected[:15, 1] = False
    assert np.array_equal(forbid.allowed, expected)
    # order weeks <= age: cell (w, a) forbidden exactly when w > a
    w, a = np.meshgrid(np.arange(53), np.arange(101), indexing="ij")
    assert np.array_equal(order.allowed, w <= a)
    # hierarchy: each mapped child only with its parent
    assert hierarchy.allowed.tolist() == [
        [True, False, False],
        [True, False, False],
        [False, True, False],
        [False, False, True],
    ]


def test_a_bin_that_straddles_a_forbidden_interval_stays_allowed():
    s = schema_with([{"forbid": {"age": [0, 14], "income": ["50000+"]}}])
    d = s.to_dict()
    d["columns"][0].update(bins=10)  # ages 0-100 in 10 bins of about 10 years: [0, 10) inside, [10, 20) straddles
    z = constraints.structural_zeros(type(s).from_dict(d))[0]
    assert z.allowed[:, 0].all() and not z.allowed[0, 1] and z.allowed[1:, 1].all()


def _fit(name, rules, *, noise=None, **params):
    s = schema_with(rules)
    mech = build(name, s, epsilon=1.0, delta=1e-6, params=params, noise=noise or Noise(secure=False, seed=3), n=N)
    return mech.fit(TableSource.from_frame(s, table(N)))


@pytest.mark.parametrize("name, params", [("mst", {"iters": 500}), ("aim", {"max_rounds": 8, "iters": 300})])
def test_the_fitted_model_breaks_no_rule_and_a_model_fitted_without_them_is_caught(name, params, monkeypatch):
    mech = _fit(name, RULES, **params)
    synthetic = mech.sample(N)  # the model's own sampler: no rejection
    assert not violations(mech.schema, synthetic).any()
    assert any({"detailed", "major"} <= set(c) for c in mech.model.cliques)  # a clique holds the hierarchy

    # broken variant: the rules left out of the estimate (the model ignores them)
    for module in ("mechanisms.synthesizers.mst", "mechanisms.synthesizers.aim"):
        monkeypatch.setattr(f"{module}.structural_zeros", lambda schema: [])
    broken = _fit(name, RULES, **params)
    assert violations(broken.schema, broken.sample(N)).mean() > 0.05


def test_rules_cost_nothing_in_the_fit_of_true_marginals():
    """Without noise the model fitted under true rules reproduces the measured 1-way marginals as well as one fitted
    without them (within 0.01 TVD), and its hierarchy pair is exactly the real one."""

    class ZeroNoise(Noise):
        def __init__(self):
            super().__init__(secure=False, seed=0)

        def gaussian_int(self, counts, *, scale):
            return np.asarray(counts, dtype=np.int64).copy()

        def select_max_zcdp(self, scores, *, sensitivity, rho):
            return int(np.argmax(scores))

    s = schema_with(RULES)
    cells = pgm.CellTable(s.to_cells(s.prepare(table(N))), s.names, s.cell_sizes)
    ruled = _fit("mst", RULES, noise=ZeroNoise(), compress=False)
    plain = _fit("mst", [], noise=ZeroNoise(), compress=False)
    for a in s.names:
        truth = cells.counts((a,)) / N
        tvd = [0.5 * np.abs(m.model.marginal((a,)) - truth).sum() for m in (ruled, plain)]
        assert tvd[0] <= tvd[1] + 0.01, (a, tvd)
    pair = ruled.model.marginal(("detailed", "major")).ravel()
    assert 0.5 * np.abs(pair - cells.counts(("detailed", "major")) / N).sum() < 0.01
