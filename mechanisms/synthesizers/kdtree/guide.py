"""KDTreeGrid's and KDTreeAdaptive's public-input parts: accuracy predictor and near-uniform rule (shared
with every partition of the joint domain), run time, steward help, measured model quality."""

from __future__ import annotations

from ...guidance.predictors import joint_domain_failure, predict_joint_histogram
from ...guidance.runtime import RuntimeModel

predict_accuracy = predict_joint_histogram
near_uniform = joint_domain_failure

# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md).
GRID_RUNTIME = RuntimeModel(0.694, 7.34e-07)  # one pass over the table per column: ``n d``
ADAPTIVE_RUNTIME = RuntimeModel(0.711, 7.21e-07)

COMMON_HELP = {
    "threshold": "Cells with fewer noisy rows than this are dropped. Higher: less noise kept, fewer rare "
    "combinations. Leave empty: the paper's value for this epsilon. No effect on time.",
    "beta": "How cautious the automatic settings are. Smaller: coarser cells, more stable but blurrier output. "
    "Does not change the privacy guarantee.",
    "placement": "Where synthetic rows go inside their cell: spread out (uniform) or at the centre. Centre "
    "repeats values; uniform looks more natural. No privacy or time effect.",
}

GRID_HELP = {
    "width": "Cell size as a share of each numeric column's range. Smaller: more detail but "
    "more cells, each noisier, more memory. Empty: the paper's value for this table.",
    **COMMON_HELP,
}

ADAPTIVE_HELP = {
    "split": "Share of epsilon spent on deciding where to cut; the rest on counting rows "
    "in the final cells. The default (half) suits most tables.",
    "levels_independent": "Cuts made without looking at the data. More: finer starting "
    "cells, more memory. Empty: the paper's value.",
    "levels_adaptive": "Cuts made where the data is dense. More: finer detail where rows "
    "are, each decision noisier. Empty: a safe default.",
    "tau": "How many noisy rows a cell needs before it is cut further. Empty: the paper's value.",
    **COMMON_HELP,
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`.
GRID_TSTR = {
    ("kdtree-grid", 0.1): {
        "adult": (0.472, 0.85),
        "bank_marketing": (0.54, 0.826),
        "credit_default_taiwan": (0.496, 0.712),
        "german_credit": (0.526, 0.775),
    },
    ("kdtree-grid", 1.0): {
        "adult": (0.635, 0.85),
        "bank_marketing": (0.514, 0.826),
        "credit_default_taiwan": (0.519, 0.712),
        "german_credit": (0.539, 0.775),
    },
    ("kdtree-grid", 10.0): {
        "adult": (0.825, 0.85),
        "credit_default_taiwan": (0.502, 0.712),
        "german_credit": (0.541, 0.775),
    },
}
ADAPTIVE_TSTR = {
    ("kdtree-adaptive", 0.1): {
        "adult": (0.512, 0.85),
        "bank_marketing": (0.503, 0.826),
        "credit_default_taiwan": (0.502, 0.712),
        "german_credit": (0.464, 0.775),
    },
    ("kdtree-adaptive", 1.0): {
        "adult": (0.583, 0.85),
        "bank_marketing": (0.556, 0.826),
        "credit_default_taiwan": (0.547, 0.712),
        "german_credit": (0.487, 0.775),
    },
    ("kdtree-adaptive", 10.0): {
        "adult": (0.824, 0.85),
        "credit_default_taiwan": (0.662, 0.712),
        "german_credit": (0.538, 0.775),
    },
}
