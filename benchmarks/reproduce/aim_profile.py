"""CPU time and JAX compilations of AIM's first rounds on adult (the speed figures in docs/mechanisms/aim.md).

    python -m benchmarks.reproduce.aim_profile [--rounds 8] [--dataset adult] [--epsilon 1] [--seed S] [--level0]
        [--param k=v] [--tvd]

Prints, per round, wall and CPU seconds of this process, how many XLA programs were compiled so
far (and their compile seconds) and the junction tree's size in MiB (the model-size limit's measure).
With ``--tvd`` (a whole release: ``--rounds 100000``), the mean 2-way TVD of 200,000 rows drawn from the
final model against the whole table (seeded draw: two code versions on one ``--seed`` compare their models).
Reads the shared datasets (DPPORTAL_DATASETS_DIR or ../shared/datasets).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from benchmarks.harness.compare import DATA, FILES, ROOT
from mechanisms.evaluation.metrics import tvd
from mechanisms.noise import Noise
from mechanisms import pgm
from mechanisms.pgm import JunctionTreeSize
from mechanisms.runner import build, run
from mechanisms.schema import Schema
from mechanisms.source import TableSource


class _Stop(Exception):
    pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument(
        "--level0", action="store_true", help="every estimate at XLA level 0 (the former setting, for comparison)"
    )
    ap.add_argument("--seed", type=int, help="seeded noise (the same path run to run): for comparing settings")
    ap.add_argument("--tvd", action="store_true", help="print the final model's mean 2-way TVD against the table")
    a = ap.parse_args()
    import jax._src.compiler as compiler  # count compilations (private hook; profiling only)

    stats = {"n": 0, "s": 0.0}
    original = compiler.backend_compile_and_load

    def counted(*args, **kw):
        t = time.process_time()
        try:
            return original(*args, **kw)
        finally:
            stats["n"] += 1
            stats["s"] += time.process_time() - t

    compiler.backend_compile_and_load = counted
    if a.level0:
        pgm.OPTIMISE_MIB_ITERS = float("inf")
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{a.dataset}.json").read_text())
    t0 = time.time()

    tree = JunctionTreeSize(schema.names, schema.cell_sizes)

    def progress(fraction: float, stage: str) -> None:
        chosen = [tuple(c) for c, _ in getattr(mech, "selected", [])]
        size = tree.size_mb([(a,) for a in schema.names] + chosen)
        print(
            f"{time.time() - t0:7.1f} s wall {time.process_time():7.1f} s cpu  compiles {stats['n']:4d} "
            f"({stats['s']:.1f} s)  model {size:5.1f} MiB  {stage}",
            flush=True,
        )
        if stage.startswith(f"round {a.rounds}:"):
            raise _Stop

    mech = build(
        "aim",
        schema,
        epsilon=a.epsilon,
        delta=1e-5,
        params=dict(p.split("=", 1) for p in a.param),
        noise=Noise.secure_backend() if a.seed is None else Noise.seeded(a.seed),
        progress=progress,
    )
    source = TableSource(schema, path=DATA / f"{FILES.get(a.dataset, a.dataset)}.csv")
    try:
        run(mech, source, 100)
    except _Stop:
        return
    if a.tvd:
        print(
            f"model 2-way TVD mean {model_tvd_2way(schema, source, mech.model):.5f} ({len(mech.selected)} rounds, "
            f"{time.time() - t0:.1f} s)"
        )


def model_tvd_2way(schema: Schema, source: TableSource, model) -> float:
    """Mean over column pairs of the TVD between the table's 2-way marginal and that of 200,000 rows drawn
    from ``model`` (a fixed generator: the model, not the draw, differs between two runs)."""
    real = schema.to_cells(source.frame())
    syn = model.sample(200_000, np.random.default_rng(0))
    sizes = schema.cell_sizes
    tvds = []
    for i, j in itertools.combinations(range(len(sizes)), 2):
        k = sizes[i] * sizes[j]
        tvds.append(
            tvd(
                np.bincount(real[:, i] * sizes[j] + real[:, j], minlength=k),
                np.bincount(syn[:, i] * sizes[j] + syn[:, j], minlength=k),
            )
        )
    return float(np.mean(tvds))


if __name__ == "__main__":
    main()
