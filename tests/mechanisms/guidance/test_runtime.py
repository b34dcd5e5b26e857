"""Run-time estimates (mechanisms/guidance/runtime.py): public inputs only, growing with what the algorithm's
cost grows with, readable text."""

from __future__ import annotations

import pytest

from mechanisms import registry
from mechanisms.guidance import runtime
from mechanisms.synthesizers.aim import guide as aim_guide
from mechanisms.synthesizers.dpmerf import guide as dpmerf_guide
from mechanisms.schema import Column, Schema

SCHEMA = Schema(
    columns=(
        Column("x", "continuous", lower=0.0, upper=1.0),
        Column("c", "categorical", categories=("a", "b")),
        Column("skip", "excluded"),
    )
)


def test_work_grows_with_rows_columns_and_iterations():
    w = lambda mech, n, **p: runtime.work(mech, n=n, schema=SCHEMA, params=p)  # noqa: E731
    assert w("baseline", 2000) == 2 * w("baseline", 1000) == 2 * 1000 * 2  # excluded columns do not count
    assert w("pmse", 1000, iterations="20", burn_in="10", m="5") == 30 * 5 * 2
    # a step costs the features and the generator's weights: widths (10, 32, 16, 1 + 2) for this schema
    assert dpmerf_guide.generator_weights(SCHEMA, {}) == 10 * 32 + 32 * 16 + 16 * 3
    step = 100 + dpmerf_guide.WEIGHT_COST * (10 * 32 + 32 * 16 + 16 * 3)
    assert w("dpmerf", 1000, epochs=200, features=100) == pytest.approx(200 * 256 * step + 1000 * 100)  # batch 256
    assert w("dpmerf", 100_000, epochs=200, features=100) == pytest.approx(200 * 4096 * step + 100_000 * 100)
    assert dpmerf_guide.generator_weights(SCHEMA, {"hidden": "200,100"}) == 10 * 200 + 200 * 100 + 100 * 3
    assert w("dpmerf", 10_000, epochs=400) == 2 * w("dpmerf", 10_000, epochs=200) - 10_000 * 1000
    assert w("density-lp", 1000, m=100) == 100 * 3  # 3 tables: two 1-way, one 2-way
    assert w("density-lp", 1000, m=100, degree=1) == 100 * 2


def test_estimates_are_positive_and_unknown_mechanisms_get_the_generous_fallback():
    base = runtime.estimate("baseline", n=1000, schema=SCHEMA)
    assert base.seconds > 0 and base.to_dict()["text"]
    other = runtime.estimate("some-new-mechanism", n=1000, schema=SCHEMA)
    assert other.seconds == runtime.FALLBACK[0] + runtime.FALLBACK[1] * 2000
    assert not other.calibrated and "not calibrated" in other.to_dict()["text"] and base.calibrated
    assert other.seconds >= 60  # never the fast queue (its default limit is 10 s)
    long_fit = runtime.estimate("dpmerf", n=32_561, schema=SCHEMA, params={"epochs": 2000})
    assert long_fit.seconds > 10 * base.seconds


def test_a_bad_row_count_is_refused_naming_it():
    with pytest.raises(ValueError, match="n=-1"):
        runtime.work("baseline", n=-1, schema=SCHEMA, params={})


@pytest.mark.parametrize(
    "seconds, text",
    [(1.2, "a few seconds"), (12.4, "about 12 s"), (44, "about 40 s"), (600, "about 10 min"), (7200, "about 2.0 h")],
)
def test_seconds_read_as_rounded_text(seconds, text):
    assert runtime.describe_seconds(seconds) == text


def test_draws_are_estimated_from_rows_alone():
    assert runtime.estimate_draw(1000, 3).seconds < runtime.estimate_draw(1_000_000, 3).seconds


