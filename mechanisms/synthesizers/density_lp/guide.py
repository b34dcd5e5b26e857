"""The density LP's public-input parts: accuracy predictor, run time (from its own plan), steward help,
measured model quality."""

from __future__ import annotations

import math

from ...guidance.predictors import (
    SAT_PRIOR,
    SATURATION_1WAY,
    SATURATION_2WAY,
    count_noise,
    independent_columns,
    noise_tvd,
    rss,
    sampling_tvd,
    soft_cap,
)
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import RuntimeModel
from ...guidance.steward_help import NOISE_TYPE_HELP

# density-lp: the LP fits all 1- and 2-way tables jointly, so its error per cell is a fraction of the
# noise per cell (consistency across the T tables removes part of it). Fitted on the shared tables'
# benchmark (docs/recommend.md): error = LP_GAIN x noise TVD ^ LP_POWER + LP_FLOOR.
LP_GAIN = 0.16  # 1-way (at d = LP_WIDTH_REF columns)
LP_GAIN_2WAY = 0.1  # 2-way cells: the LP's consistency across overlapping tables removes more noise there
LP_POWER = 0.5
LP_FLOOR_1WAY = 0.002
LP_FLOOR_2WAY = 0.03
# A column's 1-way marginal is constrained by its own table and by the d - 1 pair tables that contain it:
# the wider the table, the more noisy views of it the LP reconciles (d independent views would divide the
# noise by sqrt(d): power 0.5). The 1-way gain is scaled by (LP_WIDTH_REF / d) ^ LP_WIDTH_POWER, the power
# fitted on the shared tables' run (grid 0-1: 0.6). Without it, 1-way predictions are
# 1.35-2.1x the measured error on the widest tables (bank_marketing 17 columns, credit_default_taiwan 24)
# and 0.7x on the 9-column california_housing_numeric.
LP_WIDTH_REF = 10
LP_WIDTH_POWER = 0.6


def predict_accuracy(s: Setting, params: dict) -> Errors:
    """Every 1- and 2-way marginal count gets discrete Laplace of scale 2T/eps_lp, T = d + d(d-1)/2
    tables, eps_lp = (1 - split) epsilon (the reference measure takes the rest; 'uniform' takes none)."""
    degree = int(params.get("degree") or 2)
    split = float(params.get("split") or 0.5)
    if params.get("reference") == "uniform":
        split = 0.0
    d = s.d
    T = sum(math.comb(d, k) for k in range(1, min(degree, d) + 1))
    b, note = count_noise(s, params, tables=T, epsilon=(1 - split) * s.epsilon, rho_share=1 - split)
    sizes = s.sizes

    def link(raw: float, gain: float, floor: float, sat: float) -> float:
        return soft_cap(gain * raw**LP_POWER + floor, sat)

    # the LP reweights points drawn from the reference measure: with a product reference (the d noisy
    # 1-way marginals, split of the budget; what 'auto' picks beyond HISTOGRAM_MAX_CELLS joint cells), once
    # the LP's own noise swamps a table (noise TVD >= 1: more noise than records) its error there is that
    # reference's or worse (measured: german_credit at 0.1, Gaussian mode, 2-way 0.55); the floor is
    # phased in with the noise TVD, so where the LP's tables are informative it corrects the reference
    from . import HISTOGRAM_MAX_CELLS  # the mechanism's own rule (imported here: scipy)

    product = split > 0 and (
        params.get("reference") == "product"
        or (params.get("reference", "auto") == "auto" and math.prod(sizes) > HISTOGRAM_MAX_CELLS)
    )
    if product:
        b_ref, _ = count_noise(s, params, tables=d, epsilon=split * s.epsilon, rho_share=split)
        ref = [soft_cap(rss(noise_tvd(k, b_ref, s.n), sampling_tvd(k, s.n)), SATURATION_1WAY) for k in sizes]
        ref_two = independent_columns(s, ref)

    def floored(raw: float, lp: float, ref: float) -> float:
        return lp + min(raw, 1.0) * max(ref - lp, 0.0) if product else lp

    raw_one = [noise_tvd(k, b, s.n) for k in sizes]
    gain_one = LP_GAIN * (LP_WIDTH_REF / d) ** LP_WIDTH_POWER
    one = [
        floored(raw, link(raw, gain_one, LP_FLOOR_1WAY, SATURATION_1WAY), ref[i] if product else 0.0)
        for i, raw in enumerate(raw_one)
    ]

    def two_way(i: int, j: int) -> float:
        if degree < 2:
            return independent_columns(s, one)(i, j)
        raw = noise_tvd(sizes[i] * sizes[j], b, s.n)
        lp = link(raw, LP_GAIN_2WAY, LP_FLOOR_2WAY, SATURATION_2WAY)
        return floored(raw, lp, ref_two(i, j) if product else 0.0)

    return Errors(
        one,
        two_way,
        modelled=f"{note} on every marginal cell (T = {T} tables)"
        + (f"; floored by its product reference ({split:g} of the budget) where that noise swamps" if product else ""),
        priors=[
            f"LP consistency gain: error = {LP_GAIN} x ({LP_WIDTH_REF}/d)^{LP_WIDTH_POWER} (1-way) / "
            f"{LP_GAIN_2WAY} (2-way) x (noise "
            f"TVD)^{LP_POWER} + floor {LP_FLOOR_1WAY}/{LP_FLOOR_2WAY} (fitted on the shared tables)",
            SAT_PRIOR,
        ],
    )


