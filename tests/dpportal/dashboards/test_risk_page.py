"""Every figure of the risk report's card comes with a sentence saying what it means: an AUC below 0.5,
an attribute-inference interval such as "14.3% (0.0% to 51.7%)" with what the steward should do, the
time budget and the skipped refits. The card is rendered alone with such figures (no database)."""

from __future__ import annotations

from types import SimpleNamespace

from django.template.loader import render_to_string


def _results(**over) -> dict:
    attack = {"sees": "synthetic rows", "tpr_at_fpr": {"0.01": 0.02, "0.001": 0.0}, "advantage": 0.05}
    r = {
        "status": "done",
        "claimed_epsilon": 1.0,
        "confidence": 0.95,
        "summary": "An attacker who holds one person's full record ...",
        "control_detected": True,
        "control_auc": 1.0,
        "theoretical_advantage": 0.462,
        "epsilon_lower_bound": 0.0,
        "implementation_check_bound": 0.21,
        "implementation_check": {"available": True, "refits": 11, "measure_only_refits": 10},
        "attacks": [
            {**attack, "name": "dcr", "title": "distance to closest record", "auc": 0.42, "epsilon_lower_bound": 0},
            {
                **attack,
                "name": "measurements",
                "title": "noisy measurements",
                "sees": "noisy measurements",
                "auc": 0.55,
                "epsilon_lower_bound": 0.21,
            },
        ],
        "control": [
            {
                **attack,
                "release": "members themselves",
                "title": "distance to closest record",
                "auc": 1.0,
                "epsilon_lower_bound": "inf",
            }
        ],
        "attribute_inference": [
            {
                "secret": "adult_income",
                "attack_rate": 0.3,
                "control_rate": 0.2,
                "baseline_rate": 0.5,
                "risk": 0.143,
                "risk_ci": [0.0, 0.517],
            },
            {
                "secret": "adult_sex",
                "attack_rate": 0.9,
                "control_rate": 0.5,
                "baseline_rate": 0.5,
                "risk": 0.8,
                "risk_ci": [0.6, 0.9],
            },
            {
                "secret": "adult_race",
                "attack_rate": 0.8,
                "control_rate": 0.8,
                "baseline_rate": 0.2,
                "risk": 0.0,
                "risk_ci": [0.0, 0.05],
            },
        ],
        "linkability": {"attack_rate": 0.01, "control_rate": 0.01, "risk": 0.0, "risk_ci": [0.0, 0.004]},
        "singling_out": {
            "queries": 500,
            "attack_rate": 0.1,
            "control_rate": 0.01,
            "risk": 0.09,
            "risk_ci": [0.05, 0.12],
        },
        "runs": 1,
        "rows_used": 10000,
        "rows_total": 15000,
        "reference_rows": 2500,
        "target_pairs": 50,
        "time_budget_seconds": 185.0,
        "skipped_for_time": ["shadow", "noise off"] + ["private"] * 29,
        "seconds": 240.2,
        "time_ratio": 3.9,
    }
    r.update(over)
    return r


def _card(results: dict) -> str:
    release = SimpleNamespace(pk=7, status="done", parent_id=None)
    risk = SimpleNamespace(status="done", guarantee_failed=False, results=results)
    return " ".join(render_to_string("dashboards/_risk.html", {"risk": risk, "release": release}).split())


def test_every_figure_of_the_card_is_explained():
    html = _card(_results())
    # an AUC below 0.5 is read as chance, naming the attack
    assert "distance to closest record's AUC of 0.420 is below 0.5" in html and "no signal of membership" in html
    # the columns of the attacks' table, the control rows and the implementation check's bound
    for words in (
        "<b>ROC AUC</b>: the chance",
        "<b>TPR at FPR 1% / 0.1%</b>",
        "<b>advantage</b>",
        "theoretical limit at this ε is 46.2%",
        "<b>ε lower bound</b>",
        "<b>control</b> rows",
        "its bound, 0.210, is a lower bound",
        "above it, the code spends more than it claims",
    ):
        assert words in html, words
    # attribute inference: what each rate is, and per secret what the interval means for the steward
    assert "risk</b> = (members &minus; control) / (1 &minus; control)" in html
    assert "14.3% (0.0% to 51.7%)" in html
    assert "too few records were attacked to rule out up to 51.7%: the 14.3% estimate alone is not a finding" in html
    assert "Members' adult_sex is guessed more often than other people's" in html
    assert "consider a smaller ε, or coarsening or dropping adult_sex" in html
    assert "No evidence of a risk: at most 5.0% of members' adult_race given away" in html
    # linkability and singling out read the same way
    assert "no evidence that the synthetic table lets anyone join" in html
    assert "rare combinations in the synthetic table point at real members more often" in html
    # the budget, what runs past it, and what skipped refits cost
    assert "time budget was 185 s" in html and "first measure-only refits run even past it" in html
    assert "29 private" in html and "lower bounds, never wrong ones" in html


def test_an_auc_at_or_above_half_gets_no_chance_sentence():
    res = _results()
    res["attacks"][0]["auc"] = 0.5
    html = _card(res)
    assert "is below 0.5" not in html and "<b>ROC AUC</b>" in html
