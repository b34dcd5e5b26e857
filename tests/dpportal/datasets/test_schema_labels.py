"""The schema page keeps labels verbatim: a missing marker suggested as a category is pointed out, and
grouping rare categories never merges them into the missing category."""

from __future__ import annotations

import pandas as pd

from dpportal.datasets import services
from mechanisms.schema import MISSING_CATEGORY, Schema

from tests.personas import make_dataset

CENSUS = (
    "hispanic_origin,state_prev\n"
    + "".join(
        f"{'NA' if i % 5 == 0 else 'Mexican' if i % 2 else 'All other'},{'?' if i % 4 == 0 else 'Utah'}\n"
        for i in range(200)
    )
    + "Cuban,Wyoming\n"
)


def test_the_page_points_out_a_marker_suggested_as_a_category(world):
    d = make_dataset(world.owner, text=CENSUS, schema=None, budget=None)
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert "“NA”: a missing marker kept as a category of this column (suggested)" in page
    assert page.count("a missing marker kept as a category") == 1  # not on state_prev, whose "?" is missing


def test_grouping_rare_categories_never_merges_them_into_the_missing_category():
    cats = ["Ohio", "Utah", "Wyoming", MISSING_CATEGORY]
    rows = [
        {
            "i": 0,
            "name": "state_prev",
            "cur": {"kind": "categorical", "categories": cats, "other": MISSING_CATEGORY},
            "rare": ["Wyoming"],
            "ok": True,
        }
    ]
    services.apply_bulk(rows, {"bulk": "group_rare"})
    cur = rows[0]["cur"]
    assert cur["other"] == "(other)" and cur["categories"] == ["Ohio", "Utah", MISSING_CATEGORY, "(other)"]
    col = services.column_from_form("state_prev", {**cur, "categories": "\n".join(cur["categories"])})
    raw = pd.DataFrame({"state_prev": ["?"] * 74 + ["Wyoming"] * 3 + ["Ohio"] * 10})
    prepared = Schema(columns=(col,)).prepare(raw)["state_prev"]
    assert (prepared == MISSING_CATEGORY).sum() == 74 and (prepared == "(other)").sum() == 3
