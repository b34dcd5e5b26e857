"""AIM: McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", VLDB 2023 (Algorithm 1 and Section 4; the authors'
reference script for defaults), with Private-PGM's ``mbi`` for estimation.

The algorithm as implemented:

1. A **workload** of marginals the analysts care about (all 2-way by default; all 3-way; or, with a
   target column, every 3-way marginal that contains it), each with weight 1. The **candidates** are
   the workload's downward closure; candidate r scores w_r = sum over workload marginals s of
   |r ∩ s| (the paper's weighting: marginals that overlap much of the workload matter more).
2. **Initialise**: measure every 1-way marginal with Gaussian noise; estimate the model.
3. **Rounds**, planned from public inputs before any data is read (:func:`guide.plan`): T measurements'
   worth of budget (d + max(d, 45), the paper's 16 d lowered by :func:`default_rounds` when smaller, or the
   steward's ``max_rounds``) selected in as many rounds as fit ``time_budget`` (at most MAX_BATCHED_ESTIMATES).
   In a round: keep the candidates whose addition keeps the model within the size limit (``max_model_size``,
   lowered to what the time budget pays for) x (budget used so far / total budget) MiB; **select** the
   round's share of the marginals the remaining budget pays for, each with its own exponential mechanism
   (without replacement) on the score w_r (|| x_r - xhat_r ||_1 - sqrt(2/pi) sigma_t |cells(r)|) (error minus
   the expected error of a fresh measurement); **measure** each with Gaussian noise sigma_t; **re-estimate**
   the model once (warm start). **Anneal**: when the model's answers on the round's marginals moved less than
   the expected noise, sigma_t halves and the selection epsilon doubles (each selection then costs 4x as
   much). The last round spends all that remains (and is not re-estimated: that estimate would only decide
   annealing, which ends there). The rounds left are recomputed after each round from the plan's cost model
   and the number of marginals measured (earlier DP outputs), never from the clock.
4. **Generate**: a final estimate on every measurement (warm start from the latest estimate), then
   synthetic rows sampled from the model; a row drawn in a numeric column's low bins (a money column's far tail,
   estimated at the noise level) is spread among them as the bins' estimates fitted rising then falling say
   (:func:`low_bin_shares`, post-processing).

Privacy (replace-one neighbours, n public), zCDP inside the release, converted to the steward's
(epsilon, delta) by :func:`~mechanisms.accounting.zcdp_rho`:

* Measurement: a marginal's counts change by (+1, -1): L2 sensitivity sqrt(2); discrete Gaussian
  with std sigma costs 2 / (2 sigma^2) = 1 / sigma^2. With T measurements' worth of budget each
  measurement gets 0.9 rho / T: sigma = sqrt(T / (0.9 rho)) (the reference script's sqrt(T / (2 * 0.9 rho)) is the
  add/remove value, sensitivity 1).
* Selection: the score's L1 error moves by at most 2 w_r under replace-one (xhat comes from earlier
  noisy measurements only; the bias term is public), so the exponential mechanism uses sensitivity
  2 max_r w_r, with zCDP cost eps_t^2 / 8 where eps_t = sqrt(8 * 0.1 rho / T) (Gumbel-max through
  OpenDP's exact ``make_noisy_max``, which checks the cost itself).
* Each selected marginal costs 1/sigma_t^2 + eps_t^2/8 (= rho/T before annealing), whichever round it is
  selected in (several selections on the same scores compose like any others); a pick dropped by the model-size
  check pays its selection only. The 1-way initialisation costs d / sigma_0^2. The loop stops before the sum
  would exceed rho; the last round takes exactly the rest. Everything else (estimation, filtering by model size,
  the plan and its rounds left, sampling) is post-processing or a function of public inputs.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np
import pandas as pd

from ...accounting import PrivacyCost, ZCDPEvent, gaussian_events, zcdp_epsilon, zcdp_rho
from ...base import Mechanism, ParamSpec
from ...pgm import (
    QUALITY_L1_SENSITIVITY,
    CellTable,
    Clique,
    JunctionTreeSize,
    Measurement,
    Measurements,
    ModelTables,
    candidate_marginals,
    estimate,
    load_mbi,
    measure,
    release_programs,
    rho_of_measurement,
    rule_columns,
    sigma_for_rho,
    structural_zeros,
)
from ...pgm import model_cliques as jtree_cliques
from ...pgm.nonneg import merged_fit, nonnegative_shares
from ...schema import Schema
from ...source import TableSource
from . import guide

WORKLOADS = ("all-2way", "all-3way", "target")
LOW_BIN_SIGMAS = 3.0  # a numeric bin whose model count is below this many 1-way noise stds is a low bin


def low_bin_shares(
    schema: Schema, model: ModelTables, one_way: dict[str, tuple[np.ndarray, float]], rows: int, *, skip=frozenset()
) -> dict[int, tuple[np.ndarray, np.ndarray, float]]:
    """Per numeric column, its low bins (noisy 1-way count below ``LOW_BIN_SIGMAS`` x its noise std: ``one_way[a]``
    is (counts, std), the rule MST merges by) and how a row the model draws in any of them is spread among them:
    non-negative least squares on the noisy counts fitted rising then falling (:func:`~mechanisms.pgm.nonneg.
    unimodal_fit`), with the low bins' noisy total (unbiased, unlike the model's, whose non-negative fit keeps
    every positive noise draw) capped by the model's; a row stays in the low bins with probability (noisy total /
    model's total) and is otherwise drawn from the column's other cells as the model weighs them. A money column's
    far tail holds bins whose estimate is mostly
    noise; drawn as estimated, a few noisy bins far out put rows at values no record has (census_like: a 99th
    percentile 4x the real one). The rows stay in "some low bin", so their relations to other columns are kept at
    that level, as MST's merged values are. Columns with fewer than two low bins, or only low bins, and the columns
    of declared rules (``skip``: the model's structural zeros hold there bin by bin) are left as estimated.
    Post-processing of the noisy measurements, the model and public inputs (``rows``: n, the schema)."""
    out = {}
    for j, a in enumerate(schema.names):
        col = schema.column(a)
        if not col.is_numeric or col.n_bins <= 2 or a in skip or a not in one_way:
            continue
        values, sigma = one_way[a]
        y = np.asarray(values, dtype=np.float64)[: col.n_bins]
        low = y < LOW_BIN_SIGMAS * sigma
        if low.sum() < 2 or low.all():
            continue
        modelled = float(model.marginal((a,))[: col.n_bins][low].sum()) * rows
        total = min(max(float(y[low].sum()), 0.0), modelled)
        fitted = merged_fit(y, ~low, int(np.argmax(np.where(low, -np.inf, y))))
        keep = total / modelled if modelled > 0 else 1.0
        out[j] = (np.flatnonzero(low), nonnegative_shares(fitted[low], total), keep)
    return out


ROUNDS_PER_COLUMN = 16  # the paper's T = 16 d
MEASURE_SHARE = 0.9  # of each round's budget (the rest selects)
WEAK_SIGNAL_DIVISOR = 6  # default_rounds: a round's noise std at most n / (6 k), k the mean cells of a column
MAX_CANDIDATE_CELLS = 20_000_000  # exact counts of every candidate are held during fit (int64: 160 MB)
MAX_CANDIDATES = 20_000  # scored every round
DEFAULT_TIME_BUDGET = 60.0  # seconds on one worker thread: the plan (guide.plan) fits the release in it
MIN_SELECTED = 45  # T = d + max(d, 45) at most unless the steward sets max_rounds (guide.plan)
# selection rounds (model estimates) at most unless the steward sets estimates: on credit_adult (39 columns, 15,000
# rows, epsilon 1; benchmarks/system/relations.py) 2-3 rounds kept the label's relations as well as 5 (label gap
# 0.034-0.047 against 0.032-0.044, ROC AUC 0.87-0.89 both) in 12-14 s instead of 20-25 s, 1.2-1.6x MST's time
MAX_BATCHED_ESTIMATES = 3
MIB_PER_BUDGET_MINUTE = 2.0  # the model-size limit the time budget pays for (guide.plan): 2 MiB per minute


def default_rounds(n: int, rho: float, sizes: list[int]) -> int:
    """The number of rounds T when the steward sets none: the paper's 16 d, fewer when the signal is weak.

    Each round's Gaussian measurement gets 0.9 rho / T, so its noise std is sigma_0 = sqrt(T / (0.9 rho))
    (replace-one). When sigma_0 exceeds a sixth of the mean count of a 1-way cell, n / (6 k), k the
    mean number of cells of a column (WEAK_SIGNAL_DIVISOR), the first rounds measure mostly noise and
    the budget they spend is lost; then T is lowered until sigma_0 = n / (6 k), but never below d (the
    1-way initialisation takes d rounds' budget). Public inputs only (n, rho, the schema's cell counts):
    no privacy cost. A deviation from the paper, measured (docs/mechanisms/aim.md, "Small
    epsilon"): 2-way TVD, mean of 2-3 releases per T, through the benchmark's harness:

        german_credit at 1 (800 rows):       T = 21: 0.116, 29: 0.115, 42: 0.126, 117: 0.148, 172: 0.145
        california_housing_numeric at 0.1:   T = 9: 0.081, 18: 0.088, 33: 0.084, 132: 0.100
        california_housing at 0.1:           T = 10: 0.097, 36: 0.094, 146: 0.100
        credit_default_taiwan at 0.1:        T = 24: 0.103, 96: 0.106, 333: 0.114
        adult at 0.1:                        T = 15: 0.083, 60: 0.072, 120: 0.072, 240 (paper): 0.064-0.074
        bank_marketing at 1:                 T = 17: 0.051, 68: 0.055, 272 (paper): 0.051

    The divisor 2 (the first version: T = 172, 144, 160, 333, 240 on the first five) kept the noisy
    rounds; 4 still gave 43 and 66 on the first two. With 6, T at epsilon 0.1 / 1 / 10 (delta 1e-5):
    german_credit 21 / 21 / 336, bank_marketing 17 / 214 / 272, california_housing_numeric 29 / 144 / 144,
    california_housing 32 / 160 / 160, adult 96 / 240 / 240, credit_default_taiwan 74 / 384 / 384; adult at
    0.1 may lose a little (T = 120 against 240 above: within the runs' spread), the others gain 10-25%.
    """
    d = len(sizes)
    mean_cells = sum(sizes) / max(d, 1)
    weak = math.floor(MEASURE_SHARE * rho * (n / (WEAK_SIGNAL_DIVISOR * mean_cells)) ** 2)
    return int(min(ROUNDS_PER_COLUMN * d, max(d, weak)))


def workload_cliques(names: list[str], workload: str, target: str | None) -> list[Clique]:
    if workload == "all-2way":
        return list(itertools.combinations(names, 2)) or [tuple(names)]
    if workload == "all-3way":
        return list(itertools.combinations(names, 3)) or [tuple(names)]
    others = [a for a in names if a != target]
    if len(others) < 2:
        return [tuple(names)]
    return [tuple(sorted((target, a, b), key=names.index)) for a, b in itertools.combinations(others, 2)]


def candidate_weights(names: list[str], workload: list[Clique]) -> dict[Clique, float]:
    """The workload's downward closure, each clique r weighted by sum_s |r ∩ s| (Section 4)."""
    closure = sorted(
        {sub for w in workload for k in range(1, len(w) + 1) for sub in itertools.combinations(w, k)},
        key=lambda c: (len(c), [names.index(a) for a in c]),
    )
    containing = {a: sum(a in w for w in workload) for a in names}  # sum_s |r ∩ s| = sum_{a in r} #{s: a in s}
    return {c: float(sum(containing[a] for a in c)) for c in closure}


class AIM(Mechanism):
    name = "aim"
    title = "AIM: adaptive and iterative selection of noisy marginals (Private-PGM)"
    paper = "McKenna, Mullins, Sheldon & Miklau, VLDB 2023, Algorithm 1"
    cell_tables = 1  # reads source.cells() (chunked encoding), then one CellTable
    needs_delta = True
    rules_in_model = True  # declared rules are structural zeros of the Private-PGM model (mechanisms.pgm.constraints)
    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 8
    target_structure = "conditional"
    target_params = {"workload": "target"}
    target_how = "measures the marginals that contain {t} (workload 'target')"
    params = (
        ParamSpec(
            "workload",
            "choice",
            "all-2way",
            "Which marginals matter to analysts: all pairs of columns, "
            "all triples (slower, for higher-order relations), or every triple containing the target "
            "column (for models that predict it)",
            choices=WORKLOADS,
        ),
        ParamSpec(
            "target", "column", None, "The column analysts will predict (needed by workload=target)", optional=True
        ),
        ParamSpec(
            "max_model_size",
            "float",
            80.0,
            "Largest graphical model in MiB: larger models keep more "
            "relations but take more time and memory (the paper's default 80)",
            1.0,
            2048.0,
        ),
        ParamSpec(
            "max_rounds",
            "int",
            None,
            "Most selection rounds (default 16 x columns, the paper's, fewer "
            "when rows are few for the budget): fewer rounds put more budget on each measurement",
            1,
            100_000,
            optional=True,
        ),
        ParamSpec(
            "time_budget",
            "float",
            DEFAULT_TIME_BUDGET,
            "Seconds the release is planned to take on one worker thread: when the paper's one marginal per "
            "round would take longer (wide tables), AIM selects several marginals per round, in as many rounds "
            "as fit, and keeps the model within 2 MiB per minute of budget (the plan is made from public inputs "
            "before any data is read)",
            5.0,
            86_400.0,
        ),
        ParamSpec(
            "estimates",
            "int",
            None,
            "Selection rounds, each ending with one model estimate (default: the paper's one marginal per "
            "round when that fits the time budget, else as many rounds as fit it)",
            1,
            100_000,
            optional=True,
        ),
        ParamSpec(
            "iters",
            "int",
            250,
            "Mirror-descent iterations of each round's model estimate, warm-started "
            "from the previous round (no privacy cost): more fits the noisy marginals more closely and "
            "takes longer",
            50,
            100_000,
        ),
        ParamSpec(
            "final_iters",
            "int",
            500,
            "Mirror-descent iterations of the final estimate that the synthetic "
            "rows are drawn from, on every measurement, warm-started from the latest round's estimate (no "
            "privacy cost). 500 instead of the reference's 1000: at epsilon 10 on california_housing 1000 "
            "took 116 s of a 400 s release for 0.9% lower 2-way TVD (docs/mechanisms/aim.md)",
            50,
            100_000,
        ),
    )

    def __init__(self, schema: Schema, **kw):
        super().__init__(schema, **kw)
        if self.params["workload"] == "target" and not self.params["target"]:
            raise ValueError("aim: workload='target' needs the parameter 'target' (the column analysts will predict)")

    # -- plan checks: public facts only, before any budget is reserved -----------------------------
    def _plan(self) -> tuple[list[str], dict[str, int], dict[Clique, float]]:
        names = self.schema.names
        sizes = dict(zip(names, self.schema.cell_sizes))
        weights = candidate_weights(names, workload_cliques(names, self.params["workload"], self.params["target"]))
        return names, sizes, weights

    def check_plan(self, n: int) -> None:
        names, sizes, weights = self._plan()
        rounds = self.params["max_rounds"]
        if rounds is not None and rounds < len(names):
            raise ValueError(
                f"aim: max_rounds={rounds} is below the number of kept columns ({len(names)}): the "
                "first rounds measure every column's 1-way marginal with one round's budget each, "
                f"so max_rounds must be at least {len(names)} (or left empty for the default)"
            )
        limit = self.params["max_model_size"]
        one_way_mb = sum(sizes.values()) * 8 / 2**20
        if one_way_mb > limit:
            raise ValueError(
                f"aim: the 1-way model alone needs {one_way_mb:.1f} MiB, above max_model_size="
                f"{limit:g} MiB; raise the limit or declare fewer categories or bins"
            )
        cells = sum(math.prod(sizes[a] for a in c) for c in weights)
        if len(weights) > MAX_CANDIDATES or cells > MAX_CANDIDATE_CELLS:
            big = sorted(names, key=lambda a: -sizes[a])[:5]
            raise ValueError(
                f"aim: workload {self.params['workload']!r} on {len(names)} columns gives {len(weights):,} candidate "
                f"marginals with {cells:,} cells, above the limits of {MAX_CANDIDATES:,} marginals and "
                f"{MAX_CANDIDATE_CELLS:,} cells; the largest columns are "
                f"{', '.join(f'{a} ({sizes[a]} cells)' for a in big)}: choose a smaller workload (all-2way or "
                f"target), exclude columns, or declare fewer categories or bins"
            )

    # -- fit: the only step that reads private data ------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        self.check_plan(0)
        names, sizes, weights = self._plan()
        mbi = load_mbi()
        table = CellTable(source.cells(), names, [sizes[a] for a in names])
        n = table.n
        rho = zcdp_rho(self.epsilon, self.delta)
        plan = self.selection_plan(n)
        rounds = plan.units
        sigma = sigma_for_rho(MEASURE_SHARE * rho / rounds)
        rho_select = (1 - MEASURE_SHARE) * rho / rounds
        sensitivity = QUALITY_L1_SENSITIVITY * max(weights.values())
        limit = plan.model_mib  # max_model_size, lowered to what the time budget pays for (guide.plan)
        tree = JunctionTreeSize(names, [sizes[a] for a in names])
        start = time.perf_counter()
        self.timings: list[tuple[str, float, int, float]] = []  # (stage, seconds, cliques, model MiB): calibration

        def mark(stage: str) -> None:
            self.timings.append((stage, time.perf_counter() - start, len(log.items), tree.size_mb(log.cliques)))

        log = Measurements()
        spent = []
        for a in names:
            log.add(Measurement((a,), measure(self.noise, table.counts((a,)), sigma), sigma))
            spent.append(rho_of_measurement(sigma))
        self.progress(math.fsum(spent) / rho, "1-way marginals measured")
        zeros = structural_zeros(self.schema)  # declared rules, public: zero cells of the model at no cost
        model = estimate(mbi, sizes, names, log, total=n, iters=self.params["iters"], zeros=zeros)
        mark("start")

        self.plan = plan
        self.selected: list[tuple[list[str], float]] = []
        self.batches: list[int] = []
        # the time budget, spent on a deterministic cost model of the public sequence of models (guide.PLAN_*):
        # the rounds left are chosen from public inputs and earlier DP outputs only (how many marginals the model
        # holds, the budget left after annealing), never from the clock
        predicted = guide.start_seconds(n=n, d=len(names), candidates=len(weights))
        while True:
            used = math.fsum(spent)
            remaining = rho - used
            unit = rho_of_measurement(sigma) + rho_select
            picks_left = max(1, math.floor(remaining / unit + 1e-9))
            most = max(plan.estimates - len(self.batches), 1)
            if plan.fixed_estimates:
                rounds_left = most
            else:
                rounds_left = guide.rounds_that_fit(
                    plan.time_budget - predicted,
                    candidates=len(weights),
                    cliques=len(log.items),
                    picks=picks_left,
                    most=min(most, picks_left),
                )
            batch = max(1, math.ceil(remaining / unit / rounds_left - 1e-9))
            last = rounds_left == 1 or remaining < (batch + 1) * unit
            if last:  # the rest of the budget, on as many measurements as the units left
                batch = max(1, math.floor(remaining / unit + 1e-9))
                sigma = sigma_for_rho(MEASURE_SHARE * remaining / batch)
                rho_select = (1 - MEASURE_SHARE) * remaining / batch
                unit = remaining / batch
            size_limit = limit * (used + batch * unit) / rho
            candidates = self._filter(model, names, sizes, weights, size_limit)
            fitted = candidate_marginals(mbi, model, candidates, n)
            bias = math.sqrt(2 / math.pi) * sigma
            scores = np.array(
                [
                    weights[c] * (float(np.abs(table.counts(c) - fitted[c]).sum()) - bias * fitted[c].size)
                    for c in candidates
                ]
            )
            chosen = self._select_batch(
                model, names, sizes, candidates, scores, batch, size_limit, sensitivity, rho_select, sigma, spent
            )
            for c in chosen:
                log.add(Measurement(c, measure(self.noise, table.counts(c), sigma), sigma))
                spent.append(rho_of_measurement(sigma))
                self.selected.append((list(c), sigma))
            self.batches.append(len(chosen))
            self.progress(
                min(math.fsum(spent) / rho, 0.99),
                f"round {len(self.batches)}: {len(chosen)} marginals measured, budget "
                f"{100 * math.fsum(spent) / rho:.0f}% used",
            )
            if last or not chosen:  # no round estimate: it would only decide annealing, which ends here
                mark("round")
                break
            model = estimate(mbi, sizes, names, log, total=n, iters=self.params["iters"], warm_start=model, zeros=zeros)
            mark("round")
            predicted += guide.rest_seconds(candidates=len(weights), cliques=len(log.items), picks=0, rounds=1)
            predicted -= guide.rest_seconds(candidates=len(weights), cliques=len(log.items), picks=0, rounds=0)
            after = candidate_marginals(mbi, model, chosen, n)
            moved = sum(float(np.abs(after[c] - fitted[c]).sum()) for c in chosen)
            if moved <= math.sqrt(2 / math.pi) * sigma * sum(fitted[c].size for c in chosen):
                sigma /= 2  # anneal: the model already knew these marginals to within the noise
                rho_select *= 4
        if math.fsum(spent) > rho * (1 + 1e-9):  # pragma: no cover - guards the derivation above
            raise AssertionError(f"aim spent rho={math.fsum(spent)} > {rho}")
        self.rho, self.rho_spent = rho, math.fsum(spent)
        self.measurements, self.measured_rows = log, n  # read-only: mechanisms.tables publishes them
        self.progress(0.995, "final estimate")
        model = estimate(
            mbi, sizes, names, log, total=n, iters=self.params["final_iters"], warm_start=model, zeros=zeros
        )
        self.model = ModelTables.from_model(mbi, model, names, sizes)
        one_way = {m.clique[0]: (m.values, m.sigma) for m in log.items if len(m.clique) == 1 and m.weights is None}
        self.low_bins = low_bin_shares(self.schema, self.model, one_way, n, skip=rule_columns(zeros))
        mark("final")
        self._noisy_queries = log.noisy_queries(names, [sizes[a] for a in names])
        release_programs()  # a worker keeps neither the programs nor the freed heap after the job
        self.progress(1.0, "model estimated")

    def _select_batch(
        self, model, names, sizes, candidates, scores, batch, size_limit, sensitivity, rho_select, sigma, spent
    ) -> list[Clique]:
        """Up to ``batch`` candidates, one exponential mechanism each (rho_select, appended to ``spent``) on the
        same scores, without replacement. A pick whose addition to the model and to this batch's earlier picks
        would exceed ``size_limit`` MiB is dropped unmeasured (its selection is paid; a public check on the
        picks, which are DP outputs) and another is drawn while the batch's budget, ``batch`` x (rho_select +
        1 / sigma^2), still covers the draw and the measurements of the picks kept so far plus one."""
        model_cliques = jtree_cliques(model)  # the measured cliques and the declared rules' zeros
        inside = [set(c) for c in model_cliques]
        tree = JunctionTreeSize(names, [sizes[a] for a in names])
        pool = list(range(len(candidates)))
        chosen: list[Clique] = []
        dropped = 0
        per_pick, allowed = rho_of_measurement(sigma), batch * (rho_select + rho_of_measurement(sigma)) * (1 + 1e-12)
        while (
            pool
            and len(chosen) < batch
            and (len(chosen) + dropped + 1) * rho_select + (len(chosen) + 1) * per_pick <= allowed
        ):
            pick = pool.pop(self.noise.select_max_zcdp(scores[pool], sensitivity=sensitivity, rho=rho_select))
            spent.append(rho_select)
            c = candidates[pick]
            if chosen and not any(set(c) <= s for s in inside):
                if tree.size_mb(model_cliques + chosen + [c]) > size_limit:
                    dropped += 1
                    continue
            chosen.append(c)
        return chosen

    def selection_plan(self, n: int) -> guide.Plan:
        """The rounds of this release (public inputs only: n, the schema, epsilon, delta, the parameters):
        see :func:`guide.plan`."""
        return guide.plan(n=n, schema=self.schema, params=self.params, epsilon=self.epsilon, delta=self.delta)

    @staticmethod
    def _filter(model, names, sizes, weights, size_limit: float) -> list[Clique]:
        """Candidates already inside the model's cliques (free), or whose addition keeps the model
        within ``size_limit`` MiB (public facts: domain sizes and the cliques measured so far)."""
        model_cliques = jtree_cliques(model)  # the measured cliques and the declared rules' zeros
        inside = [set(c) for c in model_cliques]
        tree = JunctionTreeSize(names, [sizes[a] for a in names])
        base = tree.neighbourhoods(tree.masks(model_cliques))
        return [c for c in weights if any(set(c) <= s for s in inside) or tree.size_mb_plus(base, c) <= size_limit]

    # -- post-processing -------------------------------------------------------------------------
    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        cells = self.model.sample(n, rng)
        for j, (low, shares, keep) in (getattr(self, "low_bins", None) or {}).items():
            rows = np.flatnonzero(np.isin(cells[:, j], low))
            stay = rng.random(rows.size) < keep
            cells[rows[stay], j] = rng.choice(low, size=int(stay.sum()), p=shares)
            if not stay.all():  # beyond the low bins' noisy total: drawn from the column's other cells
                p = self.model.marginal((self.schema.names[j],)).copy()
                p[low] = 0.0
                if p.sum() > 0:
                    cells[rows[~stay], j] = rng.choice(p.size, size=int((~stay).sum()), p=p / p.sum())
        return self.schema.from_cells(cells, rng)

    def privacy_cost(self) -> PrivacyCost:
        rho = zcdp_rho(self.epsilon, self.delta)
        caveats = [
            f"accounted in zero-concentrated DP inside the release: rho = {rho:.6g}, converted to the requested "
            f"(epsilon, delta) by the Canonne-Kamath-Steinke bound",
            "marginals outside the selected ones come from the graphical model's conditional-independence "
            "assumptions; the workload decides which relations are favoured",
            "the model-size limit and the number of rounds are public parameters, not tuned on the data",
        ]
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=self.delta,
            guarantee="approximate",
            caveats=tuple(caveats),
            details={
                "zcdp_rho": rho,
                "epsilon_from_rho": zcdp_epsilon(rho, self.delta),
                "round_split": f"{MEASURE_SHARE:g} measurement (Gaussian), {1 - MEASURE_SHARE:g} selection "
                "(exponential mechanism)",
                "marginal_l2_sensitivity": "sqrt(2)",
                "selection_score_sensitivity": "2 x max weight",
            },
            events=self._privacy_events(rho),
        )

    def _privacy_events(self, rho: float) -> tuple:
        """What a fit spent: its marginals' discrete Gaussian measurements (L2 sensitivity sqrt(2); a clique
        measured twice is pooled into one measurement of the same rho) and, in zCDP, the rest of what it
        spent: the exponential mechanism's selections. Before a fit: the planned budget as one zCDP event."""
        log = getattr(self, "measurements", None)
        if log is None:
            return (ZCDPEvent(rho, label="the release's budget, planned"),)
        sigmas = [m.sigma for m in log.items]
        events = gaussian_events(sigmas, sensitivity=math.sqrt(2), discrete=True, label="marginals")
        selections = self.rho_spent - math.fsum(rho_of_measurement(s) for s in sigmas)
        if selections > 1e-12 * rho:
            events += (ZCDPEvent(selections, label="exponential-mechanism selections"),)
        return events

    def report(self) -> dict:
        if not hasattr(self, "selected"):
            return {}
        return {
            "rounds": len(self.selected),
            "selected": [c for c, _ in self.selected],
            "sigmas": [s for _, s in self.selected],
            "rho": getattr(self, "rho", None),
            "rho_spent": getattr(self, "rho_spent", None),
            "model_cliques": [list(c) for c in self.model.cliques],
            "batches": list(getattr(self, "batches", [])),
            "plan": getattr(self, "plan", None) and self.plan.to_dict(),
        }

    def summary(self) -> dict[str, Any]:
        out = self.model.to_summary()
        out["selected"] = [c for c, _ in self.selected]
        out["sigmas"] = [s for _, s in self.selected]
        out["low_bin_columns"] = sorted(self.low_bins)
        for j, (low, shares, keep) in self.low_bins.items():
            out[f"low_bins_{j}"], out[f"low_shares_{j}"], out[f"low_keep_{j}"] = low, shares, float(keep)
        return out

    def _load_summary(self, summary: dict[str, Any]) -> None:
        names = self.schema.names
        self.model = ModelTables.from_summary(summary, names, dict(zip(names, self.schema.cell_sizes)))
        self.selected = list(zip([list(c) for c in summary["selected"]], summary["sigmas"]))
        self.low_bins = {  # none in a summary stored without them: the model's own bins
            int(j): (
                np.asarray(summary[f"low_bins_{j}"]),
                np.asarray(summary[f"low_shares_{j}"], dtype=np.float64),
                float(summary[f"low_keep_{j}"]),
            )
            for j in summary.get("low_bin_columns", [])
        }
