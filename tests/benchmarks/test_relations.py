"""The relations benchmark's page and its label-pairs experiment (benchmarks/system/relations.py)."""

import json

from benchmarks.system import relations
from mechanisms.synthesizers import aim


def test_label_pairs_workload_is_the_targets_pairs_only_inside_the_block():
    names = ["a", "b", "c", "y"]
    with relations.label_pairs_workload():
        assert aim.workload_cliques(names, "target", "y") == [("a", "y"), ("b", "y"), ("c", "y")]
        assert aim.workload_cliques(names, "all-2way", None) == [
            ("a", "b"),
            ("a", "c"),
            ("a", "y"),
            ("b", "c"),
            ("b", "y"),
            ("c", "y"),
        ]
    assert aim.workload_cliques(names, "target", "y") == [("a", "b", "y"), ("a", "c", "y"), ("b", "c", "y")]


def test_the_page_names_the_key_column_and_shows_each_columns_gap(tmp_path):
    gaps = {"adult_education": 0.01, "adult_sex": 0.02}
    base = {"table": "credit_adult", "rows": 100, "columns": 3, "epsilon": 1.0, "seed": 0}
    rows = [
        {
            **base,
            "run": "floor (real sample A)",
            "label_gap": 0.01,
            "label_gap_columns": gaps,
            "tstr_auc": 0.9,
            "tvd_2way": 0.03,
        },
        {
            **base,
            "run": "recommended:explore:label",
            "mechanism": "aim",
            "params": {},
            "seconds": 1.0,
            "label_gap": 0.02,
            "label_gap_columns": {"adult_education": 0.03, "adult_sex": 0.01},
            "tstr_auc": 0.8,
            "tvd_2way": 0.1,
            "report": {"selected": 4, "label_relation_marginals": 3},
            "started": "2026-01-01 00:00",
        },
    ]
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = relations.write_doc(data, tmp_path / "page.md")
    assert (
        "| aim, recommended for explore with label named as key column | 1.0 | 0.0200 (2.0x) | 0.800 | 0.1000 "
        "| 3 of 4 |" in text
    )
    assert "| real sample (the floor) | 0.010 | 0.020 |" in text
    assert "| aim, recommended for explore with label named as key column | 0.030 | 0.010 |" in text


def test_the_schemas_cells_row_keeps_categories_and_bins_numbers_and_reads_on_the_page(tmp_path):
    import pandas as pd

    from mechanisms.schema import Column, Schema

    schema = Schema(
        columns=(
            Column("adult_sex", "categorical", categories=("F", "M")),
            Column("adult_hours-per-week", "integer", lower=0, upper=99, bins=10, special=(40,)),
        )
    )
    frame = pd.DataFrame({"adult_sex": ["F", "M"] * 50, "adult_hours-per-week": ["40", "23"] * 50})
    out = relations.through_cells(schema, frame)
    assert out["adult_sex"].tolist() == frame["adult_sex"].tolist()  # categories exact
    hours = out["adult_hours-per-week"].astype(int)
    assert (hours[::2] == 40).all()  # a special value exact
    assert hours[1::2].between(20, 29).all() and hours[1::2].nunique() > 1  # inside its bin, spread
    base = {"table": "credit_adult", "rows": 100, "columns": 2, "epsilon": 1.0, "seed": 0}
    base["relation_cells"] = {"adult_hours-per-week": 11}
    gaps = {"adult_sex": 0.01, "adult_hours-per-week": 0.02}
    rows = [
        {
            **base,
            "run": "floor (real sample A)",
            "label_gap": 0.01,
            "label_gap_columns": gaps,
            "tstr_auc": 0.9,
            "tvd_2way": 0.03,
        },
        {
            **base,
            "run": "cells (real sample A through the schema's cells)",
            "label_gap": 0.015,
            "label_gap_columns": {"adult_sex": 0.01, "adult_hours-per-week": 0.03},
        },
        {
            **base,
            "run": "mst",
            "mechanism": "mst",
            "params": {},
            "seconds": 1.0,
            "cpu_seconds": 1.6,
            "estimate_seconds": 0.8,
            "label_gap": 0.05,
            "label_gap_columns": gaps,
            "tstr_auc": 0.8,
            "tvd_2way": 0.1,
            "started": "2026-01-01 00:00",
        },
    ]
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = relations.write_doc(data, tmp_path / "page.md")
    assert "| real sample through the schema's cells (no noise) | - | 0.0150 (1.5x) | | | |" in text
    assert "| real sample through the schema's cells (no noise) | 0.010 | 0.030 |" in text
    assert "Cells of the drafted schema: hours-per-week 11." in text
    assert "| mst | 1.0 (CPU 2, estimated 1) | 0.0500 (5.0x) |" in text


def test_one_noisy_pair_costs_the_label_gap_its_noise_and_cells_say(monkeypatch):
    import numpy as np
    import pandas as pd

    from mechanisms.schema import Column, Schema

    monkeypatch.setattr(relations, "RELATION_COLUMNS", ("sex", "hours"))
    monkeypatch.setattr(relations, "MIN_ROWS", 10)
    schema = Schema(
        columns=(
            Column("sex", "categorical", categories=("F", "M")),
            Column("hours", "integer", lower=0, upper=99, bins=10),
            Column("income", "categorical", categories=("<=50K", ">50K")),
        )
    )
    rng = np.random.default_rng(0)

    def frame(n):
        sex = rng.choice(["F", "M"], n)
        hours = rng.choice([20, 25, 40, 45], n)
        rich = rng.random(n) < np.where(sex == "M", 0.4, 0.1) + (hours == 25) * 0.4
        return pd.DataFrame({"sex": sex, "hours": hours.astype(str), "income": np.where(rich, ">50K", "<=50K")})

    a, b = frame(4000), frame(4000)
    floor = relations.label_gap(b, a, prefix="")[1]
    exact = relations.pair_noise_gap(schema, a, b, "", sigma=0.0)
    assert exact["sex"] == round(floor["sex"], 4)  # a category is its own cell: sampling error only
    assert exact["hours"] > floor["hours"] + 0.05  # 20 and 25 share a bin: their P is averaged
    noisy = relations.pair_noise_gap(schema, a, b, "", sigma=200.0)
    assert noisy["sex"] > exact["sex"] + 0.02 and noisy["hours"] > exact["hours"]
