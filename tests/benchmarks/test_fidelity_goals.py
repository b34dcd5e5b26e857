"""The fidelity benchmark's goal checks (benchmarks/harness/fidelity.py): the census-like hierarchies are true of
the real rows and declared as valid schema rules; values outside the real range and the 99th-percentile ratio are
counted as stated. No release is run here; samples/ only."""

from __future__ import annotations

import numpy as np

from benchmarks.harness import fidelity as bench
from mechanisms.draft import draft_schema
from mechanisms.rules import violations
from mechanisms.source import read_raw_csv
from tests.samples import SAMPLES


def _adult_with_groups():
    raw = read_raw_csv(SAMPLES / "adult.csv")
    for child, parent, mapping in bench.HIERARCHIES:
        child = child.removeprefix("adult_")
        raw[parent.removeprefix("adult_")] = raw[child].map(mapping).fillna(raw[child])
    return raw.add_prefix("adult_")


def test_the_declared_hierarchies_hold_on_the_real_rows_and_a_wrong_map_is_caught():
    raw = _adult_with_groups()
    schema = bench.with_rules(draft_schema(raw).confirmed())
    assert [r.kind for r in schema.rules] == ["hierarchy", "hierarchy"]
    assert not violations(schema, schema.prepare(raw)).any()
    wrong = raw.copy()
    wrong.loc[wrong["adult_occupation"] == "Sales", "adult_occupation_group"] = "Blue-collar"
    assert violations(schema, schema.prepare(wrong)).mean() > 0.05


def test_range_checks_count_rows_outside_the_real_range_and_the_worst_p99_ratio():
    raw = read_raw_csv(SAMPLES / "adult.csv")
    schema = draft_schema(raw).confirmed()
    assert bench.range_checks(schema, raw, raw) == {
        "outside_rows": 0.0,
        "p99_ratio_worst": 1.0,
        "p99_worst": bench.range_checks(schema, raw, raw)["p99_worst"],
    }
    synthetic = raw.copy()
    ages = raw["age"].astype(float)
    synthetic.loc[:9, "age"] = str(int(ages.max()) + 5)  # 10 rows older than anyone real
    gain = raw["capital-gain"].astype(float)
    synthetic["capital-gain"] = (gain * 3).astype(int).astype(str)  # every value tripled
    out = bench.range_checks(schema, raw, synthetic)
    assert out["outside_rows"] >= 10 / len(raw)
    assert np.isclose(out["p99_ratio_worst"], 3.0) and out["p99_worst"]["column"] == "capital-gain"
