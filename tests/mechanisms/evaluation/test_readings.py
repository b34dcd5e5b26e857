"""Plain-language readings of the evaluation: TSTR is read against chance, not as a share
of the real models' score."""

from __future__ import annotations

import pytest

from mechanisms.evaluation import readings, utility


def test_an_auc_below_chance_is_called_no_better_than_chance_not_a_share_of_the_baseline():
    text = readings.tstr_reading("roc_auc", 0.38, 0.877, 0.5)
    assert "no better than chance (0.500)" in text
    assert "%" not in text  # the old reading said "43.3% of the real baseline"


def test_an_auc_above_chance_reports_the_share_of_the_real_gain_over_chance():
    # (0.70 - 0.5) / (0.90 - 0.5) = 50%
    text = readings.tstr_reading("roc_auc", 0.70, 0.90, 0.5)
    assert "50.0% of the way from chance (0.500) to the models trained on real data (0.900)" in text


def test_a_broken_reading_that_divides_by_the_real_score_would_be_caught():
    broken = f"{100 * 0.70 / 0.90:.1f}%"  # 77.8%: the share of the raw score, the old reading
    assert broken not in readings.tstr_reading("roc_auc", 0.70, 0.90, 0.5)


def test_chance_of_macro_f1_is_the_uniform_guess():
    # two balanced classes: precision 0.5, recall 0.5 -> F1 0.5 per class
    assert readings.chance_level("macro_f1", [0.5, 0.5]) == pytest.approx(0.5)
    # shares 0.9 / 0.1, K = 2: F1 = 2 p (1/2) / (p + 1/2): 0.9/1.4 and 0.1/0.6
    assert readings.chance_level("macro_f1", [0.9, 0.1]) == pytest.approx((0.9 / 1.4 + 0.1 / 0.6) / 2)
    assert readings.chance_level("roc_auc") == 0.5 and readings.chance_level("macro_f1") is None


# ------------------------------------------------------------------------------------------ quality


def test_quality_is_the_mean_of_column_shapes_and_pair_trends_by_hand():
    cols = [{"tvd": 0.1}, {"tvd": 0.3}]  # shapes: mean(0.9, 0.7) = 0.8
    pairs = [{"tvd": 0.4}]  # trends: 0.6
    q = readings.quality_score(cols, pairs)
    assert q["column_shapes"] == pytest.approx(0.8) and q["column_pair_trends"] == pytest.approx(0.6)
    assert q["score"] == pytest.approx(0.7)
    assert readings.quality_score(cols, [])["score"] == pytest.approx(0.8)  # one column: no pairs


def test_quality_is_one_for_a_copy_and_low_for_an_unrelated_table():
    from tests.mechanisms.evaluation.test_evaluation import SCHEMA, table

    real = table(800, 1)
    same = utility.evaluate(SCHEMA, real, real.copy())
    assert same["quality"]["score"] == pytest.approx(1.0) and same["summary"]["quality"] == pytest.approx(1.0)
    good = utility.evaluate(SCHEMA, real, table(800, 2))["quality"]["score"]
    shifted = utility.evaluate(SCHEMA, real, table(800, 3, shift=4.0))["quality"]["score"]
    assert 0.9 < good < 1.0 and shifted < good - 0.2
    reading = next(r for r in same["readings"] if r["metric"] == "Quality score")["reading"]
    assert reading.startswith("Quality 100.0%")


def test_a_broken_quality_that_averages_tvd_instead_of_its_complement_is_caught():
    cols, pairs = [{"tvd": 0.1}], [{"tvd": 0.2}]
    broken = (0.1 + 0.2) / 2  # the mean TVD itself: 0.15, "lower is better", wrong direction
    assert readings.quality_score(cols, pairs)["score"] != pytest.approx(broken)
    assert readings.quality_score(cols, pairs)["score"] == pytest.approx(0.85)


# ------------------------------------------------------------------------------------------ CLI


def test_cli_evaluate_prints_a_short_summary_by_default_and_json_on_request(tmp_path, capsys):
    import json

    from mechanisms.__main__ import main
    from tests.mechanisms.evaluation.test_evaluation import SCHEMA, table

    (tmp_path / "s.json").write_text(SCHEMA.to_json())
    table(300, 1).to_csv(tmp_path / "r.csv", index=False)
    table(300, 2).to_csv(tmp_path / "y.csv", index=False)
    args = [
        "evaluate",
        "--real",
        str(tmp_path / "r.csv"),
        "--synthetic",
        str(tmp_path / "y.csv"),
        "--schema",
        str(tmp_path / "s.json"),
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("Real rows 300, synthetic rows 300") and "NOT PRIVATE" in lines[0]
    assert lines[2].startswith("Quality score") and "1-way TVD (mean)" in text
    assert len(text) < 4000 and len(lines) < 25  # short: the full JSON is tens of KB
    assert main(args + ["--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["quality"]["score"] == pytest.approx(float(lines[2].split()[2]), abs=1e-4)
