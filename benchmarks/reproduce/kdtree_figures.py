"""Reproduce Figures 3a, 3b, 3c and 4 of Kreačić et al. (UAI 2023) as tables.

    python -m benchmarks.reproduce.kdtree_figures fig3ab [--quick]   # G.1 mixture, D = 2 and 5, MMD vs ε
    python -m benchmarks.reproduce.kdtree_figures fig3c  [--quick]   # adaptive in D = 10, 20, 30: MMD and time
    python -m benchmarks.reproduce.kdtree_figures fig4   [--quick]   # grid on N(0, I_d): MMD vs (εn)^(-1/3)

Noise: the seeded numpy backend (``Noise.seeded``), for reproducibility and speed; the secure backend
has the same law. Metric: see ``kdtree_common`` (Balog's RKHS distance, γ = 1e-4 / D) for Fig. 3; for
Fig. 4 the MMD to the POPULATION N(0, I_d) with k = exp(-‖x - y‖²/2) in closed form (Rustamov 2021).
Both placements are measured exactly, without sampling rows: 'center' (the paper's weighted bin
centres) and 'uniform' (the mixture of uniform cells that ``sample`` draws from), the latter through
closed-form Gaussian integrals over boxes.
"""

from __future__ import annotations

import argparse
import json
import math
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.special import erf  # noqa: E402

from benchmarks.reproduce.kdtree_common import (
    G1_BOUNDS,
    OUT_DIR,
    g1_mixture,
    mean_kxx,
    numeric_schema,  # noqa: E402
    numeric_source,
    rkhs_distance,
    timer,
)
from mechanisms.synthesizers.kdtree import KDTreeAdaptive, KDTreeGrid  # noqa: E402
from mechanisms.noise import Noise  # noqa: E402

BALOG = {  # Balog et al.'s results stored with their code (min over M), ε = 0.01, 0.1, 1
    2: {"Balog Alg1-random": (0.154, 0.0237, 0.0026), "Balog Alg2": (0.133, 0.0184, 0.0025)},
    5: {"Balog Alg1-random": (0.409, 0.2325, 0.2077), "Balog Alg2": (0.361, 0.0678, 0.0341)},
}


# -- exact RKHS distances for the two placements ------------------------------------------------------


def _boxes(mech):
    """Cells of a fitted mechanism in data coordinates: lower corners, widths, weights.

    When no cell survived, ``sample`` draws uniformly over the public box: one cell, the whole box.
    """
    rel = mech.released
    cols = mech.schema.kept
    if len(rel.weights) == 0:
        D = len(cols)
        return (
            np.array([[c.lower for c in cols]]),
            np.array([[c.upper - c.lower for c in cols]]),
            np.ones(1) if D else np.ones(0),
        )
    lo, width = mech._cell_bounds(rel.coords, rel.depth)
    span = np.array([c.upper - c.lower for c in cols])
    low = np.array([c.lower for c in cols])
    return low + lo * span, width * span, rel.weights.astype(float)


def _box_point_mean(lo, wd, X, gamma, chunk=400_000):
    """Mean over rows x of E_{z ~ U(box)} exp(-γ‖z - x‖²) for every box (product of erf terms)."""
    s = math.sqrt(gamma)
    out = np.zeros(len(lo))
    step = max(1, chunk // max(len(lo), 1))
    for a in range(0, len(X), step):
        Xc = X[a : a + step]
        prod = np.ones((len(lo), len(Xc)))
        for j in range(X.shape[1]):
            hi = (lo[:, j] + wd[:, j])[:, None]
            prod *= (
                math.sqrt(math.pi)
                / (2 * s * wd[:, j][:, None])
                * (erf(s * (hi - Xc[None, :, j])) - erf(s * (lo[:, j][:, None] - Xc[None, :, j])))
            )
        out += prod.sum(1)
    return out / len(X)


def _F(t, gamma):  # second antiderivative of exp(-γ t²)
    s = math.sqrt(gamma)
    return t * math.sqrt(math.pi) / (2 * s) * erf(s * t) + np.exp(-gamma * t * t) / (2 * gamma)


def _box_box(lo, wd, gamma):
    K = np.ones((len(lo), len(lo)))
    for j in range(lo.shape[1]):
        a1, b1 = lo[:, j][:, None], (lo[:, j] + wd[:, j])[:, None]
        a2, b2 = lo[:, j][None, :], (lo[:, j] + wd[:, j])[None, :]
        K *= (_F(b1 - a2, gamma) - _F(b1 - b2, gamma) - _F(a1 - a2, gamma) + _F(a1 - b2, gamma)) / (
            wd[:, j][:, None] * wd[:, j][None, :]
        )
    return K


def distance(mech, X, kxx, gamma, placement):
    lo, wd, w = _boxes(mech)
    if placement == "center":
        return rkhs_distance(lo + wd / 2, w, X, kxx, gamma)
    w = w / w.sum()
    val = w @ _box_box(lo, wd, gamma) @ w - 2 * w @ _box_point_mean(lo, wd, X, gamma) + kxx
    return float(np.sqrt(max(val, 0.0)))


def fit(cls, schema, src, epsilon, seed, **params):
    m = cls(schema, epsilon=epsilon, noise=Noise.seeded(seed), **params)
    m.fit(src)
    return m


def _save(name, rows):
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, f"kdtree_{name}.json"), "w") as fh:
        json.dump(rows, fh, indent=1)


