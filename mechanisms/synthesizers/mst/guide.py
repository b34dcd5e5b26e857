"""MST's public-input parts: accuracy predictor, run time and its range, steward help, measured model
quality."""

from __future__ import annotations

import math

from ...guidance.predictors import (
    GAUSSIAN,
    PGM_SAMPLING_1WAY,
    REPLACE_ONE_L2,
    covered_sampling,
    gaussian_errors,
    predict_independent_histograms,
    zcdp_rho,
)
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import WARM_WORKER, RuntimeModel, rows_times_columns

# Private-PGM gains and off-tree penalty (fitted: python -m benchmarks.calibration.recommend_calibration --fit,
# docs/recommend.md).
MST_GAIN_1WAY = 0.6
MST_GAIN = 0.3
MST_TREE_PENALTY = 0.02  # pairs off the spanning tree are implied by conditional independence (finding 3)


def predict_accuracy(s: Setting, params: dict) -> Errors:
    """MST (mechanisms/synthesizers/mst/): a third of rho measures the d 1-way marginals, sigma_1 = sqrt(d / (rho/3))
    under replace-one (L2 sensitivity sqrt(2) per marginal), a third the d - 1 tree pairs,
    sigma_2 = sqrt((d - 1) / (rho/3)); add/remove (SmartNoise) is 1/sqrt(2) of that.

    With key columns (:func:`_with_key_columns`) the pairs' share is spread over more pairs."""
    f = float(params.get("neighbour_factor", REPLACE_ONE_L2))
    rho = zcdp_rho(s.epsilon, s.delta)
    keys = _key_columns(s, params)
    conditioned = _conditioned(s, params)
    if f == REPLACE_ONE_L2 and params.get("tree", "auto") == "auto":
        from . import tree_is_informative  # no JAX: the mechanism loads Private-PGM inside fit only

        # MST measures the 1-way marginals only
        positions = _key_positions(s, params)
        if not tree_is_informative(
            s.n, rho, list(s.sizes), keys=keys, conditioned=conditioned, key_positions=positions
        ):
            e = predict_independent_histograms(s, {"noise_type": GAUSSIAN})
            return Errors(
                e.one_way,
                e.two_way,
                modelled=f"too few rows for the budget to measure column pairs: 1-way marginals only ({e.modelled})",
                priors=e.priors,
            )
    if keys and f == REPLACE_ONE_L2 and s.d > 1:
        return _with_key_columns(s, rho, keys, conditioned)
    sigma = f * math.sqrt(max(s.d, 1) / (2 * rho / 3))
    return gaussian_errors(
        s,
        sigma,
        (MST_GAIN_1WAY, MST_GAIN),
        MST_TREE_PENALTY,
        f"Gaussian noise sigma = {sigma:.3g} on every 1-way cell and tree pair",
        [f"off-tree pairs: conditional-independence penalty {MST_TREE_PENALTY}"],
        sampling=covered_sampling(min(1.0, (s.d - 1) / max(s.d * (s.d - 1) / 2, 1)))
        if f == REPLACE_ONE_L2
        else 1.0,  # the tree's d - 1 pairs are its cliques
        sampling_1way=PGM_SAMPLING_1WAY if f == REPLACE_ONE_L2 else 1.0,
    )


def _key_columns(s: Setting, params: dict) -> int:
    """How many key columns ``params`` names (a list or a comma-separated string, validated as the release is)."""
    from . import MST

    spec = next(p for p in MST.params if p.name == "key_columns")
    return len(spec.coerce(params.get("key_columns"), s.schema))


def _key_positions(s: Setting, params: dict) -> tuple[int, ...]:
    """The key columns' positions among the schema's kept columns."""
    from . import MST

    spec = next(p for p in MST.params if p.name == "key_columns")
    return tuple(s.schema.names.index(a) for a in spec.coerce(params.get("key_columns"), s.schema))


def _conditioned(s: Setting, params: dict) -> bool:
    """Whether the release measures the tree with the key columns attached (mst.tree_conditioned)."""
    from . import MST, tree_conditioned

    keys = next(p for p in MST.params if p.name == "key_columns").coerce(params.get("key_columns"), s.schema)
    key_in_tree = next(p for p in MST.params if p.name == "key_in_tree")
    return tree_conditioned(s.schema, keys, key_in_tree.coerce(params.get("key_in_tree", True), s.schema))


def _with_key_columns(s: Setting, rho: float, keys: int, conditioned: bool = False) -> Errors:
    """Roughly: the 1-way marginals keep sigma_1 = sqrt(d / (rho/parts)); the m tree and key pairs
    (mst.measured_pairs) share the pairs' part, sigma_2 = sqrt(m / (rho/parts)), and that larger sigma is
    predicted on every pair, with m pairs inside the model's cliques for the sampling share. With the tree
    ``conditioned`` on the key columns the key pairs and the tree have their own shares (mst.KEY_TREE_SHARES): the
    larger of their two sigmas is sigma_2. The off-tree penalty stays on every pair: the smaller error of the key pairs
    themselves (measured, not implied) is not modelled, so the prediction is pessimistic about them."""
    from . import KEY_TREE_SHARES, budget_parts, measured_pairs

    parts = budget_parts(s.d, keys, conditioned)
    m = sum(measured_pairs(s.d, keys))
    sigma1 = REPLACE_ONE_L2 * math.sqrt(s.d / (2 * rho / parts))
    if conditioned:
        tree, key_pairs = measured_pairs(s.d, keys)
        per_rho = max(key_pairs / KEY_TREE_SHARES[1], tree / KEY_TREE_SHARES[3])
        sigma2 = REPLACE_ONE_L2 * math.sqrt(per_rho / (2 * rho))
    else:
        sigma2 = REPLACE_ONE_L2 * math.sqrt(m / (2 * rho / parts))
    note = f"Gaussian noise sigma = {sigma1:.3g} on every 1-way cell, {sigma2:.3g} on the {m} tree and key pairs"
    priors = [f"off-tree pairs: conditional-independence penalty {MST_TREE_PENALTY}"]
    two = gaussian_errors(
        s,
        sigma2,
        (MST_GAIN_1WAY, MST_GAIN),
        MST_TREE_PENALTY,
        note,
        priors,
        sampling=covered_sampling(min(1.0, m / (s.d * (s.d - 1) / 2))),
        sampling_1way=PGM_SAMPLING_1WAY,
    )
    one = gaussian_errors(
        s, sigma1, (MST_GAIN_1WAY, MST_GAIN), MST_TREE_PENALTY, note, priors, sampling_1way=PGM_SAMPLING_1WAY
    )
    return Errors(one.one_way, two.two_way, modelled=note, priors=two.priors)


