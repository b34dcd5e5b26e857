"""Run-time estimates from PUBLIC inputs only: the row count n (public under replace-one), the
confirmed schema and the mechanism's parameters. Nothing here reads data, so an estimate is free to
show before a release is submitted (and to route short jobs to the fast queue).

Each mechanism has a work measure ``w`` (what its cost grows with, read from its algorithm) and a
line ``seconds = a + b * w`` per job thread, fitted by ``benchmarks/runtime_calibration.py`` on the
shared datasets (predicted vs measured: docs/operations.md). The coefficients are for one thread of
the 2-core development machine; the estimate is a guide (the goal is within a factor of 2), never a
limit.

Work measures (n rows, d kept columns, p numeric columns):

* baseline, kdtree-grid, kdtree-adaptive, privhp: one pass over the table per column: ``n d``.
* mst: measured 5-8 s from 1,000 to 32,561 rows (mostly Private-PGM's compiled estimation): ``n d``
  with a large intercept.
* density-lp: the LP dominates; its size is the number of nonzeros, m reference points times the
  number of marginal tables (both public: the mechanism's own plan from the schema and parameters):
  ``m tables``.
* pmse: every MCMC iteration (burn-in included) evaluates m synthetic sets; measured, the cost hardly
  grows with n at these sizes (2,000 -> 5,000 rows: +10 %): ``(iterations + burn_in) m d``.
* dpmerf: the embedding ``n D`` (D random features) plus ``epochs`` Adam steps on batches of
  ``batch`` generated rows through the D features: ``epochs batch D + n D``.
* aim: compiling one program per model structure, and mirror descent at large budgets (docs/mechanisms/aim.md):
  the candidates' cells times sqrt(largest column) times the columns times rho^0.2 times the share of the
  paper's 16 d rounds that it runs (:func:`aim_work`).
* anything else (mechanisms added later, not calibrated yet): ``n d`` with a generous line whose
  60 s floor keeps them on the synthesis queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..schema import Schema

# (a seconds, b seconds per unit of work): `python -m benchmarks.runtime_calibration` (23 November 2026, the
# 2-core machine with nothing else running; pmse re-run with `--only pmse` beside two benchmark jobs; AIM
# by `--from-grid`; table in docs/operations.md). Unknown mechanisms: FALLBACK.
COEFFICIENTS: dict[str, tuple[float, float]] = {
    "baseline": (0.649, 4.67e-07),
    "kdtree-grid": (0.694, 7.34e-07),
    "kdtree-adaptive": (0.711, 7.21e-07),
    "privhp": (0.744, 1.52e-06),
    "density-lp": (13.4, 0.0),  # 10-18 s for every LP size measured: the slope fitted to 0
    "pmse": (0.0, 0.00066),
    "dpmerf": (2.17, 1.09e-08),
    "mst": (6.4, 1.41e-06),  # mostly compiling and estimating (5-8 s for 1,000-32,561 rows): ``n d``
    "aim": (0.0, 0.000262),  # 17 AIM releases run alone, one thread each, worst factor minimised
    # (--from-grid --log docs/data/benchmarks-aim-alone.jsonl; docs/operations.md)
}
# Not calibrated yet (anything new): a floor of 60 s keeps them off the fast queue, where a
# fit that runs for minutes would hold up draws; the estimate says it is not calibrated.
FALLBACK = (60.0, 5.0e-5)
DRAW = (0.5, 1.0e-6)  # a draw of more rows: sampling only (post-processing), ``rows d``
DPMERF_BATCH = (0.1, 256, 4096)  # mirrors mechanisms.synthesizers.dpmerf: 0.1 n clipped to 256..4096
DPMERF_DEFAULTS = {"features": 1000, "epochs": 2000}
PMSE_DEFAULTS = {"iterations": 2000, "burn_in": 1000, "m": 5}


# Mechanisms whose time follows a data-dependent path: measured / predicted seconds on the calibration
# releases (docs/operations.md: AIM's 17 releases run alone, predicted/measured 0.32-3.11), and the widest
# table calibrated; wider tables get WIDE_RANGE (an extrapolation in the columns).
# The low ends cover a worker that has run the mechanism before: Private-PGM's compiled programs are reused,
# and the job takes a half to a seventh of a fresh process's time (benchmarks/estimate_accuracy.py through
# the API, docs/benchmarks-estimates.md, three runs: AIM down to 0.13x, MST 0.19x-0.98x of the central estimate).
RANGES: dict[str, tuple[float, float]] = {"aim": (0.1, 3.2), "mst": (0.15, 1.5)}
CALIBRATED_COLUMNS: dict[str, int] = {"aim": 24, "mst": 21}
WIDE_RANGE = (0.1, 10.0)
_WARM = ("a worker that has run it before reuses its compiled Private-PGM programs and takes a fraction of a "
         "fresh worker's time")
RANGE_REASONS = {"aim": "AIM chooses which marginals to measure from noisy answers on the data, so the models it "
                        "builds, and its time, cannot be known from public inputs; " + _WARM,
                 "mst": "MST's time is mostly compiling Private-PGM's programs: " + _WARM}


@dataclass(frozen=True)
class Estimate:
    """Predicted seconds of one release (fit + sample) and the work measure it came from; ``low`` and
    ``high`` bound it where the time follows a data-dependent path (:func:`time_range`)."""

    mechanism: str
    seconds: float
    work: float
    calibrated: bool = True
    low: float | None = None
    high: float | None = None
    range_reason: str = ""

    def to_dict(self) -> dict:
        text = describe_range(self.low, self.high) if self.low is not None else describe_seconds(self.seconds)
        text += "" if self.calibrated else " (rough: not calibrated for this mechanism)"
        out = {"seconds": round(self.seconds, 1), "text": text, "calibrated": self.calibrated,
               "basis": "public inputs only (n, columns, parameters); see docs/operations.md"}
        if self.low is not None:
            out.update(low_seconds=round(self.low, 1), high_seconds=round(self.high, 1), range_reason=self.range_reason)
        return out


def time_range(mechanism: str, seconds: float, columns: int) -> tuple[float, float, str] | None:
    """(low, high, why) for a mechanism whose time cannot be bounded from public inputs, else None: the
    central estimate times the factors measured on its calibration releases, wider for a table with more
    columns than any of them."""
    if mechanism not in RANGES:
        return None
    lo, hi = RANGES[mechanism]
    why = RANGE_REASONS[mechanism]
    widest = CALIBRATED_COLUMNS[mechanism]
    if columns > widest:
        lo, hi = WIDE_RANGE
        why += f"; this table has {columns} columns, more than any release it was measured on ({widest})"
    else:
        why += f"; the measured releases took {lo:g}x to {hi:g}x of the central estimate"
    return seconds * lo, seconds * hi, why


def _param(params: dict, name: str, default):
    value = params.get(name)
    return default if value in (None, "") else value


def work(mechanism: str, *, n: int, schema: Schema, params: dict, epsilon: float | None = None,
         delta: float | None = None) -> float:
    """The mechanism's work measure (module docstring) for a table of ``n`` rows."""
    if n < 0:
        raise ValueError(f"n must be a non-negative row count, got n={n!r}")
    d = max(1, len(schema.kept))
    if mechanism == "pmse":
        steps = int(_param(params, "iterations", PMSE_DEFAULTS["iterations"])) + int(
            _param(params, "burn_in", PMSE_DEFAULTS["burn_in"]))
        return float(steps * int(_param(params, "m", PMSE_DEFAULTS["m"])) * d)
    if mechanism == "dpmerf":
        features = int(_param(params, "features", DPMERF_DEFAULTS["features"]))
        epochs = int(_param(params, "epochs", DPMERF_DEFAULTS["epochs"]))
        frac, lo, hi = DPMERF_BATCH
        batch = int(_param(params, "batch_size", min(max(round(frac * n), lo), hi)))
        return float(epochs * batch * features + n * features)
    if mechanism == "aim":
        return aim_work(n=n, schema=schema, params=params, epsilon=epsilon, delta=delta)
    if mechanism == "density-lp":
        from ..synthesizers.density_lp import DensityLP  # its plan (m, tables) is pure: computed from the schema alone

        plan = DensityLP(schema, epsilon=1.0, **{k: v for k, v in params.items() if v not in (None, "")})
        return float(plan.m * len(plan.tables))
    return float(n * d)