# -- Figure 3a / 3b -----------------------------------------------------------------------------------


def fig3ab(quick: bool) -> list[dict]:
    eps_list = (0.01, 0.1, 1.0) if quick else (0.01, 0.1, 1.0, 10.0)
    reps = 1 if quick else 2
    rows = []
    for D in (2, 5):
        X = g1_mixture(100_000, D)
        gamma = 1e-4 / D
        kxx, how = mean_kxx(X, gamma, d=D)
        schema = numeric_schema(D, *G1_BOUNDS)
        src = numeric_source(schema, X)
        # defaults (Theorems 3/5, Lemma 10), then settings tuned on this data (NOT a private choice;
        # the paper does not give its w, t, τ either): finer grids with t = (2/ε) ln(J/β), which keeps
        # the expected number of surviving empty cells below β/2 (Lemma 10's rule applied to t)
        variants = [("grid (defaults)", KDTreeGrid, {}), ("adaptive (defaults)", KDTreeAdaptive, {})]
        for k in (20, 40, 80) if D == 2 else (8,):
            variants.append((f"grid k={k}, t=(2/ε)ln(J/β)", KDTreeGrid, {"width": 1 / k, "_t": k**D}))
        if D == 5:
            tuned = {"levels_independent": 20, "levels_adaptive": 5, "split": 0.3}
            variants.append(("adaptive h=20, h'-h=5, split 0.3", KDTreeAdaptive, tuned))
            variants.append(
                (
                    "adaptive h=20, h'-h=5, split 0.3, t=(2/ε'')ln(J/β)",
                    KDTreeAdaptive,
                    {**tuned, "_t": 2**20 + 100_000 * 5},
                )
            )
        for label, cls, params in variants:
            for eps in eps_list:
                vals = {"center": [], "uniform": []}
                cells, secs = [], []
                for r in range(reps):
                    p = dict(params)
                    J = p.pop("_t", None)
                    if J is not None:  # J = cells (grid) or Lemma 29's bound on the leaves (adaptive)
                        eps_c = eps * (1 - p.get("split", 0.0))
                        p["threshold"] = 2.0 / eps_c * math.log(J / 0.05)
                    t = timer()
                    m = fit(cls, schema, src, eps, seed=r, **p)
                    secs.append(t())
                    cells.append(len(m.released.weights))
                    for pl in vals:
                        if pl == "uniform" and len(m.released.weights) > 3000:
                            continue
                        vals[pl].append(distance(m, X, kxx, gamma, pl))
                row = {
                    "D": D,
                    "mechanism": label,
                    "epsilon": eps,
                    "rkhs_center": float(np.mean(vals["center"])),
                    "rkhs_uniform": float(np.mean(vals["uniform"])) if vals["uniform"] else None,
                    "cells": float(np.mean(cells)),
                    "fit_s": float(np.mean(secs)),
                    "reps": reps,
                    "kxx": how,
                    "config": m.config,
                }
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "config"}), flush=True)
    _save("fig3ab", rows)
    return rows


# -- Figure 3c ----------------------------------------------------------------------------------------

TUNED_H = {10: 40, 20: 60, 30: 60}  # best of h in {2D, 3D, 4D, ...} at ε = 1 (exploration, see docs)


