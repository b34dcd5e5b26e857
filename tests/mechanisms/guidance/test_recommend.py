"""Recommendation engine: public inputs only, would-fail rules, ranking, curve, bisection, CLI."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mechanisms import registry
from mechanisms.guidance import predictors
from mechanisms.guidance import recommend as rec
from mechanisms.schema import Column, Schema
from mechanisms.synthesizers.aim import guide as aim_guide

ROOT = Path(__file__).resolve().parents[3]
ADULT = Schema.from_json((ROOT / "benchmarks" / "schemas" / "adult.json").read_text())
ADULT_N = 32_561


def wide_schema(d: int = 40) -> Schema:
    cols = [Column(f"x{j}", "integer", lower=0, upper=100, bins=10) for j in range(d // 2)]
    cols += [Column(f"c{j}", "categorical", categories=("a", "b", "c", "d")) for j in range(d - d // 2)]
    return Schema(columns=tuple(cols))


def narrow_schema() -> Schema:
    return Schema(
        columns=(
            Column("x", "continuous", lower=0, upper=1, bins=4),
            Column("y", "continuous", lower=0, upper=1, bins=4),
        )
    )


def test_a_wide_table_gets_the_baseline_at_epsilon_1_and_the_joint_domain_mechanisms_last():
    r = rec.recommend(wide_schema(), n=20_000, epsilon=1.0, purpose=rec.Purpose("explore"))
    assert r.recommended == "baseline"
    statuses = [p.status for p in r.items]
    assert statuses[0] == "recommended"
    failing = [p for p in r.items if p.status == "would-fail"]
    assert {p.mechanism for p in failing} >= {"kdtree-grid", "kdtree-adaptive", "privhp"}
    assert all("near-uniform" in p.reason and "docs/benchmarks.md" in p.reason for p in failing)
    # would-fail and unavailable come after every usable mechanism
    usable = [i for i, p in enumerate(r.items) if p.status in ("recommended", "ok")]
    unusable = [i for i, p in enumerate(r.items) if p.status in ("would-fail", "unavailable")]
    assert max(usable) < min(unusable)


def test_density_lp_overtakes_the_baseline_at_large_epsilon_on_adult():
    """The measured crossing on adult (docs/benchmarks.md): baseline best at 1, density-lp at 10."""
    at1 = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0)
    at10 = rec.recommend(ADULT, n=ADULT_N, epsilon=10.0)
    assert at1.recommended == "baseline" and at10.recommended == "density-lp"
    assert "lowest predicted 2-way error" in at10.reason


def test_model_training_marks_the_independent_baseline_as_failing_and_needs_delta_for_dpmerf():
    purpose = rec.Purpose("ml", target="income")
    without_delta = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, purpose=purpose)
    assert without_delta.get("baseline").status == "would-fail"
    assert "independently" in without_delta.get("baseline").reason
    assert without_delta.get("dpmerf").status == "unavailable"
    with_delta = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=purpose)
    # AIM with the target workload (measured TSTR 0.832 on adult at epsilon 1, DP-MERF 0.797)
    assert with_delta.recommended == "aim" and with_delta.get("aim").params == {"workload": "target"}
    assert "contain income" in with_delta.reason
    without_aim = rec.recommend(
        ADULT,
        n=ADULT_N,
        epsilon=1.0,
        delta=1e-5,
        purpose=purpose,
        mechanisms=[m for m in rec.registry.names() if m != "aim"],
    )
    assert without_aim.recommended == "dpmerf" and "columns given income" in without_aim.reason


def test_pmse_would_fail_beyond_three_numeric_columns_and_is_unmodelled_below():
    four = Schema(columns=tuple(Column(f"x{j}", "continuous", lower=0, upper=1) for j in range(4)))
    assert rec.recommend(four, n=1000, epsilon=1.0).get("pmse").status == "would-fail"
    two = rec.recommend(narrow_schema(), n=1000, epsilon=1.0).get("pmse")
    assert two.status == "ok" and two.score is None and "no accuracy model" in two.modelled


def test_a_small_joint_domain_is_modelled_not_refused():
    p = rec.recommend(narrow_schema(), n=10_000, epsilon=1.0).get("kdtree-grid")
    assert p.status in ("ok", "recommended") and p.score is not None and p.score < 0.2


def test_larger_than_memory_leaves_only_streaming_mechanisms():
    r = rec.recommend(narrow_schema(), n=10_000, epsilon=1.0, purpose=rec.Purpose(larger_than_memory=True))
    assert r.recommended == "privhp"
    assert r.get("baseline").status == "unavailable" and "larger than memory" in r.get("baseline").reason


def test_named_pairs_change_the_metric_to_those_pairs():
    all_pairs = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0)
    named = rec.recommend(
        ADULT, n=ADULT_N, epsilon=1.0, purpose=rec.Purpose.parse("marginals", pairs="age:income, sex:income")
    )
    assert named.metric == "mean 2-way TVD over the named pairs"
    assert named.get("density-lp").score != all_pairs.get("density-lp").score


@pytest.mark.parametrize(
    "kind, kw, message",
    [
        ("ml", {}, "needs a target column"),
        ("ml", {"target": "nope"}, "target must name a kept column"),
        ("marginals", {"pairs": "age"}, "column:column"),
        ("marginals", {"pairs": "age:nope"}, "'nope' is not a kept column"),
        ("marginals", {"pairs": "age:age"}, "two different columns"),
        ("sell", {}, "purpose must be one of"),
        ("explore", {"key_columns": "income, nope"}, "key_columns must name kept columns of the schema, got 'nope'"),
        ("explore", {"key_columns": "income,sex,age,race"}, "key_columns may name at most 3 columns, got 4"),
        ("explore", {"key_columns": "income, income"}, "key_columns name the column 'income' twice"),
        ("ml", {"target": "income", "key_columns": "sex"}, "key_columns belong to purpose 'explore', got purpose='ml'"),
    ],
)
def test_bad_purposes_are_named(kind, kw, message):
    with pytest.raises(ValueError, match=message):
        rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, purpose=rec.Purpose.parse(kind, **kw))


def test_explore_with_key_columns_ranks_on_their_pairs_and_predicts_mst_measuring_them():
    keyed = rec.recommend(
        ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=rec.Purpose.parse("explore", key_columns="income")
    )
    income_pairs = ", ".join(f"{c}:income" for c in ADULT.names if c != "income")
    same_pairs = rec.recommend(
        ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=rec.Purpose.parse("marginals", pairs=income_pairs)
    )
    assert keyed.metric == "mean 2-way TVD of income with every other column"
    assert "over the pairs with income" in keyed.reason
    for p in keyed.items:  # ranked on the key pairs: every mechanism but MST scores as on those pairs named
        if p.mechanism != "mst" and p.score is not None:
            assert p.score == same_pairs.get(p.mechanism).score, p.mechanism
    mst = keyed.get("mst")
    assert mst.params == {"key_columns": "income"} and mst.score != same_pairs.get("mst").score
    assert rec.summary_text(keyed).count("key_columns=income") == 1
    assert keyed.to_dict()["key_columns"] == ["income"]
    plain = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5)
    assert plain.get("mst").params == {} and plain.metric == "mean 2-way TVD over all pairs"


def test_a_recommended_mst_names_the_key_columns_it_measures():
    purpose = rec.Purpose.parse("explore", key_columns=["sex", "income"])
    r = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=purpose, mechanisms=["mst", "baseline"])
    assert r.recommended == "mst"
    assert r.reason.endswith("It is set to measure every pair with sex and income (key_columns=sex,income).")
    assert purpose.describe() == "explore the whole table, cross-tabulated by sex and income first"


def test_explicit_key_columns_override_the_purposes_in_a_prediction():
    setting = rec.Setting(ADULT, ADULT_N, 1.0, 1e-5)
    purpose = rec.Purpose.parse("explore", key_columns="income")
    same_pairs = rec.Purpose(
        "marginals", pairs=tuple((c, "income") for c in ADULT.names if c != "income")
    )  # the key pairs, named
    assert rec.predict("mst", setting, purpose).params == {"key_columns": "income"}
    cleared = rec.predict("mst", setting, purpose, {"key_columns": ""})  # the steward emptied the field
    assert cleared.params == {} and cleared.score == rec.predict("mst", setting, same_pairs).score


def test_the_key_column_limit_is_msts():
    from mechanisms.guidance.purposes import MAX_KEY_COLUMNS
    from mechanisms.synthesizers import mst

    assert MAX_KEY_COLUMNS == mst.MAX_KEY_COLUMNS


def test_cli_takes_key_columns(capsys):
    from mechanisms.__main__ import main

    schema = str(ROOT / "benchmarks" / "schemas" / "adult.json")
    args = ["recommend", "--schema", schema, "--rows", str(ADULT_N), "--epsilon", "1", "--delta", "1e-5"]
    assert main([*args, "--key-columns", "income,sex", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["key_columns"] == ["income", "sex"]
    assert next(m for m in data["mechanisms"] if m["mechanism"] == "mst")["params"] == {"key_columns": "income,sex"}
    assert main([*args, "--key-columns", "income,nope"]) == 2
    assert "key_columns must name kept columns of the schema, got 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"n": 0}, "rows must be a positive integer"),
        ({"epsilon": -1.0}, "epsilon must be positive"),
        ({"epsilon": math.inf}, "epsilon must be positive"),
        ({"delta": 1.5}, "delta must be in"),
    ],
)
def test_bad_settings_are_named(kw, message):
    args = {"n": 100, "epsilon": 1.0, "delta": 0.0, **kw}
    with pytest.raises(ValueError, match=message):
        rec.recommend(ADULT, **args)


def test_the_baseline_prediction_follows_its_noise_scale():
    """With noise dominating, the 1-way prediction is sum over cells of b / (2n), b = 2d/epsilon."""
    s = Schema(columns=tuple(Column(f"c{j}", "categorical", categories=("a", "b")) for j in range(4)))
    p = rec.predict("baseline", rec.Setting(s, 100_000, 0.01), rec.Purpose())
    raw = predictors.noise_tvd(2, 2 * 4 / 0.01, 100_000)  # 0.04
    assert p.tvd_1way == pytest.approx(predictors.soft_cap(raw, predictors.SATURATION_1WAY), rel=0.01)
    doubled = rec.predict("baseline", rec.Setting(s, 100_000, 0.005), rec.Purpose())
    assert doubled.tvd_1way > 1.8 * p.tvd_1way  # half the epsilon, about twice the error


def test_the_curve_decreases_with_epsilon_and_bisection_finds_the_crossing():
    purpose = rec.Purpose()
    curve = rec.accuracy_curve("density-lp", ADULT, n=ADULT_N, purpose=purpose)
    scores = [pt["score"] for pt in curve]
    assert all(a >= b for a, b in zip(scores, scores[1:]))
    eps = rec.smallest_epsilon("density-lp", ADULT, n=ADULT_N, target=0.1, purpose=purpose)
    assert eps is not None
    at = rec.predict("density-lp", rec.Setting(ADULT, ADULT_N, eps), purpose).score
    below = rec.predict("density-lp", rec.Setting(ADULT, ADULT_N, eps / 1.03), purpose).score
    assert at <= 0.1 < below
    assert rec.smallest_epsilon("baseline", ADULT, n=ADULT_N, target=0.05) is None  # below its independence floor


def test_a_mechanism_without_an_accuracy_model_gets_no_numeric_prediction(monkeypatch):
    monkeypatch.setattr(registry.get("density-lp"), "predict_accuracy", staticmethod(lambda setting, params: None))
    p = rec.predict("density-lp", rec.Setting(ADULT, ADULT_N, 1.0), rec.Purpose())
    assert p.status == "ok" and p.score is None and p.modelled == rec.UNKNOWN_NOTE


def test_every_supporting_mechanism_is_predicted():
    r = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-6)
    assert {p.mechanism for p in r.items} == set(rec.registry.supporting(ADULT))
    assert json.loads(json.dumps(r.to_dict()))["public_inputs_only"] is True


def test_the_recommendation_takes_no_data():
    """Only the schema, n, epsilon, delta and purpose enter: the signature has no place for a table."""
    import inspect

    assert set(inspect.signature(rec.recommend).parameters) == {
        "schema",
        "n",
        "epsilon",
        "delta",
        "purpose",
        "mechanisms",
        "variants",
    }
    assert set(inspect.signature(rec.accuracy_curve).parameters) == {
        "name",
        "schema",
        "n",
        "delta",
        "purpose",
        "epsilons",
    }


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mechanisms", "recommend", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_cli_prints_a_human_summary_and_json():
    schema = str(ROOT / "benchmarks" / "schemas" / "adult.json")
    out = _cli("--schema", schema, "--rows", str(ADULT_N), "--epsilon", "10", "--target-error", "0.1")
    assert out.returncode == 0, out.stderr
    assert "Recommended: density-lp." in out.stdout and "would-fail" in out.stdout
    assert "Smallest epsilon for density-lp within 10.0%:" in out.stdout
    js = _cli(
        "--schema",
        schema,
        "--rows",
        str(ADULT_N),
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--purpose",
        "ml",
        "--target",
        "income",
        "--json",
    )
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert data["recommended"] == "aim" and data["purpose"] == "ml" and data["target"] == "income"


def test_cli_errors_are_one_line():
    schema = str(ROOT / "benchmarks" / "schemas" / "adult.json")
    out = _cli("--schema", schema, "--rows", "100", "--epsilon", "nan")
    assert out.returncode == 2 and out.stderr.strip() == "error: epsilon: expected a finite number, got 'nan'"
    out = _cli("--schema", schema, "--rows", "100", "--epsilon", "1", "--purpose", "ml")
    assert out.returncode == 2 and "needs a target column" in out.stderr


def test_a_near_tie_goes_to_the_faster_mechanism():
    """Predictions within TIE_MARGIN are a tie (they are approximate): the faster mechanism wins it."""

    def pred(name, score):
        return rec.Prediction(name, name, "ok", score=score)

    slow, fast = pred("dpmerf", 0.200), pred("baseline", 0.205)
    assert rec._break_tie([slow, fast], slow) is fast
    far = pred("baseline", 0.200 * (1 + rec.TIE_MARGIN) + 0.001)
    assert rec._break_tie([slow, far], slow) is slow
    conditional = rec.Prediction("dpmerf", "dpmerf", "ok", score=0.2, label_conditional=True)
    assert rec._break_tie([conditional, fast], conditional) is conditional  # ml preference is kept


def test_the_tie_rule_reads_in_the_reason():
    r = rec.recommend(
        wide_schema(),
        n=1_000,
        epsilon=1.0,
        delta=1e-6,
        mechanisms=("baseline", "dpmerf"),
        purpose=rec.Purpose.parse("marginals", pairs="x0:c0, x1:c1"),
        variants=False,
    )
    assert r.get("dpmerf").score < r.get("baseline").score <= r.get("dpmerf").score * (1 + rec.TIE_MARGIN)
    assert r.recommended == "baseline" and "and is faster" in r.reason and r.items[0].mechanism == "baseline"


def test_every_parameter_of_every_mechanism_has_steward_help():
    assert {"aim", "mst", "dpmerf"} <= set(registry.names())
    for name in registry.names():
        for spec in registry.get(name).params:
            text = registry.get(name).help(spec.name)
            assert len(text) > 30, (name, spec.name)
        described = registry.get(name).describe()["params"]
        assert all(p["steward_help"] for p in described), name


def test_a_gaussian_mode_is_predicted_and_preferred_when_a_delta_is_accepted(monkeypatch):
    """Finding 2 of docs/benchmarks.md: zCDP composition over d marginals beats basic composition.
    A mechanism offering a 'gaussian' choice gets it recommended when delta > 0 and it predicts better."""
    from mechanisms.base import ParamSpec
    from mechanisms.synthesizers.baseline import Baseline

    setting = rec.Setting(ADULT, ADULT_N, 0.1, 1e-5)
    laplace = rec.predict("baseline", setting, rec.Purpose())
    gaussian = rec.predict("baseline", setting, rec.Purpose(), {"noise": "gaussian"})
    assert gaussian.tvd_1way < 0.8 * laplace.tvd_1way and "Gaussian" in gaussian.modelled
    monkeypatch.setattr(
        Baseline, "params", (ParamSpec("noise", "choice", "laplace", "noise", choices=("laplace", "gaussian")),)
    )
    with_delta = rec.recommend(ADULT, n=ADULT_N, epsilon=0.1, delta=1e-5).get("baseline")
    assert with_delta.params == {"noise": "gaussian"} and with_delta.score == gaussian.score
    assert rec.recommend(ADULT, n=ADULT_N, epsilon=0.1).get("baseline").params == {}  # pure: no delta


def test_mst_and_aim_predictions_follow_their_small_signal_rules():
    """dpportal's MST measures no tree and AIM runs fewer rounds when n is small for the budget
    (mechanisms.synthesizers.mst.tree_is_informative, mechanisms.synthesizers.aim.default_rounds): the
    predictions say so."""
    german = Schema.from_json((ROOT / "benchmarks" / "schemas" / "german_credit.json").read_text())
    small = rec.Setting(german, 800, 0.1, 1e-5)
    mst = registry.get("mst").predict_accuracy(small, {})
    gauss = predictors.predict_independent_histograms(small, {"noise_type": "gaussian"})
    assert "1-way marginals only" in mst.modelled and mst.one_way == gauss.one_way
    tree = registry.get("mst").predict_accuracy(small, {"tree": "always"})  # the paper's split: pairs measured
    assert "tree pair" in tree.modelled
    rich = registry.get("mst").predict_accuracy(rec.Setting(ADULT, ADULT_N, 1.0, 1e-5), {})
    assert "tree pair" in rich.modelled
    aim = registry.get("aim").predict_accuracy(small, {})
    paper = registry.get("aim").predict_accuracy(small, {"max_rounds": 16 * len(german.kept)})
    assert "(21 rounds)" in aim.modelled and "(336 rounds)" in paper.modelled
    sigma = lambda e: float(re.search(r"sigma = ([\d.e+]+)", e.modelled).group(1))  # noqa: E731
    assert sigma(aim) * 3.9 < sigma(paper)  # sqrt(336 / 21) = 4: each measurement far less noisy


def test_a_plan_the_mechanism_would_refuse_is_predicted_unavailable_with_its_message():
    """AIM's model-size and candidate limits (its check_plan, public inputs) are part of the prediction."""
    cats = tuple(f"v{i}" for i in range(100))
    wide = Schema(columns=tuple(Column(f"col{i}", "categorical", categories=cats) for i in range(40)))
    setting = rec.Setting(wide, 10_000, 1.0, 1e-5)
    refused = rec.predict("aim", setting, rec.Purpose(), {"workload": "all-3way"})
    assert refused.status == "unavailable" and "above the limits" in refused.reason and "col0" in refused.reason
    assert rec.predict("aim", setting, rec.Purpose()).status in ("ok", "would-fail")  # all-2way fits
    many = tuple(f"v{i}" for i in range(10_000))
    huge = Schema(columns=tuple(Column(f"col{i}", "categorical", categories=many) for i in range(20)))
    tiny = rec.predict("aim", rec.Setting(huge, 10_000, 1.0, 1e-5), rec.Purpose(), {"max_model_size": 1})
    assert tiny.status == "unavailable" and "max_model_size=1" in tiny.reason


