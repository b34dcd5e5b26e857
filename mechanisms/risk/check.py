"""The implementation check's measure-only refits (:meth:`~mechanisms.base.Mechanism.measure`: the
noisy queries alone, no sampling): their own target pairs, those the first refit's queries tell apart
best (:func:`~mechanisms.risk.measurements.check_pairs`), and their own coins, while the budget lasts."""

from __future__ import annotations

import time

import numpy as np

from ..runner import build
from ..source import TableSource
from .game import WHITE_BOX, Game, Table, vulnerability
from .measurements import check_pairs, query_scores
from .refit import Refits, Results

CHECK_RUNS_PER_RUN = 10  # implementation-check refits (noisy queries alone) per attacked refit, budget allowing
CHECK_PAIRS_FACTOR = 4  # the check's refits have up to this many times the target pairs (no rows to blur)
CHECK_CANDIDATES = 4  # ... chosen among this many times as many of the most vulnerable records
# measure-only refits that run whatever the time budget: on a wide table one attacked refit (fit, 100x sample,
# attacks) can take the whole budget, and fewer check refits cannot flag a 10x noise error there
# (docs/benchmarks/risk.md); each costs at most the release's fit (MST skips its estimate, AIM refits whole)
MIN_CHECK_REFITS = 10


def check_game(table: Table, game: Game, queries) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, fixed) of the measure-only refits: pairs among the pool's most vulnerable records,
    chosen on the first refit's (public) query maps before any coin; every other pool record fixed."""
    C, pool = table.cells, game.pool
    v = vulnerability(C[pool], C, table.sizes)
    n_check = min(CHECK_PAIRS_FACTOR * len(game.pairs), max(len(pool) // 4, 1))
    candidates = pool[np.argsort(-v, kind="stable")[: min(CHECK_CANDIDATES * n_check, len(pool))]]
    c_pairs = check_pairs(queries, C, table.frame, candidates, n_check)
    return c_pairs, np.setdiff1d(pool, c_pairs.ravel())


def check_refits(table: Table, c_pairs: np.ndarray, c_fixed: np.ndarray, run: Refits, res: Results) -> None:
    """Measure-only refits until ``res.check_total``: the first ``res.check_floor`` (default
    ``MIN_CHECK_REFITS``) whatever the time budget (the budget scales with the table: each costs at
    most a release's fit), later ones when the slowest so far would end within it."""
    check_seconds: list[float] = []
    at = min(res.done_fits / (res.total_fits + 1), 0.96)
    while res.scores["private"][WHITE_BOX] and res.check_done < res.check_total:
        elapsed = time.perf_counter() - run.t0
        over = run.time_budget is not None and elapsed + max(check_seconds, default=0.0) > run.time_budget
        if over and res.check_done >= res.check_floor:
            break
        ts = time.perf_counter()
        first_in = run.rng.random(len(c_pairs)) < 0.5
        members_idx = np.r_[c_fixed, np.where(first_in, c_pairs[:, 0], c_pairs[:, 1])]
        run.step(
            at,
            f"implementation check {res.check_done + 1}" + (f"/{res.check_total}" if run.time_budget is None else ""),
        )
        mech = build(
            run.mechanism,
            table.schema,
            n=len(members_idx),
            epsilon=run.epsilon,
            delta=run.delta,
            params=run.params,
            noise=run.noises["private"],
            progress=lambda f, s: run.step(at, s),
        )
        queries = mech.measure(TableSource(table.schema, frame=table.frame.iloc[members_idx].reset_index(drop=True)))
        Tq = query_scores(queries or [], table.cells, table.frame, c_pairs, c_fixed)
        res.scores["private"][WHITE_BOX].append(
            (np.column_stack([first_in, ~first_in]).ravel(), np.column_stack([Tq / 2, -Tq / 2]).ravel())
        )
        res.check_done += 1
        check_seconds.append(time.perf_counter() - ts)
