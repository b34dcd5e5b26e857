"""AIM's public-input parts: accuracy predictor, run time and its range, steward help, measured model
quality (with and without the workload around a target)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ...guidance.predictors import PGM_SAMPLING_1WAY, REPLACE_ONE_L2, covered_sampling, gaussian_errors, zcdp_rho
from ...guidance.purposes import Errors, Setting
from ...guidance.runtime import RuntimeModel, param_or_default
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

    f = float(params.get("neighbour_factor", REPLACE_ONE_L2))
    rho = zcdp_rho(s.epsilon, s.delta)
    if params.get("max_rounds"):
        rounds = int(params["max_rounds"])
    elif f == REPLACE_ONE_L2:  # dpportal's AIM: the paper's T, fewer when n is small for the budget. The gains were
        # fitted on releases of the paper's plan; the time-budgeted plan (guide.plan: a smaller T in a few rounds)
        # measured the same or closer relations (docs/mechanisms/aim.md, "Time budget"), so this stays conservative
        from . import default_rounds

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


def work(*, n: int, schema: Schema, params: dict, epsilon: float | None, delta: float | None) -> float:
    """AIM's predicted seconds on one worker thread: the plan's (:func:`plan`), which fits the release in its time
    budget by design. A paper plan is predicted with all its rounds (none annealed), an upper bound: annealing
    usually ends it sooner (the range below says how much)."""
    return plan(n=n, schema=schema, params=params, epsilon=float(epsilon or 1.0), delta=float(delta or 1e-5)).seconds


# Measured / predicted on the calibration releases (python -m benchmarks.calibration.aim_plan --fit: 0.45x to 1.21x,
# docs/mechanisms/aim.md, "Time budget"), on tables of up to 41 columns.
RUNTIME = RuntimeModel(
    0.0,
    1.0,
    work,
    range=(0.4, 1.2),
    calibrated_columns=100,  # the time budget bounds the plan whatever the width (measured up to 41 columns)
    range_reason="AIM stops early when its measurements show the model already knows the table (annealing), "
    "and its time budget bounds it by design",
)

STEWARD_HELP = {
    "workload": "Which combinations matter: every pair, every triple (slower), or every triple with the "
    "target column (for models that predict it).",
    "target": "The column models will predict (only for the 'target' workload).",
    "max_model_size": "Largest model in MiB. Larger: keeps more relations between columns, more time and memory.",
    "max_rounds": "Most measurement rounds. Fewer: more budget (less noise) per measurement, fewer "
    "relations captured. Empty: 16 x the number of columns, fewer when the rows are few "
    "for the budget.",
    "time_budget": "Seconds the release is planned to take. AIM measures several marginals per round, in as many "
    "rounds as fit, and keeps its model within 2 MiB per minute. More: more rounds that adapt to what the model "
    "already knows, and a larger model (large tables, large epsilon).",
    "estimates": "Rounds of selection, each ending with one model update. Fewer: faster, more marginals chosen at "
    "once per round. Empty: as many as fit the time budget.",
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


# The plan's cost model: seconds on one worker thread of the 2-core development machine, from public inputs only.
# Fitted by ``python -m benchmarks.calibration.aim_plan --fit`` on the releases in docs/data/aim-plan.jsonl (each
# stage of a fit timed: the start, every round, the final estimate), which prints the constants and the predicted
# against measured seconds of every release (docs/mechanisms/aim.md, "Time budget").
PLAN_START = (0.039, 0.0293)  # seconds: fixed, per column (the 1-way measurements and the first estimate)
PLAN_COUNT = 0.0036  # seconds per million (row x candidate): exact counts of every candidate, once (from the
# 1M-row run: the calibration tables are too small for it to show)
PLAN_ROUND = (0.0, 0.001118, 0.0213)  # per round: fixed, per candidate scored, per measured marginal in the model
PLAN_FINAL = (0.0, 0.0539)  # the final estimate: fixed, per measured marginal
# seconds per row and column: reading the table into cells before the fit, drawing and decoding as many rows after
# it (1M rows of a 39-column table: 30 s of a 63 s release, python -m benchmarks.system.relations --resample 1000000)
PLAN_ROW_COLUMN = 7.7e-7


@dataclass(frozen=True)
class Plan:
    """AIM's rounds for one release, from public inputs only: ``units`` is T (each measurement of a round gets
    0.9 rho / T, the 1-way start takes d of them), ``estimates`` the selection rounds (each ends with one model
    estimate, the last with the final one; at most, when the time budget decides them during the fit: fewer rounds
    select more marginals each when the model is larger than planned), ``fixed_estimates`` whether the steward set
    them, ``batched`` whether a round selects several marginals, ``seconds``
    the predicted time on one worker thread and ``paper_seconds`` that of the paper's plan (one marginal per
    round, T - d rounds, none annealed: an upper bound on its rounds)."""

    units: int
    estimates: int
    batched: bool
    fixed_estimates: bool
    seconds: float
    paper_seconds: float
    time_budget: float
    model_mib: float = 80.0

    def to_dict(self) -> dict:
        return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def start_seconds(*, n: int, d: int, candidates: int) -> float:
    """Predicted seconds of the start (1-way marginals, the first estimate) and of counting every candidate."""
    return PLAN_START[0] + PLAN_START[1] * d + PLAN_COUNT * n * candidates / 1e6


def rest_seconds(*, candidates: int, cliques: int, picks: int, rounds: int) -> float:
    """Predicted seconds of ``rounds`` more rounds selecting ``picks`` marginals in all (spread evenly) on a model
    of ``cliques`` measured marginals, and of the final estimate."""
    fixed, per_candidate, per_clique = PLAN_ROUND
    total = sum(
        fixed + per_candidate * candidates + per_clique * (cliques + picks * r / rounds) for r in range(1, rounds + 1)
    )
    return total + PLAN_FINAL[0] + PLAN_FINAL[1] * (cliques + picks)


def rounds_that_fit(seconds: float, *, candidates: int, cliques: int, picks: int, most: int) -> int:
    """The most rounds (at least 1, at most ``most``) whose :func:`rest_seconds` fit in ``seconds``."""
    lo, hi = 1, max(1, most)
    while lo < hi:  # rest_seconds grows with the rounds
        mid = (lo + hi + 1) // 2
        if rest_seconds(candidates=candidates, cliques=cliques, picks=picks, rounds=mid) <= seconds:
            lo = mid
        else:
            hi = mid - 1
    return lo


def plan_seconds(*, n: int, d: int, candidates: int, units: int, estimates: int) -> float:
    """Predicted seconds of a release with T = ``units`` and ``estimates`` selection rounds (PLAN_* constants):
    reading and drawing the rows, the start, exact counts of the candidates, each round scoring every candidate
    and re-estimating a model with the marginals measured so far (picks spread evenly over the rounds), the final
    estimate."""
    picks = max(units - d, 0)
    rows = PLAN_ROW_COLUMN * n * d
    return (
        rows
        + start_seconds(n=n, d=d, candidates=candidates)
        + rest_seconds(candidates=candidates, cliques=d, picks=picks, rounds=estimates)
    )


def plan(*, n: int, schema: Schema, params: dict, epsilon: float, delta: float) -> Plan:
    """The rounds of an AIM release, chosen before any data is read (public inputs only, so no privacy cost).

    The paper selects one marginal per round, up to T - d rounds (T = 16 d, or fewer when n is small for the budget:
    :func:`~mechanisms.synthesizers.aim.default_rounds`), each ending with a new model estimate: on a wide table
    hundreds of estimates (a 39-column table at epsilon 1: 354 rounds planned, 23 run before the budget was spent by
    annealing, 60 s), and a time that depends on when annealing starts (0.1x to 1x of the planned rounds' time on
    the calibration tables). Here T is the steward's ``max_rounds``, else the smaller of the paper's and d +
    max(d, MIN_SELECTED) (the 1-way start and at least 45 selected marginals), and the selections are made in at most
    MAX_BATCHED_ESTIMATES rounds, as many as fit ``time_budget`` (:func:`rest_seconds`; at least one): each round
    selects its share of the marginals the remaining budget pays for, one exponential mechanism each, from the same
    model, then re-estimates it once. A selection costs the same whichever round it is in; annealing still halves
    the noise after a round whose marginals the model already knew. The steward's ``estimates`` sets the number of
    rounds (T - d gives the paper's one marginal per round). The model-size limit is ``max_model_size`` lowered to
    MIB_PER_BUDGET_MINUTE per minute of the budget (at least 4x the 1-way model): mirror descent's time grows with
    the model, which grows with n and epsilon (1M rows of a 39-column table: 32 MiB and a 30 s final estimate
    without it), so the cost model holds at any n. Measured on adult and a 39-column table
    (docs/mechanisms/aim.md, "Time budget"): the same relations as the paper's plan in a third to a fifth of its
    time."""
    from . import DEFAULT_TIME_BUDGET, MAX_BATCHED_ESTIMATES, MIB_PER_BUDGET_MINUTE, MIN_SELECTED, candidate_weights
    from . import default_rounds
    from . import workload_cliques

    names = schema.names
    sizes = list(schema.cell_sizes)
    d = len(names)
    rho = zcdp_rho(float(epsilon or 1.0), float(delta or 1e-5))
    workload = str(param_or_default(params, "workload", "all-2way"))
    candidates = len(candidate_weights(names, workload_cliques(names, workload, params.get("target") or names[-1])))
    budget = float(param_or_default(params, "time_budget", DEFAULT_TIME_BUDGET))
    paper_units = max(default_rounds(n, rho, sizes), d)
    steward_units = int(param_or_default(params, "max_rounds", 0) or 0)
    units = max(steward_units or min(paper_units, d + max(d, MIN_SELECTED)), d)
    picks = max(units - d, 1)
    paper = plan_seconds(n=n, d=d, candidates=candidates, units=paper_units, estimates=max(paper_units - d, 1))
    steward_estimates = int(param_or_default(params, "estimates", 0) or 0)
    if steward_estimates:
        r, fixed = min(steward_estimates, picks), True
    else:
        start = start_seconds(n=n, d=d, candidates=candidates)
        most = min(MAX_BATCHED_ESTIMATES, picks)
        r, fixed = rounds_that_fit(budget - start, candidates=candidates, cliques=d, picks=picks, most=most), False
    seconds = plan_seconds(n=n, d=d, candidates=candidates, units=units, estimates=r)
    one_way_mib = sum(sizes) * 8 / 2**20
    limit = float(param_or_default(params, "max_model_size", 80.0))
    model_mib = min(limit, max(MIB_PER_BUDGET_MINUTE * budget / 60, 4 * one_way_mib))
    return Plan(units, r, r < picks, fixed, seconds, paper, budget, model_mib)
