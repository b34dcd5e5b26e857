"""DP-MERF's public-input parts: accuracy predictor, run time, steward help, measured model quality."""

from __future__ import annotations

import math

from ...guidance.predictors import SAT_PRIOR, SATURATION_1WAY, SATURATION_2WAY, gaussian_rdp_sigma, soft_cap
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import RuntimeModel, param_or_default

# columns are numeric (random Fourier features of many numeric columns); 2-way errors are a fixed
# multiple of 1-way ones (fitted: 2.2).
MERF_GAIN_1WAY = 0.25
MERF_POWER = 0.8
MERF_FLOOR_1WAY = 0.0
MERF_NUMERIC_1WAY = 0.12
MERF_2WAY_RATIO = 2.2


def predict_accuracy(s: Setting, params: dict) -> Errors:
    """Gaussian noise of std sigma x Delta on each of D embedding coordinates, Delta = 2 sqrt(2)/n
    (mixed) or 2/n; sigma DP-MERF's own RDP calibration for two releases (labelled) or one."""
    labelled = params.get("target") is not None
    sigma = gaussian_rdp_sigma(s.epsilon, s.delta, 2 if labelled else 1)
    kinds = {c.is_numeric for c in s.schema.kept}
    delta_mu = (2 * math.sqrt(2) if len(kinds) == 2 else 2) / s.n
    D = int(params.get("features") or 1000)
    x = sigma * delta_mu * math.sqrt(D)
    numeric = sum(c.is_numeric for c in s.schema.kept) / s.d
    raw = MERF_FLOOR_1WAY + MERF_NUMERIC_1WAY * numeric + MERF_GAIN_1WAY * x**MERF_POWER
    one = [soft_cap(raw, SATURATION_1WAY)] * s.d
    two = soft_cap(MERF_2WAY_RATIO * raw, SATURATION_2WAY)
    return Errors(
        one,
        lambda i, j: two,
        modelled=f"Gaussian noise multiplier {sigma:.3g} (its RDP calibration) on a {D}-feature "
        f"embedding: noise/signal {x:.3g}",
        priors=[
            f"generator error with no noise {MERF_FLOOR_1WAY} + {MERF_NUMERIC_1WAY} x the numeric "
            f"share of the columns; link {MERF_GAIN_1WAY} x (noise/signal)^{MERF_POWER}; 2-way = "
            f"{MERF_2WAY_RATIO} x 1-way (fitted on the shared tables)",
            SAT_PRIOR,
        ],
    )


def near_uniform(s: Setting) -> str | None:
    return None  # a generator trained on a noisy embedding: its error is predicted above, never uniform by rule


# The embedding ``n D`` (D random features) plus ``epochs`` Adam steps on batches of ``batch`` generated rows
# through the D features and the generator's W weights: ``epochs batch (D + WEIGHT_COST W) + n D``. The
# generator grows with the table (hidden widths 4d and 2d, an output per numeric column and per category),
# so a wide table's step costs more at the same D: on adult's rows widened from 15 to 33 columns (104 to
# 312 category levels) training took 1.28x-1.67x the CPU time of adult's (mean 1.48, three runs) at the
# same n, epochs and D (`python -m benchmarks.calibration.dpmerf_width`), which WEIGHT_COST reproduces
# (5,700 -> 31,000 weights).
BATCH = (0.1, 256, 4096)  # mirrors DPMERF's default batch: 0.1 n clipped to 256..4096
DEFAULTS = {"features": 1000, "epochs": 2000}
NOISE_DIM, MIN_HIDDEN = 10, 32  # as the generator's (mechanisms/synthesizers/dpmerf/__init__.py)
WEIGHT_COST = 0.0215  # one generator weight costs this many random features per generated row and step


def generator_weights(schema, params: dict) -> int:
    """Weights of the generator MLP from the public schema and parameters (as DPMERF builds it)."""
    target = params.get("target") or None
    kept = schema.kept
    num = [c for c in kept if c.is_numeric]
    cat = [c for c in kept if c.kind == "categorical" and c.name != target]
    classes = next((len(c.categories) for c in kept if c.name == target), 0)
    try:
        hidden = tuple(int(w) for w in str(params.get("hidden") or "").split(",") if w.strip())
    except ValueError:
        hidden = ()
    d = len(num) + len(cat)
    hidden = hidden or (max(4 * d, MIN_HIDDEN), max(2 * d, MIN_HIDDEN // 2))
    widths = [NOISE_DIM + classes, *hidden, len(num) + sum(len(c.categories) for c in cat)]
    return sum(a * b for a, b in zip(widths, widths[1:]))


def work(*, n: int, schema, params: dict, epsilon: float | None = None, delta: float | None = None) -> float:
    features = int(param_or_default(params, "features", DEFAULTS["features"]))
    epochs = int(param_or_default(params, "epochs", DEFAULTS["epochs"]))
    frac, lo, hi = BATCH
    batch = int(param_or_default(params, "batch_size", min(max(round(frac * n), lo), hi)))
    step = features + WEIGHT_COST * generator_weights(schema, params)
    return float(epochs * batch * step + n * features)


# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md); the slope divided by 1.10, the mean factor the generator's weights
# add to the work of the calibration tables (1.03 california_housing to 1.15 german_credit), so that their
# predictions stay within 6% of the fitted line's.
RUNTIME = RuntimeModel(2.17, 9.9e-09, work, threads=True)  # training uses the job's threads

STEWARD_HELP = {
    "target": "The column analysts will predict. Set it to train for that column (better models); "
    "empty to model the whole table without a label. Must be a categorical column.",
    "features": "Size of the released summary. More: captures finer structure but each number gets "
    "noisier (worse on small tables), slower training and more memory.",
    "bandwidth": "How close two rows must be to count as similar. Empty: a value from the public "
    "bounds only. Rarely worth changing.",
    "epochs": "Training steps of the generator. More: better fit to the released summary, time "
    "grows in proportion. No privacy cost.",
    "batch_size": "Rows generated per training step. Larger: steadier training, more memory and "
    "time per step. Empty: set from the table size.",
    "hidden": "Size of the generator network, e.g. '200,100'. Larger: can fit more complex tables, "
    "slower. Empty: set from the number of columns.",
    "undersample": "Balance the labels in the output: below 1 keeps fewer rows of the largest class. No privacy cost.",
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`.
MEASURED_TSTR = {
    ("dpmerf", 0.1): {
        "adult": (0.737, 0.85),
        "bank_marketing": (0.518, 0.826),
        "credit_default_taiwan": (0.527, 0.712),
        "german_credit": (0.511, 0.775),
    },
    ("dpmerf", 1.0): {
        "adult": (0.816, 0.85),
        "bank_marketing": (0.572, 0.826),
        "credit_default_taiwan": (0.641, 0.712),
        "german_credit": (0.53, 0.775),
    },
    ("dpmerf", 10.0): {
        "adult": (0.818, 0.85),
        "bank_marketing": (0.715, 0.826),
        "credit_default_taiwan": (0.674, 0.712),
        "german_credit": (0.713, 0.775),
    },
}