def test_aim_estimate_is_its_plan_which_fits_the_time_budget():
    """AIM's estimate is its plan's predicted seconds (aim.guide.plan, public inputs only): the rounds are as many
    as fit the time budget, at most MAX_BATCHED_ESTIMATES, so a smaller budget gives fewer rounds and a shorter
    estimate, and the default plan fits the default budget even on a wide table with a target workload."""
    from mechanisms.synthesizers import aim

    cols = tuple(Column(f"c{i}", "categorical", categories=tuple(f"v{k}" for k in range(12))) for i in range(42))
    wide = Schema(columns=cols)
    params = {"workload": "target", "target": "c0"}
    plan = aim_guide.plan(n=16_000, schema=wide, params=params, epsilon=1.0, delta=1e-5)
    est = runtime.estimate("aim", n=16_000, schema=wide, params=params, epsilon=1.0, delta=1e-5)
    assert est.seconds == pytest.approx(plan.seconds) and plan.seconds <= aim.DEFAULT_TIME_BUDGET
    assert plan.batched and 1 <= plan.estimates <= aim.MAX_BATCHED_ESTIMATES
    assert plan.units == 42 + 45 and plan.paper_seconds > 10 * plan.seconds  # the paper's 16 d rounds: far longer
    tight = aim_guide.plan(n=16_000, schema=wide, params={**params, "time_budget": 10}, epsilon=1.0, delta=1e-5)
    assert tight.estimates < plan.estimates and tight.seconds < plan.seconds
    fixed = aim_guide.plan(n=16_000, schema=wide, params={**params, "estimates": 2}, epsilon=1.0, delta=1e-5)
    assert fixed.estimates == 2 and fixed.fixed_estimates
    steward_t = aim_guide.plan(n=16_000, schema=wide, params={**params, "max_rounds": 200}, epsilon=1.0, delta=1e-5)
    assert steward_t.units == 200 and steward_t.seconds > plan.seconds  # more marginals: a larger model
    pairs = runtime.estimate("aim", n=16_000, schema=wide, epsilon=1.0, delta=1e-5)
    assert pairs.seconds < est.seconds  # all pairs: fewer candidates than every triple with the target


def test_aim_shows_a_narrow_range_with_its_reason_and_others_a_single_value():
    cols = tuple(Column(f"c{i}", "categorical", categories=tuple(f"v{k}" for k in range(40))) for i in range(12))
    est = runtime.estimate("aim", n=30_000, schema=Schema(columns=cols), epsilon=1.0, delta=1e-5)
    lo, hi = registry.get("aim").runtime_model.range
    assert hi / lo <= 3  # a range at most 3x wide
    assert est.low == pytest.approx(est.seconds * lo) and est.high == pytest.approx(est.seconds * hi)
    d = est.to_dict()
    assert d["text"].startswith("between ") and d["low_seconds"] < d["seconds"] < d["high_seconds"]
    assert "time budget bounds it" in d["range_reason"]
    wide = Schema(columns=tuple(Column(f"c{i}", "categorical", categories=("a", "b")) for i in range(42)))
    w = runtime.estimate("aim", n=20_000, schema=wide, epsilon=1.0, delta=1e-5)
    assert w.high / w.low <= 3  # 42 columns: still the plan's range, not the extrapolation's
    mst = runtime.estimate("mst", n=10_000, schema=Schema(columns=cols)).to_dict()
    assert mst["low_seconds"] == pytest.approx(mst["seconds"] * registry.get("mst").runtime_model.range[0], abs=0.1)
    assert "compiled Private-PGM programs" in mst["range_reason"]
    baseline = runtime.estimate("baseline", n=10_000, schema=Schema(columns=cols)).to_dict()
    assert "low_seconds" not in baseline and baseline["text"] == "a few seconds"


def test_a_range_reads_as_words():
    assert runtime.describe_range(30, 300) == "between 30 s and 5 min"
    assert runtime.describe_range(0.1, 3) == "a few seconds"


def test_aim_for_models_on_a_wide_table_fits_its_time_budget_and_the_task_limit():
    """AIM around the target (what the release form recommends for training models when AIM ranks first) on a
    42-column table is estimated within its time budget, far under the default task time limit (3,600 s): it is
    never refused."""
    from mechanisms.guidance.recommend import Purpose, recommend
    from mechanisms.synthesizers import aim

    cols = [Column(f"c{i}", "categorical", categories=tuple(f"v{k}" for k in range(3 + i % 20))) for i in range(41)]
    cols.append(Column("label", "categorical", categories=("no", "yes")))
    schema = Schema(columns=tuple(cols))
    rec = recommend(schema, n=16_000, epsilon=1.0, delta=1e-5, purpose=Purpose("ml", target="label"))
    best = next(p for p in rec.items if p.mechanism == "aim")
    assert best.status != "would-fail" and best.params.get("workload") == "target"
    est = runtime.estimate(
        "aim", n=16_000, schema=schema, params={**best.params, "target": "label"}, epsilon=1.0, delta=1e-5
    )
    assert est.seconds <= aim.DEFAULT_TIME_BUDGET and est.high <= 1.2 * aim.DEFAULT_TIME_BUDGET < 3600
