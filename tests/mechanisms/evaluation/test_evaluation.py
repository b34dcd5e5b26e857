"""Utility metrics (mechanisms/evaluation/): hand-computed values on small tables, cross-checks
against scipy / scikit-learn, and broken variants that the checks must catch."""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr, wasserstein_distance
from scipy.stats.contingency import association

from mechanisms.evaluation import encoding, metrics, sections, utility
from mechanisms.__main__ import main as cli_main
from mechanisms.schema import Column, Schema

SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=0.0, upper=10.0, bins=5),
        Column(name="k", kind="integer", lower=0.0, upper=4.0),
        Column(name="c", kind="categorical", categories=("a", "b", "c")),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    )
)


def table(n: int, seed: int, *, shift: float = 0.0, flip_labels: bool = False) -> pd.DataFrame:
    """A small correlated table on SCHEMA's public domain; y depends on x and c."""
    rng = np.random.default_rng(seed)
    x = np.clip(rng.normal(5 + shift, 2, n), 0, 10)
    k = np.clip(np.rint(x / 2.5 + rng.normal(0, 0.5, n)), 0, 4)
    c = np.array(["a", "b", "c"], dtype=object)[np.clip((x / 3.4 + rng.normal(0, 0.6, n)).astype(int), 0, 2)]
    score = (x - 5) + (c == "c") * 1.5 + rng.normal(0, 1, n)
    y = np.where(score > 0, "yes", "no").astype(object)
    if flip_labels:
        y = rng.permutation(y)
    return pd.DataFrame({"x": x, "k": k, "c": c, "y": y})


# ------------------------------------------------------------------------------------------------
# Hand-computed values
# ------------------------------------------------------------------------------------------------


def tvd_failures(tvd_fn) -> list[str]:
    """Properties a correct TVD has; returns what failed (used on the real function and mutants)."""
    failures = []
    if not math.isclose(tvd_fn([3, 1, 0], [3, 1, 0]), 0.0, abs_tol=1e-12):
        failures.append("identical histograms must give 0")
    if not math.isclose(tvd_fn([5, 0, 0], [0, 0, 7]), 1.0, abs_tol=1e-12):
        failures.append("disjoint supports must give 1")
    if not math.isclose(tvd_fn([1, 1, 0], [0, 2, 2]), 0.5, abs_tol=1e-12):  # p=(.5,.5,0), q=(0,.5,.5)
        failures.append("hand value 0.5")
    return failures


def cramers_v_failures(v_fn) -> list[str]:
    failures = []
    if not math.isclose(v_fn(np.array([[10, 0, 0], [0, 10, 0], [0, 0, 10]])), 1.0, abs_tol=1e-12):
        failures.append("perfect association must give 1")
    if not math.isclose(v_fn(np.array([[5, 5], [5, 5]])), 0.0, abs_tol=1e-12):
        failures.append("independence must give 0")
    # 2x2: V = |ad - bc| / sqrt((a+b)(c+d)(a+c)(b+d)) = |750 - 50| / sqrt(35 * 35 * 40 * 30)
    if not math.isclose(v_fn(np.array([[30, 5], [10, 25]])), 700 / math.sqrt(35 * 35 * 40 * 30), rel_tol=1e-12):
        failures.append("hand value for a 2x2 table")
    # 3x2: rows (10,0),(0,10),(10,10), n = 40;
    # expected (5,5),(5,5),(10,10): chi2 = 4 * 25/5 = 20; V = sqrt(20 / (40 * 1)) = sqrt(0.5)
    if not math.isclose(v_fn(np.array([[10, 0], [0, 10], [10, 10]])), math.sqrt(0.5), rel_tol=1e-12):
        failures.append("hand value for a 3x2 table")
    return failures


def test_tvd_is_0_for_identical_1_for_disjoint_and_matches_hand_values():
    assert tvd_failures(metrics.tvd) == []


def test_tvd_checks_catch_broken_variants():
    no_half = lambda p, q: 2 * metrics.tvd(p, q)  # noqa: E731  forgot the 1/2
    raw_counts = lambda p, q: 0.5 * float(np.abs(np.subtract(p, q, dtype=float)).sum())  # noqa: E731  unnormalised
    assert tvd_failures(no_half)
    assert tvd_failures(raw_counts)


