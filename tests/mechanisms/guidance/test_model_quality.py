"""Model accuracy for "train a model": measured reference figures from the recorded benchmarks, labelled as
such; chance for a mechanism that keeps no relation between columns; never read from the data."""

from __future__ import annotations

from pathlib import Path

from benchmarks.calibration import tstr_reference
from mechanisms.guidance import model_quality as mq
from mechanisms.guidance import recommend as rec
from mechanisms.schema import Schema

ROOT = Path(__file__).resolve().parents[3]
ADULT = Schema.from_json((ROOT / "benchmarks" / "schemas" / "adult.json").read_text())


def test_the_library_table_is_the_one_computed_from_the_recorded_benchmark_runs():
    assert mq.measured() == tstr_reference.measured()


def test_every_ml_row_carries_a_model_accuracy_reference_beside_the_predicted_error():
    r = rec.recommend(ADULT, n=32_561, epsilon=0.9, delta=1e-6, purpose=rec.Purpose("ml", target="income"))
    aim = r.get("aim").model_quality
    assert aim["variant"] == "aim:target" and aim["kind"] == "measured" and aim["epsilon"] == 1.0
    assert aim["tables"]["adult"] == {"tstr_auc": 0.833, "real_auc": 0.85}
    assert aim["text"] == "measured 0.51-0.83 on 3 benchmark tables at ε 1 (real data: 0.78-0.85; chance 0.5)"
    baseline = r.get("baseline").model_quality
    assert baseline["kind"] == "chance" and baseline["predicted"] == 0.5
    assert baseline["text"].startswith("about 0.5 (chance)")
    assert "not predicted for this table" in r.model_note and "income" in r.model_note
    assert "not a two-class column" not in r.model_note  # income has two categories
    as_json = r.to_dict()
    assert as_json["model_quality_note"] == r.model_note
    assert as_json["mechanisms"][0]["model_quality"]["text"]


def test_the_nearest_recorded_epsilon_is_taken_on_a_log_scale_and_missing_figures_say_so():
    assert mq.nearest_epsilon("mst", 0.3) == 0.1 and mq.nearest_epsilon("mst", 0.4) == 1.0
    assert mq.nearest_epsilon("aim:target", 50) == 1.0  # the largest recorded for it
    assert mq.reference("pmse", {}, 1.0)["text"] == "not measured on the benchmark tables"


def test_other_purposes_carry_no_model_accuracy():
    r = rec.recommend(ADULT, n=32_561, epsilon=1.0)
    assert r.model_note is None and all(p.model_quality is None for p in r.items)


def test_the_cli_summary_lists_the_measured_model_accuracy_under_its_note():
    r = rec.recommend(ADULT, n=32_561, epsilon=1.0, delta=1e-6, purpose=rec.Purpose("ml", target="income"))
    text = rec.summary_text(r)
    assert r.model_note in text
    assert "  aim              model accuracy (ROC AUC): measured 0.51-0.83 on 3 benchmark tables at ε 1" in text
    assert "model accuracy" not in rec.summary_text(rec.recommend(ADULT, n=32_561, epsilon=1.0))
