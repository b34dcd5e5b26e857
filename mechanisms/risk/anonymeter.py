"""Attribute inference, linkability and singling out: the Anonymeter method (Giomi et al., PoPETs
2023) on one refit's synthetic table. Each evaluator measures the attacker's success on members
(training records) against its success on control records (never trained on); the risk is
(members - control) / (1 - control) with a 95% interval from Wilson intervals.

Anonymeter itself (PyPI ``anonymeter`` 1.1.0) needs numpy < 1.27; this is a small reimplementation of
its three evaluators' core (success on members vs. on control records, its risk formula, Wilson
intervals)."""

from __future__ import annotations

import math

import numpy as np

from ..schema import Schema
from .distance import closest, gower_block, row_blocks
from .game import rounded

MAX_SECRETS = 5  # attribute inference: secret columns tried (categorical first, then numeric)


def attribute_inference(
    schema: Schema,
    members: np.ndarray,
    control: np.ndarray,
    synthetic: np.ndarray,
    numeric: np.ndarray,
    rng: np.random.Generator,
) -> list[dict]:
    """Per secret column: success of the nearest-synthetic-record guess on members and on control
    records, the random-guess baseline, and the risk (members - control) / (1 - control)."""
    kept = schema.kept
    order = [j for j, c in enumerate(kept) if not c.is_numeric] + [j for j, c in enumerate(kept) if c.is_numeric]
    out = []
    n_t = min(len(members), len(control), 500)
    m_idx = rng.choice(len(members), n_t, replace=False)
    c_idx = rng.choice(len(control), n_t, replace=False)
    for j in order[:MAX_SECRETS]:
        if len(kept) < 2:
            break
        others = np.array([k for k in range(len(kept)) if k != j])

        def hit(rows: np.ndarray) -> np.ndarray:
            _, nn = closest(rows, synthetic, numeric, others)
            guess = synthetic[nn, j]
            if numeric[j]:
                # within 5% of the public range (Anonymeter: 5% of the true value; the range treats values
                # near 0 like the others)
                return np.abs(guess - rows[:, j]) <= 0.05
            return guess == rows[:, j]

        def baseline(rows: np.ndarray) -> np.ndarray:
            guess = synthetic[rng.integers(0, len(synthetic), len(rows)), j]
            if numeric[j]:
                return np.abs(guess - rows[:, j]) <= 0.05
            return guess == rows[:, j]

        m_hits, c_hits = int(hit(members[m_idx]).sum()), int(hit(control[c_idx]).sum())
        b_rate = float(baseline(members[m_idx]).mean())
        out.append({"secret": kept[j].name, **anonymeter_risk(m_hits, c_hits, n_t), "baseline_rate": rounded(b_rate)})
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    """The Wilson score interval of a success rate k/n: (centre, low, high), as Anonymeter reports."""
    if n <= 0:
        return 0.0, 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return centre, max(0.0, centre - half), min(1.0, centre + half)


def anonymeter_risk(attack_hits: int, control_hits: int, n: int) -> dict:
    """Anonymeter's risk (attack - control) / (1 - control) from Wilson-corrected rates, with a 95%
    interval from the rates' intervals (attack low against control high, and the reverse)."""
    a, a_lo, a_hi = wilson(attack_hits, n)
    c, c_lo, c_hi = wilson(control_hits, n)

    def r(x, y):
        return max(0.0, (x - y) / (1 - y)) if y < 1 else 0.0

    return {
        "attack_rate": rounded(attack_hits / n if n else 0.0),
        "control_rate": rounded(control_hits / n if n else 0.0),
        "risk": rounded(r(a, c)),
        "risk_ci": [rounded(r(a_lo, c_hi)), rounded(min(1.0, r(a_hi, c_lo)))],
        "targets": int(n),
    }


def linkability(
    schema: Schema,
    members: np.ndarray,
    control: np.ndarray,
    synthetic: np.ndarray,
    numeric: np.ndarray,
    rng: np.random.Generator,
    n_neighbors: int = 1,
) -> dict | None:
    """Anonymeter's linkability: the attacker holds two halves of a target's columns from two sources
    and links them when the closest synthetic records on each half coincide (``n_neighbors`` closest
    on each side share one). Success on members against the control records; None under 2 columns."""
    d = members.shape[1]
    if d < 2:
        return None
    cols = rng.permutation(d)
    left, right = np.sort(cols[: d // 2]), np.sort(cols[d // 2 :])
    n_t = min(len(members), len(control), 500)
    m_rows = members[rng.choice(len(members), n_t, replace=False)]
    c_rows = control[rng.choice(len(control), n_t, replace=False)]

    def links(rows: np.ndarray) -> int:
        hits = 0
        for sl in row_blocks(len(rows), len(synthetic)):
            a = np.argsort(gower_block(rows[sl], synthetic, numeric, left), axis=1, kind="stable")[:, :n_neighbors]
            b = np.argsort(gower_block(rows[sl], synthetic, numeric, right), axis=1, kind="stable")[:, :n_neighbors]
            hits += sum(bool(set(x) & set(y)) for x, y in zip(a.tolist(), b.tolist()))
        return hits

    out = anonymeter_risk(links(m_rows), links(c_rows), n_t)
    out["columns"] = [[schema.kept[j].name for j in left], [schema.kept[j].name for j in right]]
    return out


def singling_out(
    members: np.ndarray,
    control: np.ndarray,
    synthetic: np.ndarray,
    rng: np.random.Generator,
    n_queries: int = 500,
    n_cols: int = 3,
) -> dict:
    """Anonymeter's singling-out evaluator on the public cells: predicates read off the synthetic table
    (a value seen once in a column; a synthetic record's cells on ``n_cols`` random columns that match
    no other synthetic record) single out a target when exactly one record of the table holds them.
    Success on the members against the control records (as many members as control records, so the
    two tables have one size); the same risk formula as the others."""
    n = min(len(members), len(control))
    mem = members[rng.choice(len(members), n, replace=False)]
    ctl = control[rng.choice(len(control), n, replace=False)]
    d = synthetic.shape[1]
    queries: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for j in range(d):
        vals, counts = np.unique(synthetic[:, j], return_counts=True)
        queries += [((j,), (int(v),)) for v in vals[counts == 1]]
    k = min(n_cols, d)
    for i in rng.permutation(len(synthetic)):
        if len(queries) >= 2 * n_queries:
            break
        cols = tuple(sorted(rng.choice(d, k, replace=False).tolist()))
        vals = tuple(int(synthetic[i, j]) for j in cols)
        if np.sum(np.all(synthetic[:, cols] == vals, axis=1)) == 1:
            queries.append((cols, vals))
    if not queries:
        return {**anonymeter_risk(0, 0, 0), "queries": 0}
    pick = rng.choice(len(queries), min(n_queries, len(queries)), replace=False)

    def singled(table: np.ndarray) -> int:
        return sum(int(np.sum(np.all(table[:, list(queries[q][0])] == queries[q][1], axis=1)) == 1) for q in pick)

    return {**anonymeter_risk(singled(mem), singled(ctl), len(pick)), "queries": int(len(pick))}
