"""PrivHP's public-input parts: accuracy predictor and near-uniform rule (shared with every partition of
the joint domain), run time, steward help, measured model quality. Its memory plan is the mechanism's own
(``PrivHP.plan_for``, ``PrivHP.memory_parts``)."""

from __future__ import annotations

from ...guidance.predictors import joint_domain_failure, predict_joint_histogram
from ...guidance.runtime import RuntimeModel

predict_accuracy = predict_joint_histogram
near_uniform = joint_domain_failure

# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md).
RUNTIME = RuntimeModel(0.744, 1.52e-06)  # one pass over the table per column: ``n d``

STEWARD_HELP = {
    "memory_mb": "Memory the summary may use, in MiB. More: keeps more detail, in proportion. The "
    "table itself is read in chunks and never held whole.",
    "depth": "How many times the domain is halved. Deeper: finer detail, each level noisier. Empty: "
    "set from n and epsilon.",
    "pruning_level": "Levels kept exactly; deeper ones are approximated to save memory. Empty: set "
    "from the memory budget.",
    "k": "Dense regions kept per approximated level. More: more detail, more memory. Empty: set "
    "from the memory budget.",
    "width": "Size of the approximate counters. Wider: more accurate, more memory. Empty: set from the memory budget.",
    "sketch_depth": "Rows of the approximate counters. More: fewer collisions, more memory and "
    "time. Empty: set from n and epsilon.",
    "chunk_rows": "Rows read at a time. Larger: faster reading, more working memory. No accuracy or privacy effect.",
}

# What each part of the memory plan is, for the steward (memory_model in __init__.py).
MEMORY_PARTS = {
    "structure": "noisy counters and sketches (set by memory_mb)",
    "tree": "the output tree kept for sampling (set by memory_mb)",
    "growth": "temporaries while the tree is grown",
    "chunk": "one chunk of rows being read (set by chunk_rows and the number of columns, not by memory_mb)",
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`.
MEASURED_TSTR = {
    ("privhp", 0.1): {
        "adult": (0.574, 0.85),
        "bank_marketing": (0.545, 0.826),
        "credit_default_taiwan": (0.516, 0.712),
        "german_credit": (0.496, 0.775),
    },
    ("privhp", 1.0): {
        "adult": (0.758, 0.85),
        "bank_marketing": (0.501, 0.826),
        "credit_default_taiwan": (0.511, 0.712),
        "german_credit": (0.522, 0.775),
    },
    ("privhp", 10.0): {
        "adult": (0.776, 0.85),
        "bank_marketing": (0.523, 0.826),
        "credit_default_taiwan": (0.483, 0.712),
        "german_credit": (0.569, 0.775),
    },
}
