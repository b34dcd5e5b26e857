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