def fig3c(quick: bool) -> list[dict]:
    rows = []
    dims = (10,) if quick else (10, 20, 30)
    for D in dims:
        X = g1_mixture(100_000, D)
        gamma = 1e-4 / D
        kxx, how = mean_kxx(X, gamma, d=D, subsample=20_000)
        schema = numeric_schema(D, *G1_BOUNDS)
        src = numeric_source(schema, X)
        # defaults, and a setting tuned on this data at ε = 1 (not a private choice): h data-independent
        # levels from TUNED_H, h'-h = 5, 30% of ε on the tree, t = (2/ε'')ln(J/β)
        h = TUNED_H[D]
        tuned = {"levels_independent": h, "levels_adaptive": 5, "split": 0.3}
        for label, params in (("defaults", {}), (f"h={h}, h'-h=5, split 0.3, t=(2/ε'')ln(J/β)", tuned)):
            for eps in (0.1, 1.0, 10.0):
                p = dict(params)
                if p:
                    p["threshold"] = 2.0 / (0.7 * eps) * math.log((2**h + 100_000 * 5) / 0.05)
                t = timer()
                m = fit(KDTreeAdaptive, schema, src, eps, seed=0, **p)
                secs = t()
                syn_t = timer()
                m.sample(100_000)
                row = {
                    "D": D,
                    "setting": label,
                    "epsilon": eps,
                    "rkhs_center": distance(m, X, kxx, gamma, "center"),
                    "fit_s": round(secs, 2),
                    "sample_100k_s": round(syn_t(), 2),
                    "cells": len(m.released.weights),
                    "kxx": how,
                    "h": m.config["levels_independent"],
                    "h'-h": m.config["levels_adaptive"],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    _save("fig3c", rows)
    return rows


# -- Figure 4 -----------------------------------------------------------------------------------------


def population_mmd(mech, d, placement):
    """MMD to N(0, I_d), kernel exp(-‖x-y‖²/2): closed forms for both placements."""
    lo, wd, w = _boxes(mech)
    w = w / w.sum()
    if placement == "center":
        Z = lo + wd / 2
        zz = (Z**2).sum(1)
        Kzz = np.exp(-0.5 * np.maximum(zz[:, None] + zz[None, :] - 2 * Z @ Z.T, 0))
        ek = 0.5 ** (d / 2) * np.exp(-zz / 4)
    else:
        Kzz = _box_box(lo, wd, 0.5)
        # E_{x~N(0,1)} exp(-(x-z)²/2) = exp(-z²/4)/sqrt(2); averaged over z ~ U[a, b]
        ek = np.ones(len(lo))
        for j in range(d):
            a, b = lo[:, j], lo[:, j] + wd[:, j]
            ek *= math.sqrt(math.pi / 2) * (erf(b / 2) - erf(a / 2)) / wd[:, j]
    val = w @ Kzz @ w - 2 * w @ ek + (1 / 3) ** (d / 2)
    return float(np.sqrt(max(val, 0.0)))


def fig4(quick: bool) -> list[dict]:
    rows = []
    n = 100_000
    eps_list = (0.01, 0.1, 1.0, 10.0) if quick else (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
    reps = 1 if quick else 3
    for d in (1, 2, 3):
        X = np.random.RandomState(7 + d).standard_normal((n, d))
        schema = numeric_schema(d, -5.0, 5.0)
        src = numeric_source(schema, X)
        for eps in eps_list:
            vals = {"center": [], "uniform": []}
            for r in range(reps):
                m = fit(KDTreeGrid, schema, src, eps, seed=r)
                for pl in vals:
                    vals[pl].append(population_mmd(m, d, pl))
            k = m.config["bins_per_axis"]
            row = {
                "d": d,
                "epsilon": eps,
                "mmd_center": float(np.mean(vals["center"])),
                "mmd_uniform": float(np.mean(vals["uniform"])),
                "(eps n)^-1/3": (eps * n) ** (-1 / 3),
                "bins_per_axis": k,
                "threshold": round(m.config["threshold"], 1),
                "rounding_term w*sqrt(d)/(2 sqrt(e))": 10 / k * math.sqrt(d) / (2 * math.sqrt(math.e)),
                "reps": reps,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    _save("fig4", rows)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("figure", choices=("fig3ab", "fig3c", "fig4"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    {"fig3ab": fig3ab, "fig3c": fig3c, "fig4": fig4}[args.figure](args.quick)


if __name__ == "__main__":
    main()
