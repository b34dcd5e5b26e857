"""Public consistency rules: parsing, refusal of unsatisfiable rules, conforming generation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.evaluation import fidelity
from mechanisms.noise import Noise
from mechanisms.rules import sample_conforming, violations
from mechanisms.runner import build, run
from mechanisms.schema import Column, Schema, SchemaError
from mechanisms.source import TableSource

COLUMNS = (
    Column("age", "integer", lower=0, upper=100, bins=101),
    Column("weeks", "integer", lower=0, upper=52, bins=53),
    Column("income", "categorical", categories=("- 50000", "50000+")),
    Column("major", "categorical", categories=("Retail", "Public", "None")),
    Column("detailed", "categorical", categories=("33", "34", "41", "0")),
)
RULES = [
    {"forbid": {"age": [0, 14], "income": ["50000+"]}, "name": "children earn under 50k"},
    {"order": ["weeks", "age"]},
    {
        "hierarchy": {
            "child": "detailed",
            "parent": "major",
            "map": {"33": "Retail", "34": "Retail", "41": "Public", "0": "None"},
        }
    },
]


def schema_with(rules) -> Schema:
    return Schema.from_dict({"columns": [c.to_dict() for c in COLUMNS], "rules": rules})


def table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Real records obeying the rules."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n)
    weeks = np.minimum(rng.integers(0, 53, n), age)
    income = np.where((age >= 15) & (rng.random(n) < 0.3), "50000+", "- 50000")
    detailed = rng.choice(["33", "34", "41", "0"], n)
    major = pd.Series(detailed).map({"33": "Retail", "34": "Retail", "41": "Public", "0": "None"})
    return pd.DataFrame(
        {"age": age.astype(str), "weeks": weeks.astype(str), "income": income, "major": major, "detailed": detailed}
    )


def test_rules_round_trip_through_the_schema_json():
    s = schema_with(RULES)
    assert Schema.from_json(s.to_json()) == s and [r.to_dict() for r in s.rules] == RULES


@pytest.mark.parametrize(
    "rules, message",
    [
        ([{"forbid": {"age": [0, 100]}}], "forbids every record"),
        ([{"forbid": {"income": ["- 50000", "50000+"]}}], "forbids every record"),
        ([{"order": ["age", "nope"]}], "no column 'nope'"),
        ([{"order": ["age", "income"]}], "needs continuous or integer"),
        ([{"forbid": {"income": ["rich"]}}], "not categories of 'income'"),
        ([{"hierarchy": {"child": "detailed", "parent": "major", "map": {"99": "Retail"}}}], "does not declare"),
        ([{"forbid": {"age": [0, 50]}}, {"forbid": {"age": [51, 100]}}], "together leave no record"),
        ([{"order": ["age", "weeks"]}, {"forbid": {"weeks": [0, 52], "age": [0, 52]}}], "together leave no record"),
        ([{"forbid": {}, "order": ["a", "b"]}], "exactly one of"),
    ],
)
def test_malformed_or_unsatisfiable_rules_are_refused_naming_them(rules, message):
    with pytest.raises(SchemaError, match=message):
        schema_with(rules)


def test_violations_find_each_kind_of_broken_row():
    s = schema_with(RULES)
    rows = pd.DataFrame(
        {
            "age": [10.0, 40, 30, 40],
            "weeks": [5.0, 50, 3, 3],
            "income": ["50000+", "- 50000", "- 50000", "- 50000"],
            "major": ["Retail", "Retail", "Public", "Retail"],
            "detailed": ["33", "33", "33", "34"],
        }
    )
    assert violations(s, rows).tolist() == [True, True, True, False]


@pytest.mark.parametrize("mechanism, delta", [("baseline", 0.0), ("mst", 1e-5)])
def test_generation_honours_the_rules(mechanism, delta):
    s = schema_with(RULES).confirmed()
    raw = table()
    mech = build(mechanism, s, epsilon=1.0, delta=delta, noise=Noise.seeded(4), n=len(raw))
    rel = run(mech, TableSource.from_frame(s, raw), 2000)
    assert len(rel.synthetic) == 2000 and not violations(s, rel.synthetic).any()
    if mechanism == "baseline":  # the check can fail: independent columns sampled without the rules break them
        assert violations(s, mech.sample(2000)).mean() > 0.1


def test_the_fidelity_report_counts_rule_violations():
    s = schema_with(RULES).confirmed()
    raw = table(400)
    broken = raw.copy()
    broken.loc[:99, "weeks"] = "52"
    broken.loc[:99, "age"] = "20"
    assert fidelity.report(s, raw, raw, raw)["synthetic"]["rule_violation_rows"] == 0
    assert fidelity.report(s, raw, broken, raw)["synthetic"]["rule_violation_rows"] == pytest.approx(0.25)


def test_a_model_that_cannot_satisfy_the_rules_stops_with_a_message():
    s = schema_with([{"forbid": {"age": [0, 99]}}])
    draw = lambda k: pd.DataFrame(
        {
            "age": np.zeros(k),
            "weeks": np.zeros(k),
            "income": ["- 50000"] * k,  # noqa: E731
            "major": ["None"] * k,
            "detailed": ["0"] * k,
        }
    )
    with pytest.raises(RuntimeError, match="almost no probability"):
        sample_conforming(draw, s, 10)
