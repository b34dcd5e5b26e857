"""The tables release's public-input parts: accuracy of its synthetic file for the default tables (the tables'
own errors are exact and printed with each table: every cell's standard error follows from the schema, the
tables, epsilon and delta alone), run time, steward help, measured model quality (none yet)."""

from __future__ import annotations

from ..guidance.predictors import predict_independent_histograms
from ..guidance.purposes import Errors, Setting
from ..guidance.runtime import RuntimeModel


def predict_accuracy(s: Setting, params: dict) -> Errors | None:
    """The synthetic file's accuracy for the default tables (every column on its own: independent columns
    from Gaussian 1-way measurements) as the baseline's Gaussian mode predicts it (ResidualPlanner's 1-way
    residuals are at most as noisy: conservative). Named tables: no model of the file's accuracy (None); the
    tables' own errors are exact and printed with each table."""
    if str(params.get("tables") or "").strip():
        return None
    return predict_independent_histograms(s, {**params, "noise_type": "gaussian"})


def near_uniform(s: Setting) -> str | None:
    return None


# Run time: one pass over the table per residual, then Private-PGM's estimate for the synthetic file (compiling
# dominates, as MST's). Not calibrated by benchmarks.calibration.runtime_calibration: MST's coefficients, whose
# estimate is of the same kind (a few cliques, 1,000 iterations), stand in.
RUNTIME = RuntimeModel(6.4, 1.41e-06, calibrated=False)

STEWARD_HELP = {
    "tables": "The crosstabs to publish, 1 to 3 columns each: tables separated by ';', columns by ',' (e.g. "
    "'sex,income;age/5,education'). 'age/5' groups a numeric column's cells 5 at a time. Empty: every column "
    "on its own. More tables share the budget: each cell gets a little noisier, but tables with shared columns "
    "share their measurements (the shared margins are measured once).",
    "nonnegative": "Publish counts that are never negative (the consistent model's tables, which the synthetic "
    "file reproduces); the intervals stay those of the unbiased estimate. No privacy cost.",
    "iters": "Fitting steps of the model the synthetic file (and non-negative tables) come from. No privacy cost.",
}

MEASURED_TSTR: dict = {}  # not a synthetic-data mechanism for model training: nothing measured