def test_cramers_v_matches_hand_values():
    assert cramers_v_failures(metrics.cramers_v) == []


def test_cramers_v_checks_catch_a_variant_without_the_dimension_correction():
    def broken(t):
        t = np.asarray(t, dtype=float)
        e = np.outer(t.sum(1), t.sum(0)) / t.sum()
        return math.sqrt(((t - e) ** 2 / e).sum() / t.sum())  # divides by n, not n (min(r, c) - 1)

    assert cramers_v_failures(broken)


def test_cramers_v_matches_scipy_association():
    rng = np.random.default_rng(3)
    for _ in range(5):
        t = rng.integers(1, 30, size=(3, 4))
        assert metrics.cramers_v(t) == pytest.approx(association(t, method="cramer"), rel=1e-10)


def test_correlation_ratio_hand_values_and_anova_cross_check():
    assert metrics.correlation_ratio([0, 0, 1, 1], [1, 1, 3, 3]) == pytest.approx(1.0)
    assert metrics.correlation_ratio([0, 0, 1, 1], [1, 3, 1, 3]) == pytest.approx(0.0)
    # codes (0,0,1), values (0,2,4): mean 2, group means 1 and 4: between 2*1 + 1*4 = 6, total 8
    assert metrics.correlation_ratio([0, 0, 1], [0, 2, 4]) == pytest.approx(math.sqrt(6 / 8))
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(4)
    codes = rng.integers(0, 4, 500)
    values = codes * 0.7 + rng.normal(size=500)
    onehot = np.eye(4)[codes]
    r2 = LinearRegression().fit(onehot, values).score(onehot, values)  # eta^2 = R^2 on group dummies
    assert metrics.correlation_ratio(codes, values) == pytest.approx(math.sqrt(r2), rel=1e-9)


def test_pearson_matches_scipy_and_is_0_for_a_constant_column():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=200), rng.normal(size=200)
    y = y + 0.5 * x
    assert metrics.pearson(x, y) == pytest.approx(pearsonr(x, y)[0], rel=1e-10)
    assert metrics.pearson(x, np.ones(200)) == 0.0


def test_identical_tables_score_perfectly():
    real = table(400, 1)
    res = utility.evaluate(SCHEMA, real, real.copy(), seed=0)
    assert all(c["tvd"] == 0.0 for c in res["columns"])
    assert all(c["wasserstein"] == 0.0 for c in res["columns"] if "wasserstein" in c)
    assert res["pairs"]["mean_tvd"] == 0.0
    assert res["pairs"]["combinations"]["suppressed"] == 0 and res["pairs"]["combinations"]["fabricated"] == 0
    assert res["correlation"]["max_abs_difference"] == pytest.approx(0.0, abs=1e-12)
    assert res["privacy"]["exact_match_rate"] == 1.0
    json.dumps(res, allow_nan=False)  # strict JSON


def test_disjoint_supports_give_tvd_1_and_the_hand_computed_wasserstein():
    n = 50
    real = pd.DataFrame({"x": np.full(n, 1.0), "k": np.zeros(n), "c": ["a"] * n, "y": ["no"] * n})
    syn = pd.DataFrame({"x": np.full(n, 9.0), "k": np.full(n, 4.0), "c": ["c"] * n, "y": ["yes"] * n})
    res = utility.evaluate(SCHEMA, real, syn)
    by = {c["name"]: c for c in res["columns"]}
    assert [by[k]["tvd"] for k in "xkcy"] == [1.0, 1.0, 1.0, 1.0]
    assert by["x"]["wasserstein"] == pytest.approx(8.0) and by["x"]["wasserstein_normalized"] == pytest.approx(0.8)
    assert by["k"]["wasserstein"] == pytest.approx(4.0) and by["k"]["wasserstein_normalized"] == pytest.approx(1.0)
    assert res["pairs"]["mean_tvd"] == 1.0
    cb = res["pairs"]["combinations"]
    assert cb["suppressed_fraction"] == 1.0 and cb["fabricated_fraction"] == 1.0
    assert res["pmse"]["cart"]["pmse"] == pytest.approx(0.25)  # perfectly separated


