"""The file checks see relationships: the worst pairs against their floor, the label relation gap and the
accuracy of models trained on the file turn the headline red with a plain sentence, whatever the 1-way score
(mechanisms.evaluation.fidelity)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.draft import draft_schema
from mechanisms.evaluation import fidelity
from tests.data import labelled_people

REAL = labelled_people(4000, seed=1)
SCHEMA = draft_schema(REAL).confirmed()
REFERENCE, FLOOR = fidelity.split_reference(REAL, 2000, seed=0)


def shuffled_target(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column's shares kept, the label drawn independently of the rest: its relationships are gone."""
    out = frame.copy()
    out["income"] = np.random.default_rng(3).permutation(out["income"].to_numpy())
    return out


def checks(synthetic: pd.DataFrame, ml: dict | None = None) -> tuple[dict, dict]:
    rep = fidelity.report(SCHEMA, REFERENCE, synthetic, FLOOR, target="income")
    return rep, fidelity.quality(rep, ml=ml)


def tstr(synthetic: float, real: float = 0.93) -> dict:
    """The part of the utility report's TSTR section that the headline reads."""
    return {
        "target": "income",
        "primary_metric": "roc_auc",
        "chance": 0.5,
        "mean": {"roc_auc": {"synthetic": synthetic, "real": real}},
    }


def test_a_file_with_the_label_shuffled_is_red_naming_the_label_and_the_pair_it_lost():
    rep, q = checks(shuffled_target(labelled_people(2000, seed=2)))
    assert not q["worst_column_far_off"]  # the 1-way check alone sees nothing wrong
    assert q["far_off"] and len(q["warnings"]) >= 2
    gap = q["label_gap"]
    assert gap["column"] == "education" and gap["far_off"] and gap["synthetic"] >= 3 * gap["floor"]
    assert abs(gap["real_rate"] - gap["synthetic_rate"]) > 0.3  # the doctorates' label share, real against file
    assert "income" in q["worst_pair"]["columns"] and q["worst_pair"]["far_off"]
    assert any(w.startswith("The file loses how income depends on education") for w in q["warnings"])
    assert any("income" in w and "go together" in w for w in q["warnings"])


@pytest.mark.parametrize(
    "synthetic",
    [labelled_people(2000, seed=2), REAL.sample(2000, replace=True, random_state=4).reset_index(drop=True)],
    ids=["a fresh sample of the same population", "rows resampled from the real table"],
)
def test_real_rows_are_not_flagged(synthetic):
    rep, q = checks(synthetic)
    assert not q["far_off"] and q["warnings"] == []
    assert not any(p["far_off"] for p in rep["worst_pairs"])
    assert not any(c["far_off"] for c in rep["label_gap"]["columns"])


def test_models_near_chance_turn_the_headline_red_with_a_plain_sentence():
    _, near = checks(labelled_people(2000, seed=2), ml=tstr(0.54))
    assert near["far_off"] and near["models_near_chance"]
    assert near["warnings"] == [
        "Models trained on this file predict income no better than chance (ROC AUC 0.54, chance 0.50; "
        "trained on real rows: 0.93): do not use it to train models."
    ]
    _, good = checks(labelled_people(2000, seed=2), ml=tstr(0.85))
    assert not good["far_off"] and not good["models_near_chance"] and good["models"]["synthetic"] == 0.85
    _, unpredictable = checks(labelled_people(2000, seed=2), ml=tstr(0.52, real=0.53))  # no model beats chance
    assert not unpredictable["far_off"] and unpredictable["models"]["near_chance"] is False


def test_every_pair_with_the_target_is_checked_on_a_wide_table():
    rng = np.random.default_rng(5)
    wide = pd.DataFrame({f"c{i:02d}": rng.choice(["a", "b", "c"], 400) for i in range(30)})  # 435 pairs
    schema = draft_schema(wide).confirmed()
    reference, floor = fidelity.split_reference(wide, 200, seed=0)
    plain = fidelity.report(schema, reference, floor, floor, seed=1)
    aimed = fidelity.report(schema, reference, floor, floor, seed=1, target="c17")
    assert len(plain["two_way"]["pairs"]) == fidelity.MAX_PAIRS
    with_target = [p for p in aimed["two_way"]["pairs"] if "c17" in p]
    assert len(with_target) == 29 and len(aimed["two_way"]["pairs"]) == fidelity.MAX_PAIRS
    assert [p for p in plain["two_way"]["pairs"] if "c17" in p] != with_target  # the sample alone misses some
    # the sampled pairs stand for those left out: the mean still estimates the mean over all 435 pairs
    assert aimed["synthetic"]["tvd_2way"] == pytest.approx(plain["synthetic"]["tvd_2way"], rel=0.1)


def test_the_label_gap_counts_common_values_only():
    assert fidelity.label_gap_min_rows(200_000) == 100
    assert fidelity.label_gap_min_rows(1000) == 50
    assert fidelity.label_gap_min_rows(200) == 30
    rep, _ = checks(labelled_people(2000, seed=2))
    gap = rep["label_gap"]
    assert gap["class"] == "low" and gap["min_rows"] == 100  # binary: the later class, as TSTR's ROC AUC
    assert {c["column"] for c in gap["columns"]} == {"education", "hours", "region", "age"}


def test_the_readings_name_the_worst_pair_and_the_label_gap():
    rep, q = checks(shuffled_target(labelled_people(2000, seed=2)))
    lines = {r["metric"]: r["reading"] for r in fidelity.readings(rep, q)}
    assert lines["Worst pair 2-way TVD"].startswith("The pair furthest from the real one: education with income")
    assert "(far off)" in lines["Worst pair 2-way TVD"]
    assert "worst education" in lines["Label relation gap"] and "(far off)" in lines["Label relation gap"]


def test_without_a_target_there_is_no_label_gap_and_the_old_keys_stay():
    rep = fidelity.report(SCHEMA, REFERENCE, labelled_people(2000, seed=2), FLOOR)
    q = fidelity.quality(rep)
    assert rep["label_gap"] is None and q["label_gap"] is None and q["models"] is None
    for key in ("score", "column_shapes", "column_pair_trends", "floor_score", "worst_column", "worst_tvd", "far_off"):
        assert key in q