def near_uniform(s: Setting) -> str | None:
    return None  # falls back to independent 1-way marginals, predicted above


# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md).
# Mostly compiling and estimating (5-8 s for 1,000-32,561 rows): ``n d`` with a large intercept. The range:
# measured / predicted on its calibration releases, the low end a worker that has run it before (Private-PGM's
# compiled programs reused: benchmarks/calibration/estimate_accuracy.py through the API, docs/benchmarks/estimates.md,
# three runs: 0.19x-0.98x of the central estimate); calibrated on tables of up to 21 columns, and checked on a
# 39-column table (python -m benchmarks.system.relations, docs/benchmarks/relations.md): 15,000 rows 9.2-9.3 s
# against 7.2 s predicted alone on the machine (1.3x), 1,000,000 rows 58.4 s against 61.4 s.
RUNTIME_A, RUNTIME_B = 6.4, 1.41e-06
# Key columns: the key pairs' model is estimated once more to choose the tree, and the model's cliques hold the
# key columns; measured `python -m benchmarks.system.relations --runs mst:key_columns=adult_income mst` (credit_adult,
# 15,000 x 39, income as key column, its tree measured given it): 25.8 s against 11.2 s for plain MST in the same
# run (selection 8.0 s against 0.0, estimation 16.1 s against 9.0). One table: the factor is not calibrated beyond it.
KEY_COLUMNS_TIME_FACTOR = 2.3


def mst_work(*, n: int, schema, params: dict, epsilon: float | None = None, delta: float | None = None) -> float:
    """``n d``; with key columns, the work that makes the whole estimate ``KEY_COLUMNS_TIME_FACTOR`` times
    plain MST's (the intercept included: f (a + b n d) = a + b (f n d + (f - 1) a / b))."""
    w = rows_times_columns(n=n, schema=schema, params=params)
    keys = params.get("key_columns") or ()
    if isinstance(keys, str):
        keys = [k for k in keys.split(",") if k.strip()]
    if not keys:
        return w
    f = KEY_COLUMNS_TIME_FACTOR
    return f * w + (f - 1) * RUNTIME_A / RUNTIME_B


RUNTIME = RuntimeModel(
    RUNTIME_A,
    RUNTIME_B,
    work=mst_work,
    range=(0.15, 1.5),
    calibrated_columns=39,
    range_reason="MST's time is mostly compiling Private-PGM's programs: " + WARM_WORKER,
)

STEWARD_HELP = {
    "iters": "Fitting steps of the final model. More: follows the noisy measurements more closely, time "
    "grows in proportion. No privacy cost.",
    "tree": "Whether to measure pairs of columns. Auto: only when the rows are enough for this budget to "
    "tell pairs from noise (else all the budget goes to single columns, which is more accurate "
    "then). Always: the paper's split, a third each to columns, choosing pairs and pairs.",
    "compress": "Merge rare values of each column before measuring pairs: less noise on the pairs; rare "
    "values are then drawn evenly among themselves. No privacy cost.",
    "key_columns": "Up to 3 columns, comma-separated (e.g. the label), whose relation to every other column is "
    "kept: each such pair is measured, not only the tree's. More pairs share the same budget, so each "
    "is a little noisier; the model grows with the key columns' categories (time and memory), and a "
    "model too large is refused before any budget is spent. No extra privacy cost.",
    "key_in_tree": "With key columns of at most 16 categories together (e.g. a yes/no label): the tree of the "
    "other columns is chosen and measured together with the key columns, so how each pair of columns relates "
    "within each key value is kept (better for models predicting the key column). A quarter of the budget each "
    "to single columns, the key pairs, choosing the tree and the tree. Off: the tree's pairs alone. No extra "
    "privacy cost.",
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`.
MEASURED_TSTR = {
    ("mst", 0.1): {
        "adult": (0.692, 0.85),
        "bank_marketing": (0.523, 0.829),
        "credit_default_taiwan": (0.641, 0.728),
        "german_credit": (0.54, 0.775),
    },
    ("mst", 1.0): {
        "adult": (0.752, 0.85),
        "bank_marketing": (0.68, 0.829),
        "credit_default_taiwan": (0.666, 0.728),
        "german_credit": (0.569, 0.775),
    },
    ("mst", 10.0): {
        "adult": (0.779, 0.85),
        "bank_marketing": (0.697, 0.829),
        "credit_default_taiwan": (0.657, 0.728),
        "german_credit": (0.653, 0.775),
    },
}
