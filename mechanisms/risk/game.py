"""The membership game and its bounds: which records are targets, the coins, the attacker's guesses and
the epsilon lower bound they prove, and the largest advantage a claimed epsilon allows.

The table is split once into a reference part (``REFERENCE_FRACTION``: population data the attacker is
granted, never trained on, never a target) and a pool. The ``2 * pairs`` most vulnerable records of the
pool (:func:`vulnerability`) form random pairs, the targets; every other pool record is in every
training table. A fair coin per pair and refit puts one of its two records in: replace one record, n
public, the platform's neighbouring relation. The shadow game is the same game the attacker plays on
its own reference records."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..audit import guessing_epsilon_lower_bound
from ..schema import Schema
from .distance import Encoding
from .roc import advantage, roc_auc, tpr_at_fpr

REFERENCE_FRACTION = 0.25  # records set aside as the attacker's population sample (DOMIAS, control)
# Target pairs per run (the most vulnerable records): few, so that their coins blur each other little
# (100 pairs halved the bound on the broken MST: docs/benchmarks/risk.md).
DEFAULT_CANARY_PAIRS = 50
FPR_LEVELS = (0.01, 0.001)
GUESS_FRACTIONS = (0.02, 0.1, 0.5, 1.0)  # share of target pairs the attacker guesses on (abstaining on the rest)

BASE_ATTACKS = ("dcr", "density_ratio", "marginal_ratio", "cell_count")
WHITE_BOX = "measurements"  # the implementation check: attacks the fit's noisy queries, not its rows
ATTACKS = BASE_ATTACKS + ("shadow_model", WHITE_BOX)
ATTACK_TITLES = {
    WHITE_BOX: "implementation check: the noisy measurements themselves (never published)",
    "dcr": "distance to the closest synthetic record",
    "cell_count": "informed attacker: counts on the measured marginals' cells",
    "shadow_model": "shadow-model classifier on the other attacks' scores",
    "marginal_ratio": "density ratio on public cells, one column at a time",
    "density_ratio": "density ratio, synthetic over reference (DOMIAS)",
}


def vulnerability(cells: np.ndarray, population_cells: np.ndarray, sizes: list[int]) -> np.ndarray:
    """How much each record stands out: the self-information of its public cells, columns taken as
    independent (-sum over columns of log share of its cell in ``population_cells``). Records in rare
    cells (outliers) score highest: a release moves most with them (Carlini et al. 2022; Meeus et al.
    2023 on vulnerable records), so the membership game spends its coins on them."""
    score = np.zeros(len(cells))
    for j, k in enumerate(sizes):
        share = (np.bincount(population_cells[:, j], minlength=k) + 0.5) / (len(population_cells) + 0.5 * k)
        score -= np.log(share[cells[:, j]])
    return score


def membership_game(
    cells: np.ndarray,
    pool: np.ndarray,
    population_cells: np.ndarray,
    sizes: list[int],
    n_pairs: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, fixed): the ``2 * n_pairs`` most vulnerable records of ``pool`` in random pairs (the
    targets: a coin per pair and run puts one of the two in) and the other records of the pool, in
    every training table (the attacker is told them: DP's guarantee holds against that attacker too)."""
    v = vulnerability(cells[pool], population_cells, sizes)
    order = np.argsort(-v, kind="stable")
    k = min(n_pairs, len(pool) // 2)
    targets = rng.permutation(pool[order[: 2 * k]])
    return targets.reshape(-1, 2), np.sort(pool[order[2 * k :]])


@dataclass
class Table:
    """The attacked table on the public scale: the prepared rows, their Gower encoding and their cells."""

    schema: Schema  # the kept columns only
    frame: pd.DataFrame
    encoding: Encoding
    X: np.ndarray
    cells: np.ndarray
    sizes: list[int]
    rows_total: int  # records given, before the sample of at most max_rows

    @classmethod
    def sample(cls, schema: Schema, prepared: pd.DataFrame, max_rows: int, rng: np.random.Generator) -> "Table":
        frame = prepared[schema.names].reset_index(drop=True)
        rows_total = len(frame)
        if len(frame) > max_rows:
            frame = frame.iloc[np.sort(rng.choice(len(frame), max_rows, replace=False))].reset_index(drop=True)
        enc = Encoding(schema)
        return cls(schema, frame, enc, enc.encode(frame), schema.to_cells(frame), schema.cell_sizes, rows_total)


@dataclass
class Game:
    """The records' roles: reference and pool, the target pairs and fixed members of the game, and of
    the shadow game the attacker plays on its reference records."""

    reference: np.ndarray
    pool: np.ndarray
    pairs: np.ndarray
    fixed: np.ndarray
    shadow_reference: np.ndarray
    shadow_pairs: np.ndarray
    shadow_fixed: np.ndarray

    @property
    def n_train(self) -> int:
        return len(self.fixed) + len(self.pairs)

    @classmethod
    def split(cls, table: Table, canary_pairs: int, rng: np.random.Generator) -> "Game":
        C, sizes = table.cells, table.sizes
        perm = rng.permutation(len(table.frame))
        n_ref = max(int(round(len(table.frame) * REFERENCE_FRACTION)), 10)
        ref_idx, pool_idx = perm[:n_ref], perm[n_ref:]
        n_pairs = min(int(canary_pairs), max(len(pool_idx) // 4, 1))
        pairs, fixed = membership_game(C, pool_idx, C, sizes, n_pairs, rng)
        s_perm = rng.permutation(ref_idx)
        s_nref = max(len(s_perm) // 4, 5)
        s_pairs, s_fixed = membership_game(
            C, s_perm[s_nref:], C[ref_idx], sizes, min(n_pairs, max((len(s_perm) - s_nref) // 4, 1)), rng
        )
        return cls(ref_idx, pool_idx, pairs, fixed, s_perm[:s_nref], s_pairs, s_fixed)


def guesses(labels: np.ndarray, scores: np.ndarray, fraction: float) -> tuple[int, int]:
    """(correct, made) over PAIRS of targets: consecutive targets (2i, 2i+1) are a pair of which a coin
    put exactly one in the training table. For the ``fraction`` of pairs whose two scores differ most
    the attacker guesses that the higher-scored one is the member; it abstains on the others (the
    order and the ties are fixed before the labels are seen)."""
    s = np.asarray(scores, dtype=float).reshape(-1, 2)
    first_in = np.asarray(labels, dtype=bool).reshape(-1, 2)[:, 0]
    d = s[:, 0] - s[:, 1]
    k = min(max(1, int(round(len(d) * fraction))), len(d))
    pick = np.argsort(-np.abs(d), kind="stable")[:k]
    return int(np.sum((d[pick] > 0) == first_in[pick])), int(k)


def summarise_attack(
    name: str, runs: list[tuple[np.ndarray, np.ndarray]], *, confidence: float, delta: float
) -> dict[str, Any]:
    """One attack's figures from its (labels, scores) per run."""
    labels = np.concatenate([r[0] for r in runs])
    scores = np.concatenate([r[1] for r in runs])
    alpha = (1.0 - confidence) / len(GUESS_FRACTIONS)  # Bonferroni over the guess counts tried
    best = {"epsilon": 0.0, "fraction": None, "correct": 0, "guesses": 0}
    for f in GUESS_FRACTIONS:
        correct = made = 0
        for lab, sc in runs:
            c, m = guesses(lab, sc, f)
            correct, made = correct + c, made + m
        eps = guessing_epsilon_lower_bound(correct, made, alpha=alpha, delta=delta)
        if eps > best["epsilon"] or best["fraction"] is None:
            best = {"epsilon": eps, "fraction": f, "correct": correct, "guesses": made}
    auc = float(np.mean([roc_auc(lab, sc) for lab, sc in runs]))
    return {
        "name": name,
        "title": ATTACK_TITLES.get(name, name),
        "sees": "noisy measurements" if name == WHITE_BOX else "synthetic rows",
        "auc": rounded(auc),
        "tpr_at_fpr": {f"{lvl:g}": rounded(tpr_at_fpr(labels, scores, lvl)) for lvl in FPR_LEVELS},
        "advantage": rounded(advantage(labels, scores)),
        "epsilon_lower_bound": rounded(best["epsilon"]),
        "guesses": {"correct": best["correct"], "made": best["guesses"], "fraction": best["fraction"]},
        "targets": int(len(labels)),
    }


def rounded(x: float, digits: int = 4):
    """A report figure: rounded, None for NaN, "inf" for infinity (the report is JSON)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return round(float(x), digits)


def theoretical_advantage(epsilon: float, delta: float = 0.0) -> float:
    """The largest membership advantage (TPR - FPR) an (epsilon, delta)-DP release allows a balanced
    attacker: (e^eps - 1) / (e^eps + 1) + delta (Yeom et al. 2018; Humphries et al. 2023)."""
    if epsilon > 700:
        return 1.0
    return min(1.0, (math.exp(epsilon) - 1) / (math.exp(epsilon) + 1) + 2 * delta / (math.exp(epsilon) + 1))