def test_wasserstein_hand_value_and_scipy_cross_check():
    real = table(300, 2)
    syn = real.copy()
    syn["x"] = np.clip(real["x"] + 1.0, 0, 10)
    res = utility.evaluate(SCHEMA, real, syn)
    x = next(c for c in res["columns"] if c["name"] == "x")
    assert x["wasserstein"] == pytest.approx(wasserstein_distance(real["x"], syn["x"]))
    # every value moves up by 1 except those clipped at 10: W1 = mean of the moves
    assert x["wasserstein"] == pytest.approx(float((syn["x"] - real["x"]).mean()))
    assert x["real"]["mean"] == pytest.approx(real["x"].mean())
    assert x["synthetic"]["q50"] == pytest.approx(np.quantile(syn["x"], 0.5))


def test_gaussian_mmd_matches_a_direct_sklearn_kernel_computation():
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(6)
    X, Y = rng.normal(size=(60, 3)), rng.normal(0.5, 1, size=(70, 3))
    bw = 1.3
    g = 1 / (2 * bw**2)
    kxx, kyy, kxy = rbf_kernel(X, X, gamma=g), rbf_kernel(Y, Y, gamma=g), rbf_kernel(X, Y, gamma=g)
    expected = (kxx.sum() - 60) / (60 * 59) + (kyy.sum() - 70) / (70 * 69) - 2 * kxy.mean()
    assert metrics.gaussian_mmd2(X, Y, bandwidth=bw) == pytest.approx(expected, rel=1e-9)


def test_random_feature_mmd_is_close_to_the_exact_biased_value():
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(7)
    X, Y = rng.normal(size=(800, 4)), rng.normal(0.4, 1, size=(800, 4))
    bw, g = 2.0, 1 / (2 * 2.0**2)
    biased = rbf_kernel(X, X, gamma=g).mean() + rbf_kernel(Y, Y, gamma=g).mean() - 2 * rbf_kernel(X, Y, gamma=g).mean()
    approx = metrics.rff_mmd2(X, Y, bandwidth=bw, features=4000, rng=np.random.default_rng(0))
    assert approx == pytest.approx(biased, abs=0.01)  # RFF std ~ sqrt(2/D) per entry; 0.01 is > 3 sd here
    assert biased > 0.05  # the test has teeth: the two samples differ clearly


def test_pmse_is_near_its_null_for_the_same_generator_and_high_for_a_shift():
    same = utility.evaluate(SCHEMA, table(2000, 1), table(2000, 2))
    shifted = utility.evaluate(SCHEMA, table(2000, 1), table(2000, 2, shift=2.0))
    # under the null the logit ratio is ~ chi2(k-1)/(k-1) with k-1 = 5 here: P(> 5) < 1e-4
    for kind in ("cart", "logistic"):
        assert same["pmse"][kind]["ratio"] < 5.0
        assert shifted["pmse"][kind]["ratio"] > 10.0
    assert shifted["mmd"]["mmd2"] > 10 * abs(same["mmd"]["mmd2"])
    assert shifted["summary"]["tvd_1way_mean"] > same["summary"]["tvd_1way_mean"]


def test_pmse_helper_is_the_mean_squared_deviation_from_the_synthetic_share():
    # c = 0.5: ((0.9-0.5)^2 + (0.1-0.5)^2 + (0.5-0.5)^2 + (0.7-0.5)^2) / 4 = (0.16 + 0.16 + 0 + 0.04) / 4
    assert metrics.pmse(np.array([0.9, 0.1, 0.5, 0.7]), np.array([1, 0, 1, 0])) == pytest.approx(0.09)


