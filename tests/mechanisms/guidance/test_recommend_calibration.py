"""The calibration behind the recommendation: the priors (mechanisms/guidance/predictors.py, each mechanism's
guide.py) are what the documented grid search chooses on the recorded benchmark (docs/data/benchmarks-full.json)."""

from __future__ import annotations

import functools

import pytest

from benchmarks.calibration import recommend_calibration as cal
from mechanisms.guidance import predictors
from mechanisms.guidance import recommend as rec
from mechanisms.synthesizers.density_lp import guide as lp_guide


@pytest.fixture(scope="module")
def means():
    return cal.measured_means(cal.recorded_rows())


@pytest.fixture(scope="module", autouse=True)
def public_facts_computed_once():
    """A grid search predicts every recorded cell thousands of times: each table's schema (a frozen Schema
    read from benchmarks/schemas/) is parsed once, and each release's plan check (public inputs, no prior
    in it) runs once per mechanism, setting and parameters, instead of once per prediction."""
    plan_refusal = rec._plan_refusal
    once = functools.cache(lambda cls, setting, params: plan_refusal(cls, setting, dict(params)))

    def cached_plan_refusal(cls, setting, params):
        try:
            return once(cls, setting, tuple(sorted(params.items())))
        except TypeError:  # an unhashable parameter value
            return plan_refusal(cls, setting, params)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cal, "schema_of", functools.cache(cal.schema_of))
        mp.setattr(rec, "_plan_refusal", cached_plan_refusal)
        yield


@pytest.mark.parametrize("mech", list(cal.FITS))
@pytest.mark.slow
def test_the_priors_in_the_code_are_the_fit_of_the_recorded_run(means, mech):
    saved = {name: cal.prior(name) for name in cal.FITS[mech]}
    try:
        chosen = cal.fit(means, mech, set(cal.ROWS))
    finally:
        for name, value in saved.items():
            setattr(cal.prior_home(name), name, value)
    assert chosen == saved, f"refit {mech}: python -m benchmarks.calibration.recommend_calibration --fit"


def test_the_fit_notices_a_broken_prior(means):
    """A deliberately wrong independence penalty moves the baseline's 2-way predictions out of range."""
    good = cal.loss(means, "baseline", set(cal.ROWS))
    saved = predictors.INDEPENDENCE_PENALTY
    try:
        predictors.INDEPENDENCE_PENALTY = 0.2
        broken = cal.loss(means, "baseline", set(cal.ROWS))
    finally:
        predictors.INDEPENDENCE_PENALTY = saved
    assert good[0] <= 3 and broken[0] >= good[0] + 10  # 3: Gaussian-mode rows at epsilon 0.1 (docs/recommend.md)


def test_the_goal_table_compares_the_recommendation_with_the_best_measured(means):
    rows = cal.goal_rows(means, cal.ROWS)
    # 6 tables x 3 epsilons explore + 5 labelled tables x 3 epsilons ml = 33, less the 2 where the recommended
    # mechanism (AIM) was not measured: credit_default_taiwan at epsilon 10, both purposes (more than 30 min)
    assert len(rows) == 31
    assert not any(r["near_uniform_recommended"] for r in rows)
    # the target is 90%: measured 28 of 31 (docs/recommend.md lists the three misses: a near tie sent to
    # the faster MST on adult at 0.1, and two german_credit ml cells where every TSTR is near chance)
    assert sum(r["ok_all"] for r in rows) >= 28


def test_near_uniform_output_in_the_recorded_run_was_predicted(means):
    rows = cal.compare_rows(means, cal.ROWS)
    for r in rows:
        if r["mechanism"].startswith("smartnoise-"):
            continue
        near_uniform = r["meas_1way"] > 0.3
        if r["status"] == "would-fail":
            assert near_uniform, r
        elif near_uniform:
            # too little budget for this n (german_credit, 800 rows, at 0.1): predicted too
            assert r["pred_1way"] > 0.3, r


def _outside_goal(means) -> list[tuple]:
    """The calibration goal on the recorded run: each marginal-based prediction within a factor 1.5 of the
    measured error, or within 0.01 absolute (ratios of TVDs below 0.01 say little)."""
    out = []
    for r in cal.compare_rows(means, cal.ROWS):
        if cal.split_label(r["mechanism"])[0] not in cal.MARGINAL_BASED or r["status"] != "ok":
            continue
        for p, m in ((r["pred_1way"], r["meas_1way"]), (r["pred_2way"], r["meas_2way"])):
            f = cal.factor(p, m)
            if f is not None and f > cal.FACTOR and abs(p - m) > cal.ABSOLUTE:
                out.append((r["dataset"], r["mechanism"], r["epsilon"], p, m))
    return out


def test_marginal_predictions_are_within_the_goal_and_a_width_blind_density_lp_is_not(means):
    assert _outside_goal(means) == []
    saved = lp_guide.LP_WIDTH_POWER
    try:
        lp_guide.LP_WIDTH_POWER = 0.0  # mutant: a density-lp blind to the table's width
        missed = _outside_goal(means)
    finally:
        lp_guide.LP_WIDTH_POWER = saved
    assert ("credit_default_taiwan", "density-lp", 1.0) in {m[:3] for m in missed}