# dpmerf: the released embedding's noise relative to its unit-norm signal, sigma x Delta x sqrt(D),
# maps to TVD through a link fitted on the shared tables; the floor is the generator's error with
# no noise (measured 0.04-0.13 1-way at epsilon 10: model capacity, not privacy), larger when most


def near_uniform(s: Setting) -> str | None:
    return None  # fits the 1- and 2-way marginals, not the joint domain


def work(*, n: int, schema, params: dict, epsilon: float | None = None, delta: float | None = None) -> float:
    """The LP dominates; its size is the number of nonzeros, m reference points times the number of
    marginal tables (both public: the mechanism's own plan from the schema and parameters): ``m tables``."""
    from . import DensityLP  # its plan (m, tables) is pure: computed from the schema alone

    plan = DensityLP(schema, epsilon=1.0, **{k: v for k, v in params.items() if v not in (None, "")})
    return float(plan.m * len(plan.tables))


# Run time: `python -m benchmarks.calibration.runtime_calibration` (23 November 2026, the 2-core machine with nothing
# else running; table in docs/operations.md).
RUNTIME = RuntimeModel(13.4, 0.0, work)  # 10-18 s for every LP size measured: the slope fitted to 0

STEWARD_HELP = {
    "noise_type": NOISE_TYPE_HELP,
    "reference": "Where candidate rows come from. 'auto' picks for you. 'uniform' spends no budget "
    "on it but needs more candidates; others spend part of epsilon (see split).",
    "degree": "Which column combinations are kept: 2 keeps every pair. 3 keeps triples but "
    "spreads the budget over many more tables (more noise per table) and takes much "
    "longer.",
    "split": "Share of epsilon spent on the candidate rows; the rest on the kept column "
    "combinations. The default (half) suits most tables.",
    "m": "Number of candidate rows the solver weighs. More: finer output, longer solve and more "
    "memory. Empty: set from the table size.",
    "lattice": "Only for all-numeric tables of up to 3 columns: resolution of the smoothed "
    "density. Finer: more detail and more noise.",
    "bandwidth": "Only for all-numeric tables of up to 3 columns: smoothing width. Wider: smoother, less detail.",
    "tie_break": "Spend 3-4x the solve time for slightly better average accuracy over combinations. No privacy cost.",
    "bernstein_order": "Only for the smoothed density: higher order follows the data's shape "
    "more closely but can add artefacts. 1 is safe.",
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`.
MEASURED_TSTR = {
    ("density-lp", 0.1): {
        "adult": (0.508, 0.85),
        "bank_marketing": (0.527, 0.828),
        "credit_default_taiwan": (0.496, 0.72),
        "german_credit": (0.491, 0.775),
    },
    ("density-lp", 1.0): {
        "adult": (0.629, 0.85),
        "bank_marketing": (0.509, 0.826),
        "credit_default_taiwan": (0.503, 0.712),
        "german_credit": (0.509, 0.775),
    },
    ("density-lp", 10.0): {
        "adult": (0.787, 0.85),
        "bank_marketing": (0.518, 0.826),
        "credit_default_taiwan": (0.598, 0.712),
        "german_credit": (0.515, 0.775),
    },
}
