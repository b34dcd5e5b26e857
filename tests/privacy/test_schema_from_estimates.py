"""The schema page's "use the private estimates": the schema it produces is a function of the DP output
(bounds estimate, category discovery) alone. Two neighbouring tables that differ in one record, whose
missingness and minimum differ, give drafts that differ (the draft is not private), yet the same DP
output applied on top of either draft gives the same schema, and the same seed for the DP step on the
two tables gives the same schema. A variant that keeps the draft's "other" category and fill value is
caught by the same checks."""

from __future__ import annotations

import pandas as pd
import pytest

from dpportal.datasets import services
from mechanisms import bounds, categories
from mechanisms.draft import draft_schema
from mechanisms.noise import Noise

MARKERS = ("", "?", "NA")
N = 600


def table(first: tuple[str, str, str]) -> pd.DataFrame:
    """N rows; the first record is ``first`` (job, age, income), the rest public-looking filler."""
    jobs = ["clerk" if i % 3 else "nurse" for i in range(N)]
    ages = [str(20 + (i * 7) % 50) for i in range(N)]
    incomes = [str(0 if i % 4 == 0 else 1000 + (i * 37) % 90_000) for i in range(N)]
    jobs[0], ages[0], incomes[0] = first
    return pd.DataFrame({"job": jobs, "age": ages, "income": incomes})


D = table(("?", "3", "?"))  # a missing job, the youngest age, a missing income
D_PRIME = table(("clerk", "40", "100"))  # the same record replaced: nothing missing, a usual age


def dp_output(frame: pd.DataFrame, seed: int) -> tuple[dict, dict]:
    """The estimate the schema page reads (dp_bounds.latest_bounds / latest_categories), seeded."""
    noise = Noise.seeded(seed)
    b = bounds.estimate_bounds([frame], ["age", "income"], epsilon=1.0, noise=noise, markers=MARKERS, n=len(frame))
    c = categories.discover_categories(  # as the bounds job calls it: the marker labels from the noisy counts
        [frame], ["job"], epsilon=1.0, delta=1e-6, noise=noise, markers=MARKERS, labels="auto"
    )
    return b["columns"], c["columns"]


def rows_from_draft(frame: pd.DataFrame) -> list[dict]:
    """The schema page's working values before any edit: the draft's suggestions (views._column_rows)."""
    draft = draft_schema(frame, missing_markers=MARKERS)
    rows = []
    for i, col in enumerate(draft.columns):
        cur = col.to_dict()
        cur["special"] = services.special_text(cur.get("special", ()))
        rows.append({"i": i, "name": col.name, "cur": cur, "suggested": col.to_dict(), "ok": False, "rare": []})
    return rows


def confirmed(frame: pd.DataFrame, dp: tuple[dict, dict]) -> dict:
    """The schema confirmed right after "use the private estimates" (the page posts its values back)."""
    rows = rows_from_draft(frame)
    services.apply_bulk(rows, {"bulk": "use_dp"}, dp_bounds=dp[0], dp_categories=dp[1])
    assert all(r["ok"] for r in rows), "every estimated column counts as reviewed"
    form = lambda cur: {  # noqa: E731  (what the page's inputs post: text)
        k: "\n".join(v) if isinstance(v, list) else "" if v is None else str(v) for k, v in cur.items()
    }
    return {r["name"]: services.column_from_form(r["name"], form(r["cur"])).to_dict() for r in rows}


def audit() -> None:
    """Raises AssertionError when the confirmed schema depends on anything but the DP output."""
    assert rows_from_draft(D) != rows_from_draft(D_PRIME), "the drafts differ: the neighbours test something"
    dp = dp_output(D, seed=3)
    assert confirmed(D, dp) == confirmed(D_PRIME, dp), "same DP output, different drafts: different schema"
    dp_prime = dp_output(D_PRIME, seed=3)
    released = lambda d: (  # noqa: E731  (what the schema can take: thresholded edges and labels)
        {k: (v["lower"], v["upper"]) for k, v in d[0].items()},
        {k: (v["categories"], v["missing"]) for k, v in d[1].items()},
    )
    assert released(dp) == released(dp_prime)  # same seed: a one-record difference stays under the thresholds
    assert confirmed(D, dp) == confirmed(D_PRIME, dp_prime)


def test_the_schema_from_private_estimates_is_a_function_of_the_dp_output_only():
    audit()
    schema = confirmed(D, dp_output(D, seed=3))
    assert schema["job"]["other"] == categories.OTHER_CATEGORY and "(missing)" not in schema["job"]["categories"]
    assert schema["age"]["fill"] == schema["age"]["lower"] and schema["income"]["fill"] == schema["income"]["lower"]


def _draft_keeping_use_dp(rows: list[dict], dp_bounds: dict, dp_categories: dict | None = None) -> str:
    """A broken variant: bounds and categories from the DP output, "other" and the fill from the draft."""
    for r in rows:
        found = (dp_categories or {}).get(r["name"])
        if r["cur"].get("kind") == "categorical" and found:
            other = r["cur"].get("other") or categories.OTHER_CATEGORY
            r["cur"] = {**r["cur"], "categories": [*found["categories"], other], "other": other}
            r["ok"] = True
        b = dp_bounds.get(r["name"])
        if r["cur"].get("kind") in ("continuous", "integer") and b and b.get("lower") is not None:
            r["cur"] = {**r["cur"], "lower": b["lower"], "upper": b["upper"]}
            r["ok"] = True
    return "used"


def test_a_variant_that_keeps_draft_values_is_caught(monkeypatch):
    monkeypatch.setattr(services, "_use_dp_bounds", _draft_keeping_use_dp)
    with pytest.raises(AssertionError, match="different drafts"):
        audit()