@pytest.mark.slow
def test_tstr_is_close_to_the_real_baseline_for_good_data_and_near_chance_for_shuffled_labels():
    real, test = table(1500, 1), table(1000, 9)
    good = utility.evaluate(SCHEMA, real, table(1500, 2), target="y", test=test, fast=True)["ml"]
    bad = utility.evaluate(SCHEMA, real, table(1500, 3, flip_labels=True), target="y", test=test, fast=True)["ml"]
    assert len({m["model"] for m in good["models"]}) == 12
    assert good["task"] == "binary" and good["classes"] == ["no", "yes"]
    assert good["mean"]["roc_auc"]["real"] > 0.8
    assert good["mean"]["roc_auc"]["synthetic"] > good["mean"]["roc_auc"]["real"] - 0.05
    assert bad["mean"]["roc_auc"]["synthetic"] < 0.6
    assert all("error" not in m for m in good["models"])


def test_tstr_without_a_test_file_holds_out_real_rows():
    res = utility.evaluate(SCHEMA, table(600, 1), table(600, 2), target="c", fast=True)
    ml = res["ml"]
    assert ml["task"].startswith("multiclass") and "held out" in ml["test"]
    assert ml["test_rows"] == 120 and "accuracy" in ml["mean"]


def test_privacy_sanity_flags_copies_and_not_fresh_samples():
    real = table(1000, 1)
    copied = utility.evaluate(SCHEMA, real, real.sample(frac=1.0, random_state=0))["privacy"]
    fresh = utility.evaluate(SCHEMA, real, table(1000, 2))["privacy"]
    assert copied["exact_match_rate"] == 1.0 and copied["dcr"]["synthetic_median"] == 0.0
    assert copied["dcr"]["synthetic_share_below_holdout_p05"] > 0.4
    assert fresh["exact_match_rate"] < 0.03  # only rows with x clipped at a bound can repeat
    assert fresh["dcr"]["synthetic_share_below_holdout_p05"] < 0.15


def test_pairs_are_sampled_when_there_are_too_many_and_the_fraction_is_stated(monkeypatch):
    monkeypatch.setattr(sections, "MAX_PAIRS", 2)
    res = utility.evaluate(SCHEMA, table(200, 1), table(200, 2))
    assert res["pairs"]["n_pairs_total"] == 6 and res["pairs"]["n_pairs_evaluated"] == 2
    assert res["pairs"]["fraction"] == pytest.approx(1 / 3, abs=1e-5)
    assert "sample" in next(r for r in res["readings"] if r["metric"].startswith("2-way"))["reading"]


def test_large_tables_are_subsampled_with_the_fraction_stated(monkeypatch):
    monkeypatch.setattr(sections, "PMSE_MAX_ROWS", 100)
    res = utility.evaluate(SCHEMA, table(400, 1), table(400, 2))
    assert res["pmse"]["rows_used"] == 100 and res["pmse"]["fraction"] == 0.25


def test_results_are_reproducible_for_a_seed():
    a = utility.evaluate(SCHEMA, table(300, 1), table(300, 2), seed=3)
    b = utility.evaluate(SCHEMA, table(300, 1), table(300, 2), seed=3)
    a.pop("timings"), b.pop("timings"), a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_readings_are_plain_language():
    res = utility.evaluate(SCHEMA, table(300, 1), table(300, 2))
    text = {r["metric"]: r["reading"] for r in res["readings"]}
    assert text["2-way TVD (mean)"].startswith("2-way marginals within ")
    assert "% on average" in text["1-way TVD (mean)"]


def test_bad_target_is_named_in_the_error():
    with pytest.raises(ValueError, match="target='nope'"):
        utility.evaluate(SCHEMA, table(50, 1), table(50, 2), target="nope")


def test_cli_prints_json_and_undoes_the_formula_guard(tmp_path):
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0.0, upper=10.0),
            Column(name="c", kind="categorical", categories=("-1", "a")),
        )
    )
    (tmp_path / "s.json").write_text(schema.to_json())
    (tmp_path / "r.csv").write_text("x,c\n1,-1\n2,a\n3,a\n4,-1\n")
    (tmp_path / "y.csv").write_text("x,c\n1,'-1\n2,a\n3,a\n4,'-1\n")  # as io.write_synthetic_csv writes it
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli_main(
            [
                "evaluate",
                "--real",
                str(tmp_path / "r.csv"),
                "--synthetic",
                str(tmp_path / "y.csv"),
                "--schema",
                str(tmp_path / "s.json"),
                "--compact",
            ]
        )
    assert rc == 0
    out = json.loads(buf.getvalue())
    assert out["summary"]["tvd_1way_mean"] == 0.0 and out["n_real"] == 4


