"""Large public rules are checked in time linear in the schema: set lookups for every listed category,
a cap on the values listed over all rules. The probe that took minutes (two columns of 20,000
categories, 20 forbid rules of 2,000 categories each, about 1.1 MB) is accepted within seconds through
the API, and a schema over the cap is refused naming it."""

from __future__ import annotations

import json
import time

import pytest

from benchmarks.system.rules_check import schema_dict
from mechanisms import rules
from mechanisms.schema import Schema, SchemaError
from tests.personas import make_dataset

BOUND_S = 5.0  # seconds for the whole request on a shared 2-core machine (quadratic checking took > 60 s)


def test_a_large_rule_set_is_checked_with_set_lookups(world):
    d = schema_dict(20_000, 20, 2_000)
    forbidden = {v for r in d["rules"] for v in r["forbid"]["a"]}
    allowed = [c for c in d["columns"][0]["categories"] if c not in forbidden][:50]
    text = "a,b\n" + "".join(f"{c},{c}\n" for c in allowed)
    ds = make_dataset(world.owner, text=text, schema=None, budget=None)
    body = json.dumps({**d, "missing_markers": []})
    assert len(body) > 1_000_000
    t0 = time.perf_counter()
    resp = world.client(None).put(
        f"/api/datasets/{ds.pk}/schema/", body, content_type="application/json", **world.api(world.owner)
    )
    elapsed = time.perf_counter() - t0
    assert resp.status_code == 200, (resp.status_code, resp.content[:300])
    assert elapsed < BOUND_S, f"answered in {elapsed:.1f} s"


def test_rules_listing_more_values_than_the_cap_are_refused_naming_it():
    d = schema_dict(20_000, 30, 4_000)  # 240,000 listed categories
    t0 = time.perf_counter()
    with pytest.raises(SchemaError, match="at most 200,000 are allowed"):
        Schema.from_dict(d)
    assert time.perf_counter() - t0 < BOUND_S


def test_a_non_text_value_for_a_categorical_column_is_named_not_a_crash():
    d = schema_dict(10, 1, 2)
    d["rules"][0]["forbid"]["a"] = [["c1"], {"x": 1}]
    with pytest.raises(SchemaError, match="are not categories of 'a'"):
        Schema.from_dict(d)


def test_the_cap_counts_every_kind():
    assert rules.MAX_TOTAL_RULE_VALUES == 200_000
    rule = rules.Rule.from_dict({"hierarchy": {"child": "a", "parent": "b", "map": {"c1": "c2", "c3": "c4"}}})
    assert rules.rule_size(rule) == 2
