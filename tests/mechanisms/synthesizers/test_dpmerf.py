"""Tests for DP-MERF (mechanisms/synthesizers/dpmerf/): sensitivity, accounting, noise-off recovery, an audit of
the released embedding with mutants, summary round trip, determinism, parameter checks, CLI."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from mechanisms.accounting import calibrate_gaussian_rdp, gaussian_pld_epsilon, gaussian_rdp_epsilon
from mechanisms.synthesizers.dpmerf import DPMERF, THREADS_ENV, median_heuristic_bandwidth, rff
from mechanisms.noise import Noise
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.audit import clopper_pearson
from tests.mechanisms.npz import through_npz

pytest.importorskip("torch")

EPS, DELTA = 1.0, 1e-5


@pytest.fixture(autouse=True)
def one_torch_thread(monkeypatch):
    """The tiny test networks run faster on one thread, and CI machines are shared."""
    monkeypatch.setenv(THREADS_ENV, "1")


def mixed_schema() -> Schema:
    return Schema(
        columns=(
            Column("a", "continuous", lower=0.0, upper=10.0),
            Column("b", "integer", lower=0.0, upper=5.0),
            Column("c", "categorical", categories=("x", "y", "z")),
            Column("d", "categorical", categories=("p", "q")),
            Column("label", "categorical", categories=("no", "yes")),
        )
    )


def mixed_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": rng.uniform(0, 10, n).round(3).astype(str),
            "b": rng.integers(0, 6, n).astype(str),
            "c": rng.choice(["x", "y", "z"], n),
            "d": rng.choice(["p", "q"], n),
            "label": rng.choice(["no", "yes"], n, p=[0.7, 0.3]),
        }
    )


def fitted_features(schema: Schema, n: int, seed: int = 0, **params) -> DPMERF:
    """A mechanism with its public random features drawn (no data read)."""
    mech = DPMERF(schema, epsilon=EPS, delta=DELTA, noise=Noise.seeded(seed), **params)
    mech.n = n
    mech._draw_features()
    return mech


class NoNoise(Noise):
    """Test double: the Gaussian releases return their input (noise switched off)."""

    def gaussian_float(self, values, *, scale):
        return np.asarray(values, dtype=float).copy()


# -- sensitivity ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["label", None])
def test_embedding_of_neighbours_differs_by_at_most_the_bound_random_pairs(target):
    rng = np.random.default_rng(1)
    schema, n = mixed_schema(), 40
    mech = fitted_features(schema, n, features=64, target=target)
    bound = mech.embedding_sensitivity(n)
    assert bound == pytest.approx(2 * math.sqrt(2) / n)  # heterogeneous: 2 sqrt(2) / n
    worst = 0.0
    for _ in range(80):
        raw = mixed_frame(rng, n)
        other = raw.copy()
        i = int(rng.integers(n))
        other.iloc[i] = mixed_frame(rng, 1).iloc[0].to_numpy()
        e1, m1 = mech._embed(schema.prepare(raw))
        e2, m2 = mech._embed(schema.prepare(other))
        gap = np.linalg.norm(e1 - e2)
        worst = max(worst, gap)
        assert gap <= bound * (1 + 1e-12)
        assert np.linalg.norm(m1 - m2) <= math.sqrt(2) + 1e-12  # class counts: sqrt(2)
    assert worst > 0.3 * bound  # the check can see real differences


def test_embedding_bound_is_attained_in_the_worst_case():
    """All-numeric, one frequency: phi(x') = -phi(x) is reachable, so the gap equals 2/n exactly."""
    schema = Schema(
        columns=(Column("v", "continuous", lower=0.0, upper=1.0), Column("label", "categorical", categories=("0", "1")))
    )
    n = 10
    mech = fitted_features(schema, n, features=2, target="label", bandwidth=0.01)
    w = float(mech.omega[0, 0])
    x0 = 0.05
    x1 = x0 + math.pi / abs(w)  # w (x1 - x0) = +-pi: cos and sin both flip sign
    assert 0 <= x1 <= 1, "bandwidth 0.01 should give |w| > pi"
    base = pd.DataFrame({"v": [str(x0)] * n, "label": ["0"] * n})
    other = base.copy()
    other.loc[0, "v"] = repr(x1)
    e1, _ = mech._embed(schema.prepare(base))
    e2, _ = mech._embed(schema.prepare(other))
    assert np.linalg.norm(e1 - e2) == pytest.approx(mech.embedding_sensitivity(n), rel=1e-9)
    assert mech.embedding_sensitivity(n) == pytest.approx(2 / n)


def test_feature_rows_have_the_norms_the_bound_uses():
    rng = np.random.default_rng(2)
    mech = fitted_features(mixed_schema(), 100, features=50, target="label")
    unit = mech.schema.to_unit(mech.schema.prepare(mixed_frame(rng, 100)))
    h = mech._features_np(unit)
    np.testing.assert_allclose(np.linalg.norm(h[:, :50], axis=1), 1.0, rtol=1e-12)  # RFF block
    np.testing.assert_allclose(np.linalg.norm(h, axis=1), math.sqrt(2), rtol=1e-12)  # + one-hot / sqrt(d_cat)
    np.testing.assert_allclose(np.linalg.norm(rff(rng.random((5, 3)), rng.normal(size=(7, 3))), axis=1), 1.0)


def test_bandwidth_heuristic_uses_only_the_public_box():
    rng = np.random.default_rng(3)
    # median distance between uniform points: 1 - 1/sqrt(2) = 0.293 in 1-D, about sqrt(d/6) for larger d
    assert median_heuristic_bandwidth(1, rng, draws=2000) == pytest.approx(1 - 1 / math.sqrt(2), abs=0.02)
    assert median_heuristic_bandwidth(30, rng) == pytest.approx(math.sqrt(30 / 6), rel=0.03)


# -- accounting ----------------------------------------------------------------------------------


def analytic_gaussian_delta(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of a Gaussian mechanism with sensitivity/std ratio mu (Balle & Wang 2018)."""
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


def standard_rdp_epsilon(sigma: float, delta: float, count: int) -> float:
    """Classical RDP conversion eps = min_alpha count*alpha/(2 sigma^2) + log(1/delta)/(alpha - 1) (autodp)."""
    alpha = np.linspace(1.0001, 2000, 2_000_000)
    return float(np.min(count * alpha / (2 * sigma**2) + math.log(1 / delta) / (alpha - 1)))


@pytest.mark.parametrize("eps,delta,count", [(1.0, 1e-5, 2), (1.0, 1e-5, 1), (0.2, 1e-5, 1), (3.0, 1e-6, 2)])
def test_sigma_round_trips_and_agrees_with_second_accountants(eps, delta, count):
    sigma = calibrate_gaussian_rdp(eps, delta, count=count)
    back = gaussian_rdp_epsilon(sigma, delta, count=count)
    assert back <= eps and back == pytest.approx(eps, rel=1e-6)
    assert gaussian_rdp_epsilon(sigma * (1 - 1e-4), delta, count=count) > eps  # smallest sigma
    # second accountant (PLD, continuous Gaussian): tighter but not wildly so
    pld = gaussian_pld_epsilon(sigma, delta, count=count)
    assert 0.75 * eps < pld <= eps
    # third: the exact analytic profile of the composed Gaussian (mu = sqrt(count) / sigma)
    mu = math.sqrt(count) / sigma
    assert analytic_gaussian_delta(mu, eps) <= delta  # RDP's answer is sound for the true profile
    assert analytic_gaussian_delta(mu, pld) == pytest.approx(delta, rel=0.05)  # PLD matches the exact one


def test_sigma_sits_between_the_exact_profile_and_the_classical_rdp_conversion():
    sigma = calibrate_gaussian_rdp(1.0, 1e-5, count=2)
    # implementation notes: autodp (classical conversion) gives sigma(1, 1e-5, k=2) = 6.9304
    assert standard_rdp_epsilon(6.9304, 1e-5, 2) == pytest.approx(1.0, abs=1e-3)
    assert sigma < 6.9304  # dp-accounting's improved conversion is tighter ...
    assert analytic_gaussian_delta(math.sqrt(2) / 5.0, 1.0) > 1e-5  # ... and sigma = 5 would be too little
    assert 5.0 < sigma


def test_calibration_rejects_bad_arguments():
    with pytest.raises(ValueError, match="epsilon=-1"):
        calibrate_gaussian_rdp(-1, 1e-5)
    with pytest.raises(ValueError, match="delta=0"):
        calibrate_gaussian_rdp(1, 0)
    with pytest.raises(ValueError, match="count=0"):
        calibrate_gaussian_rdp(1, 1e-5, count=0)


# -- audit of the released embedding ----------------------------------------------------------------


class HalfNoise(DPMERF):
    """Mutant: half the noise on both releases."""

    def _release(self, exact_embedding, counts):
        self.sigma /= 2
        try:
            return super()._release(exact_embedding, counts)
        finally:
            self.sigma *= 2


class ForgotFactorTwo(DPMERF):
    """Mutant: embedding sensitivity max||h|| / n (the 'one record removed' bound) instead of 2 max||h|| / n."""

    def embedding_sensitivity(self, n):
        return super().embedding_sensitivity(n) / 2


def audit_delta(cls, *, same_label: bool, seed: int, draws: int = 3_000_000, pilot: int = 1_000_000) -> float:
    """Lower confidence bound (95%) on delta at the claimed epsilon for the (embedding, counts)
    release on worst-case neighbours: phi(x') = -phi(x) (the embedding bound attained), with the
    label kept (embedding gap 2/n) or changed (embedding gap sqrt(2)/n, counts gap sqrt(2)).
    Many releases are drawn in one call of the mechanism's own ``_release`` (its noise scales)."""
    schema = Schema(
        columns=(Column("v", "continuous", lower=0.0, upper=1.0), Column("label", "categorical", categories=("0", "1")))
    )
    n = 10
    mech = cls(schema, epsilon=EPS, delta=DELTA, noise=Noise.seeded(seed), features=2, target="label", bandwidth=0.01)
    mech.n = n
    mech._draw_features()
    base = pd.DataFrame({"v": ["0.05"] * n, "label": ["0"] * n})
    other = base.copy()
    other.loc[0, "v"] = repr(0.05 + math.pi / abs(float(mech.omega[0, 0])))
    if not same_label:
        other.loc[0, "label"] = "1"
    e1, m1 = mech._embed(schema.prepare(base))
    e2, m2 = mech._embed(schema.prepare(other))
    # likelihood-ratio direction of the CLAIMED mechanism (the auditor knows the claim, not the bug)
    sigma = calibrate_gaussian_rdp(EPS, DELTA, count=2)
    s_e, s_m = sigma * 2 / n, sigma * math.sqrt(2)
    direction = np.concatenate([((e2 - e1) / s_e**2).ravel(), (m2 - m1) / s_m**2])

    def stat(exact, counts, k):
        e, m = mech._release(np.repeat(exact[None], k, axis=0), np.repeat(counts[None], k, axis=0))
        return np.concatenate([(e - e1).reshape(k, -1), m - m1], axis=1) @ direction

    def delta_lb(ka: int, kb: int, k: int) -> float:
        lo_d2, _ = clopper_pearson(kb, k, 0.025)
        _, hi_d = clopper_pearson(ka, k, 0.025)
        return lo_d2 - math.exp(EPS) * hi_d

    # pilot: the event {stat >= t} with the best pilot LOWER bound (penalises noisy far tails)
    a, b = np.sort(stat(e1, m1, pilot)), np.sort(stat(e2, m2, pilot))
    ts = np.quantile(b, np.linspace(0.5, 0.9995, 300))
    hits = lambda x, t: pilot - int(np.searchsorted(x, t))  # noqa: E731
    t = max(ts, key=lambda t: delta_lb(hits(a, t), hits(b, t), pilot))
    ka, kb = int(np.sum(stat(e1, m1, draws) >= t)), int(np.sum(stat(e2, m2, draws) >= t))
    return max(0.0, delta_lb(ka, kb, draws))


@pytest.mark.parametrize("same_label", [True, False])
@pytest.mark.slow
def test_audit_of_released_embedding_passes(same_label):
    assert audit_delta(DPMERF, same_label=same_label, seed=11) <= DELTA


def test_audit_catches_half_noise_mutant():
    assert audit_delta(HalfNoise, same_label=False, seed=12) > 10 * DELTA


@pytest.mark.slow
def test_audit_catches_forgotten_factor_two_in_the_sensitivity():
    assert audit_delta(ForgotFactorTwo, same_label=True, seed=13) > DELTA


# -- generator --------------------------------------------------------------------------------------


def mixture_frame(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, dict]:
    """Two classes, each a mixture of two tight 2-D Gaussians; returns the frame and class means."""
    centres = {"A": [(0.25, 0.25), (0.75, 0.25)], "B": [(0.25, 0.75), (0.75, 0.75)]}
    labels = rng.choice(["A", "B"], n)
    comp = rng.integers(0, 2, n)
    xy = np.array([centres[l][c] for l, c in zip(labels, comp)]) + rng.normal(0, 0.03, (n, 2))
    frame = pd.DataFrame({"x": xy[:, 0].round(4).astype(str), "y": xy[:, 1].round(4).astype(str), "label": labels})
    means = {k: np.mean(v, axis=0) for k, v in centres.items()}
    return frame, means


@pytest.mark.slow
def test_noise_off_generator_matches_a_2d_mixture():
    rng = np.random.default_rng(5)
    schema = Schema(
        columns=(
            Column("x", "continuous", lower=0.0, upper=1.0),
            Column("y", "continuous", lower=0.0, upper=1.0),
            Column("label", "categorical", categories=("A", "B")),
        )
    )
    frame, means = mixture_frame(rng, 2000)
    noise = NoNoise(secure=False, seed=6)
    mech = DPMERF(
        schema,
        epsilon=EPS,
        delta=DELTA,
        noise=noise,
        target="label",
        features=400,
        bandwidth=0.15,
        epochs=400,
        batch_size=512,
    )
    mech.fit(TableSource.from_frame(schema, frame))
    synth = mech.sample(4000)
    assert (synth["label"] == "B").mean() == pytest.approx((frame["label"] == "B").mean(), abs=0.03)
    for label, mean in means.items():
        rows = synth[synth["label"] == label][["x", "y"]].to_numpy(float)
        np.testing.assert_allclose(rows.mean(axis=0), mean, atol=0.05)  # stated tolerance: 0.05
        # both components of the class are present (no mode dropped)
        assert 0.25 < np.mean(rows[:, 0] < 0.5) < 0.75


def test_fit_is_deterministic_given_a_seed_and_summary_round_trips():
    rng = np.random.default_rng(7)
    schema = mixed_schema()
    frame = mixed_frame(rng, 300)

    def run(seed):
        mech = DPMERF(
            schema,
            epsilon=EPS,
            delta=DELTA,
            noise=Noise.seeded(seed),
            target="label",
            features=40,
            epochs=30,
            batch_size=64,
        )
        return mech.fit(TableSource.from_frame(schema, frame))

    m1, m2 = run(9), run(9)
    pd.testing.assert_frame_equal(m1.sample(200), m2.sample(200))
    m3 = DPMERF.from_summary(
        schema,
        through_npz(m1.summary()),
        epsilon=EPS,
        delta=DELTA,
        params={"target": "label", "features": 40},
        noise=Noise.seeded(1),
    )
    m4 = DPMERF.from_summary(
        schema,
        m2.summary(),
        epsilon=EPS,
        delta=DELTA,
        params={"target": "label", "features": 40},
        noise=Noise.seeded(1),
    )
    out = m3.sample(500)
    pd.testing.assert_frame_equal(out, m4.sample(500))  # stored generator == live generator
    assert list(out.columns) == schema.names
    assert out["a"].between(0, 10).all() and out["b"].between(0, 5).all()
    assert set(out["c"]) <= {"x", "y", "z"} and set(out["label"]) <= {"no", "yes"}
    cost = m3.privacy_cost()
    assert (cost.epsilon, cost.delta, cost.guarantee) == (EPS, DELTA, "approximate")
    assert cost.details["rdp_epsilon"] <= EPS


def test_unlabeled_all_categorical_and_all_numeric_modes_run():
    rng = np.random.default_rng(8)
    frame = mixed_frame(rng, 200)
    for cols, bound in ((("c", "d", "label"), 2.0), (("a", "b"), 2.0)):
        schema = Schema(columns=tuple(c for c in mixed_schema().columns if c.name in cols))
        mech = DPMERF(schema, epsilon=EPS, delta=DELTA, noise=Noise.seeded(1), features=20, epochs=5)
        assert mech.n_releases == 1 and mech.embedding_sensitivity(200) == pytest.approx(bound / 200)
        out = mech.fit(TableSource.from_frame(schema, frame[list(cols)])).sample(50)
        assert list(out.columns) == list(cols)


def test_undersampling_reweights_only_the_released_counts():
    schema = mixed_schema()
    mech = DPMERF(schema, epsilon=EPS, delta=DELTA, noise=Noise.seeded(1), target="label", undersample=0.5)
    mech.counts = np.array([700.0, 300.0])
    np.testing.assert_allclose(mech.label_probabilities(), [350 / 650, 300 / 650])
    assert "post-processing" in " ".join(mech.privacy_cost().caveats)


@pytest.mark.parametrize(
    "params,message",
    [
        ({"target": "a"}, "target must be a categorical column, got target='a'"),
        ({"features": 3}, "features must be even (cos + sin pairs), got features=3"),
        ({"hidden": "10,x"}, "hidden must be comma-separated widths in 1..10000, got hidden='10,x'"),
        ({"target": "nope"}, "must name a kept column"),
    ],
)
def test_bad_parameters_are_rejected_with_the_value(params, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        DPMERF(mixed_schema(), epsilon=EPS, delta=DELTA, noise=Noise.seeded(1), **params)


def test_delta_is_required():
    with pytest.raises(ValueError, match="delta"):
        DPMERF(mixed_schema(), epsilon=EPS, delta=0.0)


@pytest.mark.slow
def test_cli_synthesizes_with_target(tmp_path):
    rng = np.random.default_rng(4)
    data = tmp_path / "d.csv"
    mixed_frame(rng, 200).to_csv(data, index=False)
    (tmp_path / "s.json").write_text(mixed_schema().to_json())
    out = tmp_path / "o.csv"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mechanisms",
            "synthesize",
            "dpmerf",
            "--data",
            str(data),
            "--schema",
            str(tmp_path / "s.json"),
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--rows",
            "30",
            "--param",
            "target=label",
            "--param",
            "epochs=3",
            "--param",
            "features=10",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert (info["epsilon"], info["delta"], info["rows"]) == (1.0, 1e-5, 30)
    assert len(pd.read_csv(out)) == 30
