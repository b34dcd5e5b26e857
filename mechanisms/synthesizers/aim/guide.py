"""AIM's public-input parts: accuracy predictor, run time and its range, steward help, measured model
quality (with and without the workload around a target)."""

from __future__ import annotations

import math

from ...guidance.predictors import PGM_SAMPLING_1WAY, REPLACE_ONE_L2, covered_sampling, gaussian_errors, zcdp_rho
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import WARM_WORKER, RuntimeModel, param_or_default
from ...schema import Schema

# Private-PGM gains and penalty (fitted on dpportal's AIM in the grid run, docs/recommend.md).
AIM_GAIN_1WAY = 0.4
AIM_GAIN = 0.15
AIM_GAIN_1WAY_START = 0.7  # 1-way gain when the rounds only measure the 1-way start (T = d; fitted)
AIM_PENALTY = 0.005  # what AIM's selected marginals leave unexplained
AIM_ROUNDS_PER_COLUMN = 16  # AIM's default number of rounds T = 16 d
AIM_PARENT_CELLS = 16.0  # AIM's cliques are larger than pairs: a column's parents beyond the pair (fitted)


def predict_accuracy(s: Setting, params: dict) -> Errors:
    """AIM: up to T = 16 d rounds (dpportal: mechanisms.synthesizers.aim.default_rounds), 90% of each round's rho
    measuring one marginal with Gaussian noise sigma = f sqrt(T / (2 x 0.9 rho)); Private-PGM's joint
    estimate removes much of it (fitted gains)."""
    from . import default_rounds  # no JAX: the mechanism loads Private-PGM inside fit only

    f = float(params.get("neighbour_factor", REPLACE_ONE_L2))
    rho = zcdp_rho(s.epsilon, s.delta)
    if params.get("max_rounds"):
        rounds = int(params["max_rounds"])
    elif f == REPLACE_ONE_L2:  # dpportal's AIM: fewer rounds when n is small for the budget: the T the
        # release will use
        rounds = default_rounds(s.n, rho, list(s.sizes))
    else:  # SmartNoise's: always the paper's 16 d
        rounds = AIM_ROUNDS_PER_COLUMN * s.d
    sigma = f * math.sqrt(rounds / (2 * 0.9 * rho))
    # the 1-way start takes d of the T rounds' budget; only the other rounds can re-measure and so let
    # the joint estimate reduce the 1-way noise: with T = d (small n for the budget) the gain is only
    # that of Private-PGM's projection of one measurement per column (AIM_GAIN_1WAY_START)
    gain_1way = AIM_GAIN_1WAY + (AIM_GAIN_1WAY_START - AIM_GAIN_1WAY) * min(1.0, s.d / rounds)
    # each round after the 1-way start measures one marginal: with T - d rounds for P candidate pairs,
    # at most (T - d) / P of them are measured (T = d: 1-way marginals and the last round only)
    pairs = max(s.d * (s.d - 1) // 2, 1)
    share = min(1.0, max(rounds - s.d, 1) / pairs)
    return gaussian_errors(
        s,
        sigma,
        (gain_1way, AIM_GAIN),
        AIM_PENALTY,
        f"Gaussian noise sigma = {sigma:.3g} per measured marginal cell ({rounds} rounds)",
        [
            f"unexplained structure {AIM_PENALTY} (gains and penalty fitted on dpportal's AIM "
            "in the grid run, docs/recommend.md)"
        ],
        sampling=covered_sampling(1.0, AIM_PARENT_CELLS) if f == REPLACE_ONE_L2 else 1.0,
        measured_share=share,
        sampling_1way=PGM_SAMPLING_1WAY if f == REPLACE_ONE_L2 else 1.0,
    )


def near_uniform(s: Setting) -> str | None:
    return None  # falls back to independent 1-way marginals, predicted above


# AIM with ``workload=target`` (every triple with the target) or ``all-3way`` is timed as all pairs: its time
# is the models it builds from the marginals it selects (at most T rounds), not the size of its candidate
# list. On the grid run (docs/data/benchmarks-grid.jsonl, two releases side by side) the 13 target releases
# took 0.4-4.7x the all-pairs estimate (the all-pairs releases on the same tables 0.5-7x), while counting the
# triples' cells over-estimated them by up to 7.6x; all-3way releases through the API took about as long as
# all pairs on the same table (docs/benchmarks/estimates.md), where counting the triples' cells had
# over-estimated them by 48x to 184x.
AIM_RHO_POWER = 0.2  # fitted with the coefficients (benchmarks/calibration/runtime_calibration.py --from-grid)
AIM_ROUNDS_POWER = 0.8  # the share of the paper's 16 d rounds that AIM runs (default_rounds in __init__.py)


def work(*, n: int, schema: Schema, params: dict, epsilon: float | None, delta: float | None) -> float:
    """AIM's time is compiling one program per model structure at small budgets and mirror descent on
    larger models at large ones (docs/mechanisms/aim.md, "Speed"). It grows with the candidates' cells
    (the workload's marginals of two columns or more, C), with the largest column (its cliques dominate
    the model, k_max), with the columns d (16 d rounds in the paper, each a program over a model of more
    cliques), with the budget (larger models before it runs out) and with the share of those rounds that
    AIM runs (fewer when n is small for the budget): ``C sqrt(k_max) d rho^0.2 (T / 16 d)^0.8``, rho from
    (epsilon, delta), epsilon 1 and delta 1e-5 when not given. The earlier form without d and with rho^0.4,
    fitted on 17 releases run alone, was off by up to 4.8x (credit_default_taiwan, 24 columns, at 1); this
    one by up to 3.1x (docs/operations.md): the range below."""
    from ...accounting import zcdp_rho
    from . import ROUNDS_PER_COLUMN, candidate_weights, default_rounds, workload_cliques

    names = schema.names
    sizes = dict(zip(names, schema.cell_sizes))
    workload = str(param_or_default(params, "workload", "all-2way"))
    if workload in ("target", "all-3way"):  # timed as all pairs (see the note above AIM_RHO_POWER)
        workload = "all-2way"
    target = params.get("target") or None
    cliques = candidate_weights(names, workload_cliques(names, workload, target))
    cells = sum(math.prod(sizes[a] for a in c) for c in cliques if len(c) >= 2) or sum(sizes.values())
    rho = zcdp_rho(float(epsilon or 1.0), float(delta or 1e-5))
    paper = ROUNDS_PER_COLUMN * len(names)
    rounds = int(param_or_default(params, "max_rounds", 0) or 0) or default_rounds(n, rho, list(sizes.values()))
    share = min(rounds, paper) / max(paper, 1)
    return float(
        cells * math.sqrt(max(sizes.values(), default=1)) * len(names) * rho**AIM_RHO_POWER * share**AIM_ROUNDS_POWER
    )


# Run time: `python -m benchmarks.calibration.runtime_calibration --from-grid --log
# docs/data/benchmarks-aim-alone.jsonl`
# (17 AIM releases run alone, one thread each, worst factor minimised; docs/operations.md). The range:
# measured / predicted on those releases (0.32-3.11), the low end a worker that has run it before (Private-PGM's
# compiled programs reused: benchmarks/calibration/estimate_accuracy.py through the API,
# docs/benchmarks/estimates.md, down
# to 0.13x of the central estimate); calibrated on tables of up to 24 columns.
RUNTIME = RuntimeModel(
    0.0,
    0.000262,
    work,
    range=(0.1, 3.2),
    calibrated_columns=24,
    range_reason="AIM chooses which marginals to measure from noisy answers on the data, so the "
    "models it builds, and its time, cannot be known from public inputs; " + WARM_WORKER,
)

STEWARD_HELP = {
    "workload": "Which combinations matter: every pair, every triple (slower), or every triple with the "
    "target column (for models that predict it).",
    "target": "The column models will predict (only for the 'target' workload).",
    "max_model_size": "Largest model in MiB. Larger: keeps more relations between columns, more time and memory.",
    "max_rounds": "Most measurement rounds. Fewer: more budget (less noise) per measurement, fewer "
    "relations captured. Empty: 16 x the number of columns, fewer when the rows are few "
    "for the budget.",
    "iters": "Fitting steps per model update. More: closer fit, time grows in proportion. No privacy cost.",
    "final_iters": "Fitting steps of the final model the rows are drawn from. More: follows the noisy "
    "measurements more closely, a little more time. No privacy cost.",
}

# Models trained on its output (TSTR ROC AUC): printed by `python -m benchmarks.calibration.tstr_reference`;
# "aim:target"
# is AIM with the workload around the target (target_params).
MEASURED_TSTR = {
    ("aim", 0.1): {
        "adult": (0.82, 0.85),
        "bank_marketing": (0.549, 0.828),
        "credit_default_taiwan": (0.656, 0.728),
        "german_credit": (0.558, 0.775),
    },
    ("aim", 1.0): {
        "adult": (0.83, 0.85),
        "bank_marketing": (0.603, 0.829),
        "credit_default_taiwan": (0.698, 0.728),
        "german_credit": (0.546, 0.775),
    },
    ("aim", 10.0): {"adult": (0.823, 0.85), "bank_marketing": (0.766, 0.829), "german_credit": (0.701, 0.775)},
    ("aim:target", 0.1): {
        "adult": (0.817, 0.85),
        "bank_marketing": (0.552, 0.829),
        "credit_default_taiwan": (0.692, 0.728),
        "german_credit": (0.464, 0.775),
    },
    ("aim:target", 1.0): {"adult": (0.833, 0.85), "bank_marketing": (0.658, 0.829), "german_credit": (0.509, 0.775)},
}