def test_tstr_is_skipped_on_tiny_tables_with_the_reason():
    res = utility.evaluate(SCHEMA, table(40, 1), table(40, 2), target="y")
    assert res["ml"] is None and "at least 100 real rows, got 40" in res["ml_skipped"]


def test_cli_runs_tstr_with_a_test_file(tmp_path):
    (tmp_path / "s.json").write_text(SCHEMA.to_json())
    table(300, 1).to_csv(tmp_path / "r.csv", index=False)
    table(300, 2).to_csv(tmp_path / "y.csv", index=False)
    table(200, 3).to_csv(tmp_path / "t.csv", index=False)
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli_main(
            [
                "evaluate",
                "--real",
                str(tmp_path / "r.csv"),
                "--synthetic",
                str(tmp_path / "y.csv"),
                "--schema",
                str(tmp_path / "s.json"),
                "--target",
                "y",
                "--test",
                str(tmp_path / "t.csv"),
                "--fast",
                "--compact",
            ]
        )
    assert rc == 0
    ml = json.loads(buf.getvalue())["ml"]
    assert ml["test"] == "separate real test file" and ml["test_rows"] == 200 and ml["mean"]["roc_auc"]["real"] > 0.7


def test_high_cardinality_columns_are_one_hot_encoded_on_a_bounded_width():
    cats = tuple(f"k{i}" for i in range(200))
    schema = Schema(columns=(Column(name="z", kind="categorical", categories=cats),))
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"z": np.array(cats, dtype=object)[rng.integers(0, 200, 2000)]})
    X = encoding.Encoder(schema, real).transform(real)
    assert X.shape == (2000, encoding.MAX_ONEHOT)
    assert np.allclose(X.sum(axis=1), 1 / math.sqrt(2))  # exactly one level (or "rest") per row
    res = utility.evaluate(schema, real, real.iloc[::-1].reset_index(drop=True))
    assert res["summary"]["tvd_1way_mean"] == 0.0


def pair_tvd_failures(pairs_fn) -> list[str]:
    """Same 1-way marginals, different joint: real pairs a with no and b with yes, synthetic is
    independent. Hand value: real joint (a,no) = (b,yes) = 1/2, synthetic 1/4 in each of 4 cells ->
    TVD = 1/2 * (2 * 1/4 + 2 * 1/4) = 1/2."""
    schema = Schema(
        columns=(
            Column(name="c", kind="categorical", categories=("a", "b")),
            Column(name="y", kind="categorical", categories=("no", "yes")),
        )
    )
    real = pd.DataFrame({"c": ["a", "b"] * 50, "y": ["no", "yes"] * 50})
    syn = pd.DataFrame({"c": ["a", "a", "b", "b"] * 25, "y": ["no", "yes"] * 50})
    rc, sc = schema.to_cells(real), schema.to_cells(syn)
    out = pairs_fn(schema, rc, sc, np.random.default_rng(0))
    return [] if math.isclose(out["mean_tvd"], 0.5, abs_tol=1e-12) else [f"2-way TVD {out['mean_tvd']} != 0.5"]


def test_two_way_tvd_sees_a_joint_that_the_marginals_hide_and_a_marginal_only_variant_is_caught():
    assert pair_tvd_failures(sections.pairs_section) == []

    def from_marginals(schema, rc, sc, rng):  # broken: compares products of the 1-way marginals
        def joint(cells):
            p = np.bincount(cells[:, 0], minlength=2) / len(cells)
            q = np.bincount(cells[:, 1], minlength=2) / len(cells)
            return np.outer(p, q).ravel()

        return {"mean_tvd": metrics.tvd(joint(rc), joint(sc))}

    assert pair_tvd_failures(from_marginals)
