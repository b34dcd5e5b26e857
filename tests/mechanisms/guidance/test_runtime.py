"""Run-time estimates (mechanisms/guidance/runtime.py): public inputs only, growing with what the algorithm's
cost grows with, readable text."""

from __future__ import annotations

import pytest

from mechanisms import registry
from mechanisms.guidance import runtime
from mechanisms.synthesizers.aim import guide as aim_guide
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
    assert w("dpmerf", 1000, epochs=200, features=100) == 200 * 256 * 100 + 1000 * 100  # batch clipped to 256
    assert w("dpmerf", 100_000, epochs=200, features=100) == 200 * 4096 * 100 + 100_000 * 100
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


def test_aim_estimate_grows_with_the_budget_the_candidates_and_the_largest_column():
    """AIM: work = candidate cells x sqrt(largest column) x columns x rho^0.2 x (T / 16 d)^0.8
    (docs/operations.md); T = 16 d unless n is small for the budget (mechanisms.synthesizers.aim.default_rounds)."""
    import math

    from mechanisms.accounting import zcdp_rho
    from mechanisms.synthesizers.aim import default_rounds

    cols = tuple(Column(f"c{i}", "categorical", categories=tuple("abcd")) for i in range(6))
    six = Schema(columns=cols)
    n = 100_000  # enough rows for the paper's 16 d rounds at epsilon 1
    w = lambda eps, schema=six, **p: runtime.work("aim", n=n, schema=schema, params=p, epsilon=eps, delta=1e-5)  # noqa: E731
    pairs = 15 * 16  # all-2way: 15 pairs of 4 x 4 cells
    assert w(1.0) == pytest.approx(pairs * 2 * 6 * zcdp_rho(1.0, 1e-5) ** aim_guide.AIM_RHO_POWER)
    small = runtime.work("aim", n=1000, schema=six, params={}, epsilon=1.0, delta=1e-5)  # fewer rounds
    T = default_rounds(1000, zcdp_rho(1.0, 1e-5), [4] * 6)
    assert T < 96 and small == pytest.approx(w(1.0) * (T / 96) ** aim_guide.AIM_ROUNDS_POWER)
    assert runtime.work("aim", n=n, schema=six, params={"max_rounds": 48}, epsilon=1.0, delta=1e-5) == pytest.approx(
        w(1.0) * 0.5**aim_guide.AIM_ROUNDS_POWER
    )  # the steward's max_rounds counts too
    assert w(10.0) / w(1.0) == pytest.approx((zcdp_rho(10, 1e-5) / zcdp_rho(1, 1e-5)) ** 0.2)
    assert w(1.0, workload="all-3way") == w(1.0)  # timed as all pairs: measured about as long through the API
    assert w(1.0, workload="target", target="c0") == w(1.0)  # timed as all pairs (measured: the AIM guide's note)
    wide = Schema(columns=cols + (Column("big", "categorical", categories=tuple(f"v{i}" for i in range(64))),))
    assert w(1.0, schema=wide) > w(1.0) * math.sqrt(64 / 4)  # more cells and a larger largest column
    est = runtime.estimate("aim", n=n, schema=six, epsilon=1.0, delta=1e-5)
    model = registry.get("aim").runtime_model
    assert est.calibrated and est.seconds == pytest.approx(model.a + model.b * w(1.0))
    assert runtime.estimate("aim", n=n, schema=six).seconds == est.seconds  # epsilon 1, delta 1e-5 assumed


def test_aim_shows_a_range_with_its_reason_and_others_a_single_value():
    cols = tuple(Column(f"c{i}", "categorical", categories=tuple(f"v{k}" for k in range(40))) for i in range(12))
    est = runtime.estimate("aim", n=30_000, schema=Schema(columns=cols), epsilon=1.0, delta=1e-5)
    lo, hi = registry.get("aim").runtime_model.range
    assert est.low == pytest.approx(est.seconds * lo) and est.high == pytest.approx(est.seconds * hi)
    d = est.to_dict()
    assert d["text"].startswith("between ") and d["low_seconds"] < d["seconds"] < d["high_seconds"]
    assert "cannot be known from public inputs" in d["range_reason"]
    wide = Schema(columns=tuple(Column(f"c{i}", "categorical", categories=("a", "b")) for i in range(42)))
    w = runtime.estimate("aim", n=20_000, schema=wide, epsilon=1.0, delta=1e-5)
    assert w.low == pytest.approx(w.seconds * runtime.WIDE_RANGE[0]) and "42 columns" in w.range_reason
    mst = runtime.estimate("mst", n=10_000, schema=Schema(columns=cols)).to_dict()
    assert mst["low_seconds"] == pytest.approx(mst["seconds"] * registry.get("mst").runtime_model.range[0], abs=0.1)
    assert "compiled Private-PGM programs" in mst["range_reason"]
    baseline = runtime.estimate("baseline", n=10_000, schema=Schema(columns=cols)).to_dict()
    assert "low_seconds" not in baseline and baseline["text"] == "a few seconds"


def test_a_range_reads_as_words():
    assert runtime.describe_range(30, 300) == "between 30 s and 5 min"
    assert runtime.describe_range(0.1, 3) == "a few seconds"
