"""density-lp on a real table: adult (15 columns, numeric cut in 10 public bins), all 2-way marginals.

Schema ``benchmarks/schemas/adult.json`` (round public bounds), degree 2 (120 tables, |F| = 12,090
cell indicators), m = 20,000 reference points, synthetic rows = n = 32,561. References: ``product``
(the default for this domain: product of perturbed 1-way histograms; the full perturbed histogram
would need 7.6e13 cells) and ``uniform`` (BSV's original). Noise: seeded numpy backend (the secure
OpenDP backend adds ~0.1 s for the 12,090 integer counts + 164 one-way counts).

Measures: fit seconds (whole release: preparing the table, noise, the LP), LP seconds and size, t*,
and the synthetic table's 2-way marginal error over the 105 column pairs on the public cells:
mean and max total variation distance per pair, and the max absolute cell error over all 1- and
2-way cells; the same for cells drawn from h* before decoding (suffix ``_h``: the schema's decoding
of integer columns with multi-value bins moves some rows into the neighbouring bin).

    python -m benchmarks.reproduce.density_lp_adult [--quick]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness.datasets import datasets_dir  # noqa: E402
import mechanisms.synthesizers.density_lp as dlp  # noqa: E402
from mechanisms.noise import Noise  # noqa: E402
from mechanisms.schema import Schema  # noqa: E402
from mechanisms.source import TableSource  # noqa: E402

DATA = datasets_dir() / "adult.csv"  # DPPORTAL_DATASETS_DIR, default ../shared/datasets
SCHEMA = "benchmarks/schemas/adult.json"
OUT = Path("benchmarks/out")


def pair_errors(real: np.ndarray, syn: np.ndarray, sizes: list[int], names: list[str]) -> dict:
    tvds, pairs = [], []
    for a, b in itertools.combinations(range(len(sizes)), 2):
        pairs.append(f"{names[a]} x {names[b]}")
        shape = (sizes[a], sizes[b])
        pr = np.bincount(np.ravel_multi_index((real[:, a], real[:, b]), shape), minlength=shape[0] * shape[1])
        ps = np.bincount(np.ravel_multi_index((syn[:, a], syn[:, b]), shape), minlength=shape[0] * shape[1])
        tvds.append(0.5 * np.abs(pr / len(real) - ps / len(syn)).sum())
    tables = dlp.marginal_tables(len(sizes), 2)
    cell_err = np.abs(
        dlp.marginal_counts(real, sizes, tables) / len(real) - dlp.marginal_counts(syn, sizes, tables) / len(syn)
    ).max()
    return {
        "tvd2_mean": round(float(np.mean(tvds)), 4),
        "tvd2_max": round(float(np.max(tvds)), 4),
        "worst_pair": pairs[int(np.argmax(tvds))],
        "cell_err_max": round(float(cell_err), 4),
    }


def run_one(schema: Schema, reference: str, epsilon: float, seed: int, m: int) -> dict:
    source = TableSource(schema, path=DATA)
    mech = dlp.DensityLP(schema, epsilon=epsilon, noise=Noise.seeded(seed), reference=reference, m=m, degree=2)
    t0 = time.perf_counter()
    mech.fit(source)
    fit_s = time.perf_counter() - t0
    real = schema.to_cells(source.frame())
    syn = schema.to_cells(mech.sample(source.n))
    rng = np.random.default_rng(seed)  # h* itself: cells drawn from the LP weights, before decoding
    cells_h = mech.points[rng.choice(len(mech.weights), size=source.n, p=mech.weights / mech.weights.sum())]
    rep = mech.report()
    return {
        "reference": reference,
        "epsilon": epsilon,
        "seed": seed,
        "m": m,
        "fit_s": round(fit_s, 1),
        "lp_s": rep["solve_seconds"],
        "lp_rows": rep["lp_rows"],
        "lp_columns": rep["lp_columns"],
        "lp_nonzeros": rep["lp_nonzeros"],
        "rows_folded": rep["lp_rows_folded"],
        "t_star": round(rep["t_star"], 4),
        **pair_errors(real, syn, schema.cell_sizes, schema.names),
        **{k + "_h": v for k, v in pair_errors(real, cells_h, schema.cell_sizes, schema.names).items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="epsilon 1, product reference, m = 5000")
    ap.add_argument("--epsilons", default="0.3,1,3,10")
    args = ap.parse_args()
    schema = Schema.from_json(Path(SCHEMA).read_text())
    if args.quick:
        runs = [("product", 1.0, 5_000)]
    else:
        eps = [float(e) for e in args.epsilons.split(",")]
        runs = [("product", e, 20_000) for e in eps] + [("uniform", 1.0, 20_000), ("uniform", 10.0, 20_000)]
    results = []
    for reference, epsilon, m in runs:
        res = run_one(schema, reference, epsilon, seed=0, m=m)
        results.append(res)
        print(json.dumps(res), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ("density_lp_adult" + ("_quick" if args.quick else "") + ".json")).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