# AIM with ``workload=target`` (every triple with the target) or ``all-3way`` is timed as all pairs: its time
# is the models it builds from the marginals it selects (at most T rounds), not the size of its candidate
# list. On the grid run (docs/data/benchmarks-grid.jsonl, two releases side by side) the 13 target releases
# took 0.4-4.7x the all-pairs estimate (the all-pairs releases on the same tables 0.5-7x), while counting the
# triples' cells over-estimated them by up to 7.6x; all-3way releases through the API took about as long as
# all pairs on the same table (docs/benchmarks-estimates.md), where counting the triples' cells had
# over-estimated them by 48x to 184x.
AIM_RHO_POWER = 0.2  # fitted with the coefficients (benchmarks/runtime_calibration.py --from-grid)
AIM_ROUNDS_POWER = 0.8  # the share of the paper's 16 d rounds that AIM runs (mechanisms.synthesizers.aim.default_rounds)


def aim_work(*, n: int, schema: Schema, params: dict, epsilon: float | None, delta: float | None) -> float:
    """AIM's time is compiling one program per model structure at small budgets and mirror descent on
    larger models at large ones (docs/mechanisms/aim.md, "Speed"). It grows with the candidates' cells
    (the workload's marginals of two columns or more, C), with the largest column (its cliques dominate
    the model, k_max), with the columns d (16 d rounds in the paper, each a program over a model of more
    cliques), with the budget (larger models before it runs out) and with the share of those rounds that
    AIM runs (fewer when n is small for the budget): ``C sqrt(k_max) d rho^0.2 (T / 16 d)^0.8``, rho from
    (epsilon, delta), epsilon 1 and delta 1e-5 when not given. The earlier form without d and with rho^0.4,
    fitted on 17 releases run alone, was off by up to 4.8x (credit_default_taiwan, 24 columns, at 1); this
    one by up to 3.1x (docs/operations.md): :func:`time_range` turns that into the range shown."""
    from ..accounting import zcdp_rho
    from ..synthesizers.aim import ROUNDS_PER_COLUMN, candidate_weights, default_rounds, workload_cliques

    names = schema.names
    sizes = dict(zip(names, schema.cell_sizes))
    workload = str(_param(params, "workload", "all-2way"))
    if workload in ("target", "all-3way"):  # timed as all pairs (see the note above AIM_RHO_POWER)
        workload = "all-2way"
    target = params.get("target") or None
    cliques = candidate_weights(names, workload_cliques(names, workload, target))
    cells = sum(math.prod(sizes[a] for a in c) for c in cliques if len(c) >= 2) or sum(sizes.values())
    rho = zcdp_rho(float(epsilon or 1.0), float(delta or 1e-5))
    paper = ROUNDS_PER_COLUMN * len(names)
    rounds = int(_param(params, "max_rounds", 0) or 0) or default_rounds(n, rho, list(sizes.values()))
    share = min(rounds, paper) / max(paper, 1)
    return float(cells * math.sqrt(max(sizes.values(), default=1)) * len(names) * rho ** AIM_RHO_POWER
                 * share ** AIM_ROUNDS_POWER)