def _mean_two_way(errors: "rec.Errors", d: int) -> float:
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    return sum(errors.two_way(i, j) for i, j in pairs) / len(pairs)


def test_density_lp_is_floored_by_its_product_reference_only_where_its_noise_swamps_the_tables():
    """density-lp reweights points drawn from its reference measure (the product of noisy 1-way marginals
    on wide tables): at german_credit's n and epsilon 0.1 the LP's noise is many times the records, and the
    prediction is the reference's (measured 2-way 0.55 in the Gaussian mode); at epsilon 10 on adult the
    LP's tables are informative and it is predicted to correct the reference (measured 0.059 vs the
    baseline's 0.074). A floor applied everywhere (the broken variant) loses the second."""
    german = Schema.from_json((ROOT / "benchmarks" / "schemas" / "german_credit.json").read_text())
    swamped = rec.Setting(german, 800, 0.1, 1e-5)
    lp = registry.get("density-lp").predict_accuracy(swamped, {"noise_type": "gaussian"})
    assert "floored by its product reference" in lp.modelled
    assert _mean_two_way(lp, len(german.kept)) > 0.42  # the reference's level (0.45), not the LP link's 0.3
    rich = rec.Setting(ADULT, ADULT_N, 10.0, 0.0)
    d = len(ADULT.kept)
    assert _mean_two_way(registry.get("density-lp").predict_accuracy(rich, {}), d) < _mean_two_way(
        predictors.predict_independent_histograms(rich, {}), d
    )
    assert rec.recommend(ADULT, n=ADULT_N, epsilon=10.0).recommended == "density-lp"
    # the broken variant: its reference (the product of 1-way marginals at half the budget) is above the
    # LP's prediction there, so a floor applied everywhere would have lifted density-lp to it
    reference = predictors.predict_independent_histograms(rec.Setting(ADULT, ADULT_N, 5.0, 0.0), {})
    assert _mean_two_way(reference, d) > _mean_two_way(registry.get("density-lp").predict_accuracy(rich, {}), d) + 0.005
    # uniform reference: nothing to floor by
    assert "floored" not in registry.get("density-lp").predict_accuracy(swamped, {"reference": "uniform"}).modelled


