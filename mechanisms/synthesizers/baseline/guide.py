"""The baseline's public-input parts: accuracy predictor, run time, steward help, measured model quality."""

from __future__ import annotations

from ...guidance.predictors import predict_independent_histograms
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import RuntimeModel
from ...guidance.steward_help import NOISE_TYPE_HELP


def predict_accuracy(s: Setting, params: dict) -> Errors:
    return predict_independent_histograms(s, params)


def near_uniform(s: Setting) -> str | None:
    return None  # one noisy histogram per column: never swamped by the joint domain


# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md).
RUNTIME = RuntimeModel(0.649, 4.67e-07)  # one pass over the table per column: ``n d``

STEWARD_HELP = {
    "noise_type": NOISE_TYPE_HELP,
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`.
MEASURED_TSTR = {
    ("baseline", 0.1): {
        "adult": (0.517, 0.85),
        "bank_marketing": (0.512, 0.829),
        "credit_default_taiwan": (0.506, 0.728),
        "german_credit": (0.485, 0.775),
    },
    ("baseline", 1.0): {
        "adult": (0.447, 0.85),
        "bank_marketing": (0.476, 0.828),
        "credit_default_taiwan": (0.481, 0.712),
        "german_credit": (0.472, 0.775),
    },
    ("baseline", 10.0): {
        "adult": (0.496, 0.85),
        "bank_marketing": (0.529, 0.828),
        "credit_default_taiwan": (0.495, 0.72),
        "german_credit": (0.469, 0.775),
    },
}