def estimate(mechanism: str, *, n: int, schema: Schema, params: dict | None = None,
             threads: int = 1, epsilon: float | None = None, delta: float | None = None) -> Estimate:
    """Predicted wall seconds of one release on ``threads`` job threads (DP-MERF's training uses
    them; the others run on one thread, so only DP-MERF's slope is divided). ``epsilon`` and ``delta``
    matter to AIM only (its rounds and models grow with the budget); without them epsilon 1 is assumed."""
    params = params or {}
    w = work(mechanism, n=n, schema=schema, params=params, epsilon=epsilon, delta=delta)
    a, b = COEFFICIENTS.get(mechanism, FALLBACK)
    speedup = min(max(int(threads), 1), 2) ** 0.5 if mechanism == "dpmerf" else 1.0
    seconds = a + b * w / speedup
    span = time_range(mechanism, seconds, len(schema.kept))
    low, high, why = span if span else (None, None, "")
    return Estimate(mechanism, seconds, w, calibrated=mechanism in COEFFICIENTS, low=low, high=high, range_reason=why)


def estimate_draw(rows: int, d: int) -> Estimate:
    """A draw of ``rows`` more rows over ``d`` kept columns from a stored summary (no fit)."""
    a, b = DRAW
    w = float(max(rows, 0) * max(d, 1))
    return Estimate("draw", a + b * w, w)


def describe_seconds(seconds: float) -> str:
    """'about 40 s', 'about 3 min', 'about 1.5 h' (rounded: an estimate, not a promise)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be finite and non-negative, got seconds={seconds!r}")
    if seconds < 5:
        return "a few seconds"
    if seconds < 90:
        return f"about {round(seconds, -1 if seconds >= 20 else 0):.0f} s"
    if seconds < 5400:
        return f"about {round(seconds / 60):.0f} min"
    return f"about {seconds / 3600:.1f} h"


def describe_range(low: float, high: float) -> str:
    """'between 3 min and 30 min' (each end rounded like :func:`describe_seconds`)."""
    def short(seconds: float) -> str:
        return describe_seconds(seconds).replace("about ", "")
    low_text, high_text = short(low), short(high)
    return describe_seconds(high) if low_text == high_text else f"between {low_text} and {high_text}"