def test_aim_with_rounds_for_the_1way_start_only_is_predicted_as_independent_columns():
    """T = d (n small for the budget): AIM measures its 1-way marginals and one last marginal, so its
    pairs are predicted as independent columns (with its sampler), not as measured ones; with the
    paper's 16 d rounds every pair can be measured."""
    german = Schema.from_json((ROOT / "benchmarks" / "schemas" / "german_credit.json").read_text())
    d = len(german.kept)
    s = rec.Setting(german, 800, 1.0, 1e-5)
    start_only = registry.get("aim").predict_accuracy(s, {"max_rounds": d})
    one = start_only.one_way
    independent = predictors.independent_columns(s, one, predictors.covered_sampling(1.0, aim_guide.AIM_PARENT_CELLS))
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    assert max(abs(start_only.two_way(i, j) - independent(i, j)) for i, j in pairs) < 0.002
    paper = registry.get("aim").predict_accuracy(rec.Setting(german, 800, 10.0, 1e-5), {"max_rounds": 16 * d})
    alone = predictors.independent_columns(
        rec.Setting(german, 800, 10.0, 1e-5),
        paper.one_way,
        predictors.covered_sampling(1.0, aim_guide.AIM_PARENT_CELLS),
    )
    assert all(paper.two_way(i, j) <= alone(i, j) for i, j in pairs)
    assert _mean_two_way(paper, d) < 0.7 * sum(alone(i, j) for i, j in pairs) / len(pairs)


