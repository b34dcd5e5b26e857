"""Shared pieces of the pMSE-mechanism benchmarks (papers/pmse-mechanism.txt, Sections 5-7).

Data as in the paper: X1 ~ N(2, 10), X2 | X1 ~ N(−2.5 + 0.5·X1, 3) (the paper writes VARIANCES),
n = 5000. Public schema bounds [−20, 24] for X1 and [−20, 15] for X2: about ±7 sd, so clipping is
negligible and the bounded model matches the paper's unbounded one.

Evaluation metric (Table 2): pMSE of a CART fitted to real vs synthetic, rpart-like greedy Gini
trees with unlimited depth (rpart's 30), cp = 0.001 and minbucket 5 (synthpop ``utility.gen``'s CART
settings; our :func:`mechanisms.synthesizers.pmse.tree_pmse`). With cp = 0.01 the non-DP level would be ~0 (every
split pruned), far from the paper's 0.0066; cp = 0.001 / minbucket 5 gives 0.007. Not private: a
steward-side utility measure.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pandas as pd

from mechanisms.noise import Noise  # noqa: E402
from mechanisms.synthesizers.pmse import UNLIMITED_DEPTH, PMSEMechanism, tree_pmse  # noqa: E402
from mechanisms.schema import Column, Schema  # noqa: E402
from mechanisms.source import TableSource  # noqa: E402

PAPER_SCHEMA = Schema(
    columns=(Column("x1", "continuous", lower=-20.0, upper=24.0), Column("x2", "continuous", lower=-20.0, upper=15.0))
)
OUT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out")


def paper_data(n: int, rng: np.random.Generator) -> pd.DataFrame:
    x1 = rng.normal(2.0, math.sqrt(10.0), n)
    x2 = -2.5 + 0.5 * x1 + rng.normal(0.0, math.sqrt(3.0), n)
    return pd.DataFrame({"x1": x1, "x2": x2})


def as_raw(df: pd.DataFrame) -> pd.DataFrame:
    """The string table a steward would upload (full float precision)."""
    return df.apply(lambda c: c.map(repr))


def eval_pmse(
    real: np.ndarray, syn: np.ndarray, *, depth: int = UNLIMITED_DEPTH, cp: float = 0.001, min_leaf: int = 5
) -> float:
    """pMSE of an rpart-like CART (Gini, cp on the misclassification risk), real vs synthetic, same n.
    Defaults = synthpop's ``utility.gen`` CART (cp 1e-3, minbucket 5), which reproduces the paper's
    non-DP Table 2 level (0.0066)."""
    n = len(real)
    V = np.concatenate([np.asarray(real, float), np.asarray(syn, float)])[None]
    y = np.r_[np.zeros(n), np.ones(len(syn))]
    return float(tree_pmse(V, y, depth=depth, alpha=cp * min(n, len(syn)), min_leaf=min_leaf)[0])


def ols(df: pd.DataFrame) -> np.ndarray:
    """(intercept, slope) of x2 on x1."""
    slope, intercept = np.polyfit(df["x1"].to_numpy(float), df["x2"].to_numpy(float), 1)
    return np.array([intercept, slope])


def non_dp_synthetic(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Non-DP comparison: one draw from the sequential model fitted by maximum likelihood (a plug-in
    stand-in for the paper's posterior-predictive (BPPD) synthesis)."""
    x1 = df["x1"].to_numpy(float)
    b0, b1 = ols(df)
    resid = df["x2"].to_numpy(float) - (b0 + b1 * x1)
    s1 = rng.normal(x1.mean(), x1.std(), len(df))
    s2 = b0 + b1 * s1 + rng.normal(0.0, resid.std(), len(df))
    return pd.DataFrame({"x1": s1, "x2": s2})


def release(df: pd.DataFrame, epsilon: float, seed: int, **params) -> tuple[PMSEMechanism, float]:
    """Fit the mechanism on ``df`` (seeded noise: benchmarks only); returns (mechanism, wall seconds).
    ``mech.cpu_seconds`` holds the process CPU time of the fit (one thread: the honest figure on a
    shared machine, where wall time also counts waiting for the CPU)."""
    mech = PMSEMechanism(PAPER_SCHEMA, epsilon=epsilon, noise=Noise.seeded(seed), **params)
    t0, c0 = time.perf_counter(), time.process_time()
    mech.fit(TableSource.from_frame(PAPER_SCHEMA, as_raw(df)))
    mech.cpu_seconds = time.process_time() - c0
    return mech, time.perf_counter() - t0


def split_half_gap(trace: np.ndarray) -> float:
    """Mixing check: max over parameters of |mean(first half) − mean(second half)| / sd(whole trace)
    of the post-burn-in chain (a two-chunk Geweke-style statistic; < 0.5 read as "mixed enough")."""
    h = len(trace) // 2
    sd = trace.std(axis=0)
    sd[sd == 0] = np.inf
    return float(np.max(np.abs(trace[:h].mean(axis=0) - trace[h:].mean(axis=0)) / sd))


def write_markdown(name: str, lines: list[str]) -> str:
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path
