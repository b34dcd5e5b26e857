"""The pMSE mechanism's public-input parts: near-uniform rule (no accuracy model otherwise), the release
form's caveats (``advice``), run time, steward help, measured model quality (none recorded)."""

from __future__ import annotations

from ...guidance.predictors import near_uniform_errors
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import RuntimeModel, param_or_default
from ...schema import Schema

# The one-split utility sees one direction; measured 2-way TVD 0.75-0.77 on 9 numeric columns
# (docs/benchmarks.md finding 7; also advice below).
PMSE_MAX_NUMERIC = 3


def near_uniform(s: Setting) -> str | None:
    numeric = sum(c.is_numeric for c in s.schema.kept)
    if numeric > PMSE_MAX_NUMERIC:
        return (
            f"{numeric} numeric columns: the one-split utility sees one direction and the output fills the "
            "public box (2-way TVD 0.75-0.77 on 9 columns at every epsilon, docs/benchmarks.md finding 7)"
        )
    return None


def predict_accuracy(s: Setting, params: dict) -> Errors | None:
    failure = near_uniform(s)
    return near_uniform_errors(s, failure) if failure else None


def advice(cls, schema: Schema) -> list[str]:
    """Always: what each tree mode's privacy label means, before anything is released.
    Measured in docs/benchmarks.md (finding 7): with 9 columns the one-split utility sees only the
    worst-fitted feature, the chain drifts in the other directions and the synthetic columns fill
    the public box (2-way TVD 0.75-0.77 at every epsilon, whatever the chain length)."""
    d = len([c for c in schema.columns if c.kind in cls.supported_kinds])
    privacy = (
        "Privacy: tree='strict' (the default) targets epsilon-DP and samples the target by MCMC, which "
        "only approximates it (recorded as 'mcmc', not 'pure'); tree='paper' is heuristic (greedy "
        "deeper trees break the sensitivity bound; measured epsilon 1.3 against a claimed 1) and the "
        "release is recorded as 'heuristic', not as pure epsilon-DP."
    )
    if d <= cls.WIDE:
        return [privacy]
    return [
        privacy,
        f"This schema keeps {d} numeric columns. pMSE is built for two or three: with more, its one-split "
        f"utility sees only the worst-fitted column and the synthetic values spread over the declared "
        f"bounds (measured on 9 columns: 2-way TVD 0.75 at every epsilon, docs/benchmarks.md). "
        f"Exclude columns, or prefer baseline or density-lp for marginals.",
    ]


# Every MCMC iteration (burn-in included) evaluates m synthetic sets; measured, the cost hardly grows with n
# at these sizes (2,000 -> 5,000 rows: +10 %): ``(iterations + burn_in) m d``.
DEFAULTS = {"iterations": 2000, "burn_in": 1000, "m": 5}


def work(*, n: int, schema, params: dict, epsilon: float | None = None, delta: float | None = None) -> float:
    steps = int(param_or_default(params, "iterations", DEFAULTS["iterations"])) + int(
        param_or_default(params, "burn_in", DEFAULTS["burn_in"])
    )
    return float(steps * int(param_or_default(params, "m", DEFAULTS["m"])) * max(1, len(schema.kept)))


# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md). Re-run with `--only pmse` beside two benchmark jobs.
RUNTIME = RuntimeModel(0.0, 0.00066, work)

STEWARD_HELP = {
    "tree": "'strict' keeps the proven privacy bound (use it). 'paper' fits better but its "
    "sensitivity bound can be exceeded.",
    "features": "Let the quality check also look at pairs of columns (default) or single columns only.",
    "depth": "'paper' mode only: depth of the quality check's trees. Deeper: finer check, slower.",
    "cp": "'paper' mode only: how much a split must improve the check to be kept.",
    "m": "Synthetic copies per quality check. More: steadier check, slower in proportion.",
    "releases": "Number of parameter sets released, each at a share of epsilon. More: more variety, each noisier.",
    "iterations": "Sampling steps. More: the output settles better, time in proportion. No privacy cost.",
    "burn_in": "Sampling steps thrown away at the start. More: less influence of the starting point, slower.",
    "proposal_scale": "Step size of the sampler at the start (it adapts). Rarely worth changing.",
    "column_order": "Order in which columns are modelled, comma-separated. Empty: the schema's order.",
}

MEASURED_TSTR: dict = {}  # not recorded on the benchmark tables