def test_an_ml_recommendation_above_a_lower_error_names_it_and_the_measure_that_decides():
    """AIM (workload=target) recommended over MST at a higher predicted error: the reason says so and why,
    and the table is sorted by the stated measure (models the target first, then predicted error)."""
    r = rec.recommend(ADULT, n=20_000, epsilon=0.1, delta=1e-6, purpose=rec.Purpose.parse("ml", target="income"))
    aim, mst = r.get("aim"), r.get("mst")
    assert r.recommended == "aim" and mst.score < aim.score and mst.params == {"key_columns": "income"}
    assert f"higher than mst's {mst.score:.1%}" in r.reason and "not how well a model" in r.reason
    d = r.to_dict()
    usable = [m for m in d["mechanisms"] if m["status"] in ("recommended", "ok")]
    tier = {(True, False): 0, (True, True): 1}  # own target mode, then the target as MST's key column
    keys = [(tier.get((m["label_conditional"], "key_columns" in m["params"]), 2), m["score"]) for m in usable]
    assert keys == sorted(keys) and "models the other columns given income" in d["ranking"]
    explore = rec.recommend(ADULT, n=ADULT_N, epsilon=1, delta=1e-5)
    assert explore.to_dict()["ranking"].startswith("Sorted by predicted error, lowest first")


