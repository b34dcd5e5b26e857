"""PrivHP accuracy-memory trade-off against the unpruned hierarchy (He et al.'s PMM) at equal epsilon.

The paper (arXiv 2412.09756) has no experiments; its claim (Theorem 1 / Table 1) is that PrivHP interpolates
between PMM (all nodes exact to depth r, O(epsilon n) memory) and a small memory budget M, paying an extra
term ||tail_k(X)||_1 / (M^(1/d) n), which is small on SKEWED input, so pruning costs little there (and can
even help, fewer noisy nodes), while on spread-out (uniform-ish) input it costs more.

Setup: epsilon = 1 for every method; PMM = PrivHP with ``pruning_level = depth`` (the complete tree with
exact noisy counters, the same square-root budget split and the same consistency step; PMM's own code uses
a proportional consistency rule instead). PrivHP runs with its defaults from ``memory_mb`` (L*, w, k = w/2,
j). Memory is the structure + output-tree part of ``memory_model`` (what the budget controls).

Inputs on [0,1]^d (d = 1, 2), n rows:
* skewed: 200 tight clusters (sd 1e-3 per axis) with Zipf(1.3) weights,
* uniform: U[0,1]^d,
* real: california_housing (longitude, latitude), the schema's PUBLIC bounding box
  (benchmarks/schemas/california_housing.json), n = 20,640.

Accuracy: d = 1: exact W1(mu_X, mu_T) between the input and the generator's distribution (uniform inside
each leaf), integrated from the two CDFs (no synthetic sampling; checked against
scipy.stats.wasserstein_distance on sampled rows).
d = 2: the dyadic tree distance TD = sum_{l=1..L} delta_(l-1) * (1/2) * ||mu_l - nu_l||_1 over the cut-in-
turn dyadic grids of depth L = 24 (2^12 cells per axis), delta_l the l_inf diameter of a level-l cell.
TD is an upper bound on W1 (l_inf) up to the resolution delta_L = 2^-12 (each level's mismatched mass
moves at most the parent's diameter); it is the same estimator for all methods (4n synthetic rows). Mean over seeds (the
input is redrawn per seed; california: the same table, fresh noise). The row "no noise, full depth-r
tree" is a non-private reference: the input's depth-r histogram sampled the same way (resolution +
sampling error of the estimator).

    python -m benchmarks.reproduce.privhp_tradeoff            # n = 1,000,000 synthetic inputs, 3 seeds
    python -m benchmarks.reproduce.privhp_tradeoff --quick    # n = 100,000, 1 seed
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance

from benchmarks.harness.datasets import datasets_dir
from mechanisms.noise import Noise
from mechanisms.synthesizers.privhp import PrivHP
from mechanisms.schema import Column, Schema
from mechanisms.source import read_raw_csv

REPO = Path(__file__).resolve().parents[2]
DATA = datasets_dir() / "california_housing.csv"  # DPPORTAL_DATASETS_DIR, default ../shared/datasets
EPSILON = 1.0
SYNTH_FACTOR = 4  # synthetic rows = 4 n, so the synthetic sample's own sampling error stays small


class Prepared:
    """TableSource-like: prepared rows (unit cube coordinates decoded to the schema's units), in chunks."""

    def __init__(self, schema: Schema, X: np.ndarray):
        self.schema, self.X, self.n = schema, X, len(X)

    def frame(self):
        raise AssertionError("PrivHP must stream")

    def chunks(self, size: int):
        lo = np.array([c.lower for c in self.schema.kept])
        hi = np.array([c.upper for c in self.schema.kept])
        for s in range(0, self.n, size):
            yield pd.DataFrame(lo + self.X[s : s + size] * (hi - lo), columns=self.schema.names)


def unit_schema(d: int) -> Schema:
    return Schema(columns=tuple(Column(f"x{i}", "continuous", lower=0.0, upper=1.0) for i in range(d)))


def make_input(kind: str, d: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(1000 + seed)
    if kind == "uniform":
        return rng.random((n, d))
    centres = rng.random((200, d))
    w = 1.0 / np.arange(1, 201) ** 1.3
    which = rng.choice(200, size=n, p=w / w.sum())
    return np.clip(centres[which] + rng.normal(0, 1e-3, (n, d)), 0, 1)


def _grid_ids(X: np.ndarray, levels: int) -> np.ndarray:
    """Sorted depth-``levels`` dyadic cell ids (axes cut in turn, bits interleaved: prefix = ancestor)."""
    d = X.shape[1]
    ids = np.zeros(len(X), dtype=np.int64)
    cells = [
        np.minimum(
            (X[:, i] * 2.0 ** (levels // d + (i < levels % d))).astype(np.int64),
            2 ** (levels // d + (i < levels % d)) - 1,
        )
        for i in range(d)
    ]
    used = [0] * d
    for level in range(1, levels + 1):
        a = (level - 1) % d
        t = levels // d + (a < levels % d)
        used[a] += 1
        ids = (ids << 1) | ((cells[a] >> (t - used[a])) & 1)
    return np.sort(ids)


def _hist(sorted_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_ids)) + 1])
    return sorted_ids[starts], np.diff(np.concatenate([starts, [len(sorted_ids)]]))


def tree_distance(X: np.ndarray, Y: np.ndarray, levels: int = 24) -> float:
    """TD = sum_l delta_(l-1) * (1/2) ||mu_l - nu_l||_1 over dyadic levels 1..levels (an upper bound on W1)."""
    d = X.shape[1]
    gx, gy = _grid_ids(X, levels), _grid_ids(Y, levels)
    total = 0.0
    for level in range(1, levels + 1):
        diam = 2.0 ** -((level - 1) // d)  # l_inf diameter of a level-(l-1) cell
        kx, cx = _hist(gx >> (levels - level))
        ky, cy = _hist(gy >> (levels - level))
        keys = np.union1d(kx, ky)
        hx, hy = np.zeros(len(keys)), np.zeros(len(keys))
        hx[np.searchsorted(keys, kx)] = cx / len(X)
        hy[np.searchsorted(keys, ky)] = cy / len(Y)
        total += diam * 0.5 * np.abs(hx - hy).sum()
    return total


def w1_generator_1d(x: np.ndarray, mech: PrivHP) -> float:
    """Exact W1(mu_X, mu_T) on [0,1] (no synthetic sampling): F_X is a step function, the generator's
    CDF F_T is piecewise linear over the leaves (uniform inside each leaf); integrate |F_X - F_T|."""
    n = len(x)
    x = np.sort(x)
    level = mech.leaf_level.astype(np.int64)
    lo = np.ldexp(mech.leaf_id.astype(np.float64), -level)
    hi = np.ldexp((mech.leaf_id + 1).astype(np.float64), -level)
    mass = mech.leaf_count / mech.leaf_count.sum()
    before = np.concatenate([[0.0], np.cumsum(mass)[:-1]])

    def f_t(t):
        i = np.clip(np.searchsorted(lo, t, side="right") - 1, 0, len(lo) - 1)
        frac = np.clip((t - lo[i]) / (hi[i] - lo[i]), 0.0, 1.0)
        return np.where(t < lo[0], 0.0, before[i] + mass[i] * frac)

    grid = np.unique(np.concatenate([[0.0, 1.0], x, lo, hi]))
    g = np.searchsorted(x, grid, side="right") / n - f_t(grid)  # F_X - F_T at the grid points
    g0, dx = g[:-1], np.diff(grid)
    # on each segment F_X is constant (right-continuous) and F_T linear: g runs linearly from g0 to g1-
    g1_left = g0 - (f_t(grid[1:]) - f_t(grid[:-1]))
    same = g0 * g1_left >= 0
    a, b = np.abs(g0), np.abs(g1_left)
    part = np.where(same, 0.5 * (a + b), 0.5 * (a * a + b * b) / np.maximum(a + b, 1e-300))
    return float(np.sum(dx * part))


def distance(X: np.ndarray, Y: np.ndarray) -> float:
    if X.shape[1] == 1:
        return float(wasserstein_distance(X[:, 0], Y[:, 0]))
    return tree_distance(X, Y)


def run_one(schema: Schema, X: np.ndarray, params: dict, seed: int) -> dict:
    noise = Noise.seeded(seed)
    if params.pop("noise_off", False):  # non-private reference: exact counts
        noise.laplace_int = lambda counts, scale: np.asarray(counts, dtype=np.int64).copy()
    mech = PrivHP(schema, epsilon=EPSILON, noise=noise, chunk_rows=100_000, **params)
    t = time.perf_counter()
    mech.fit(Prepared(schema, X))
    fit_s = time.perf_counter() - t
    if X.shape[1] == 1:  # exact W1 to the generator's distribution (the paper's quantity)
        dist = w1_generator_1d(X[:, 0], mech)
    else:
        dist = distance(X, schema.to_unit(mech.sample(SYNTH_FACTOR * len(X))))
    mem = mech.plan.memory_bytes(len(schema.kept))
    return {"dist": dist, "memory_kb": (mem["structure"] + mem["tree"]) / 1024, "fit_s": fit_s, "plan": mech.plan}


def sweep(label: str, schema: Schema, inputs: list[np.ndarray], budgets_mb: list[float]) -> list[dict]:
    rows = []
    configs = [
        ("no noise, full depth-r tree (floor)", {"pruning_level": 62, "noise_off": True}),
        ("PMM (unpruned)", {"pruning_level": 62}),
    ] + [(f"PrivHP {mb} MiB", {"memory_mb": mb}) for mb in budgets_mb]
    for name, params in configs:
        res = [run_one(schema, X, dict(params), seed=7 + i) for i, X in enumerate(inputs)]
        p = res[0]["plan"]
        rows.append(
            {
                "input": label,
                "method": name,
                "r": p.depth,
                "L*": p.pruning_level,
                "k": p.k if p.sketch_levels else "-",
                "w": p.width if p.sketch_levels else "-",
                "j": p.sketch_depth if p.sketch_levels else "-",
                "memory_kb": round(res[0]["memory_kb"], 1),
                "distance": float(np.mean([r["dist"] for r in res])),
                "sd": float(np.std([r["dist"] for r in res])),
                "fit_s": round(np.mean([r["fit_s"] for r in res]), 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def california() -> tuple[Schema, np.ndarray]:
    full = Schema.from_json((REPO / "benchmarks" / "schemas" / "california_housing.json").read_text())
    cols = tuple(c for c in full.columns if c.name in ("longitude", "latitude"))
    schema = Schema(columns=cols)
    raw = read_raw_csv(DATA)[["longitude", "latitude"]]
    return schema, schema.to_unit(schema.prepare(raw))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 2], help="dimensions of the synthetic inputs")
    ap.add_argument("--no-real", action="store_true", help="skip the california table")
    args = ap.parse_args()
    n, seeds = (100_000, 1) if args.quick else (1_000_000, 3)
    budgets = [0.01, 0.05, 0.25, 1.0]
    rows = []
    for d in args.dims:
        for kind in ("skewed", "uniform"):
            inputs = [make_input(kind, d, n, s) for s in range(seeds)]
            rows += sweep(f"{kind} d={d} n={n:,}", unit_schema(d), inputs, budgets)
    if DATA.exists() and not args.no_real:
        schema, X = california()
        rows += sweep(f"california lon/lat d=2 n={len(X):,}", schema, [X] * seeds, [0.002, 0.01, 0.05])
    print()
    print("| input | method | r | L* | k | w | j | memory KiB | W1 (d=1) / TD (d=2) | sd | fit s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['input']} | {r['method']} | {r['r']} | {r['L*']} | {r['k']} | {r['w']} | {r['j']} | "
            f"{r['memory_kb']:,} | {r['distance']:.3g} | {r['sd']:.2g} | {r['fit_s']} |"
        )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