def _cats(name: str, k: int) -> Column:
    return Column(name, "categorical", categories=tuple(f"v{i}" for i in range(k)))


@pytest.mark.parametrize(
    "columns, suggested",
    [
        ((_cats("workclass", 2), _cats("sex", 3), _cats("adult_income", 2), _cats("age", 6)), "adult_income"),
        ((_cats("Class", 2), _cats("sex", 2)), "Class"),  # named like a label: any place, camel case
        ((_cats("outcome", 5), _cats("y", 2), _cats("a", 4)), "y"),  # the last label-named one
        ((_cats("a", 4), _cats("default", 2)), "default"),  # a binary last column
        ((_cats("workclass", 2), _cats("a", 3)), None),  # 'class' inside a word is not a label word
        ((_cats("a", 2), _cats("label", 6)), None),  # too many categories: a large key domain
        ((_cats("a", 2), _cats("b", 3)), None),  # a last column of 3 categories, not named like a label
        ((_cats("target_group", 2), Column("x", "integer", lower=0, upper=9, bins=10)), "target_group"),
        ((_cats("a", 2), Column("income", "continuous", lower=0, upper=1, bins=4)), None),  # numeric
    ],
)
def test_a_key_column_is_suggested_for_explore_from_the_schema_alone(columns, suggested):
    s = Schema(columns=columns)
    got = rec.suggest_key_columns(s)
    assert (got.columns if got else None) == ((suggested,) if suggested else None)


def test_the_suggested_key_column_is_shown_not_applied():
    plain = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5)
    assert plain.key_suggestion.columns == ("income",)
    assert plain.to_dict()["suggested_key_columns"] == {
        "columns": ["income"],
        "reason": "2 categories, named like a label, the table's last column",
    }
    # not applied: the metric is every pair's, MST measures no key pair
    assert plain.metric == "mean 2-way TVD over all pairs" and plain.get("mst").params == {}
    assert "--key-columns income uses it" in rec.summary_text(plain)
    named = rec.recommend(
        ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=rec.Purpose.parse("explore", key_columns="sex")
    )
    ml = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=rec.Purpose("ml", target="income"))
    for other in (named, ml):  # the steward named a column, or the purpose names the label already
        assert other.key_suggestion is None and other.to_dict()["suggested_key_columns"] is None


def test_for_model_training_mst_takes_the_target_as_key_column_after_aims_target_mode():
    purpose = rec.Purpose("ml", target="income")
    r = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=purpose)
    mst, aim = r.get("mst"), r.get("aim")
    assert mst.params == {"key_columns": "income"} and mst.label_conditional
    assert r.recommended == "aim" and r.items.index(aim) < r.items.index(mst)
    assert mst.model_quality["variant"] == "mst:key_columns" and mst.model_quality["kind"] == "none"
    only = rec.recommend(ADULT, n=ADULT_N, epsilon=1.0, delta=1e-5, purpose=purpose, mechanisms=["mst", "baseline"])
    assert only.recommended == "mst" and "(key_columns=income)" in only.reason
    assert "measures every pair with income and its tree of the other columns given income" in only.reason
    setting = rec.Setting(ADULT, ADULT_N, 1.0, 1e-5)
    cleared = rec.predict("mst", setting, purpose, {"key_columns": ""})  # the steward emptied the field
    assert cleared.params == {} and not cleared.label_conditional


def test_mst_takes_the_target_as_key_column_only_where_msts_tree_is_conditioned_on_it():
    from mechanisms.synthesizers import mst

    assert rec.KEYED_TARGET_MAX_CELLS == mst.KEY_TREE_MAX_CELLS
    many = _cats("y", rec.KEYED_TARGET_MAX_CELLS + 1)
    numeric = Column("y", "integer", lower=0, upper=9, bins=10)
    for target, keyed in ((_cats("y", rec.KEYED_TARGET_MAX_CELLS), True), (many, False), (numeric, False)):
        s = Schema(columns=(_cats("a", 3), _cats("b", 4), _cats("c", 2), target))
        p = rec.predict("mst", rec.Setting(s, 10_000, 1.0, 1e-5), rec.Purpose("ml", target="y"))
        assert (p.params == {"key_columns": "y"}) is keyed and p.label_conditional is keyed, target
