"""AIM's ``max_model_size`` against time and 2-way TVD (docs/mechanisms/aim.md, "Model size").

    python -m benchmarks.reproduce.aim_model_size --only credit_default_taiwan:1 --sizes 80 20 --repeats 2 [--jobs 2]

Each release runs through the grid's harness (``benchmarks.harness.compare.run_task``: the same training split,
public bins and evaluation), one thread each, ``--jobs`` side by side. Rows are appended to
benchmarks/out/aim-model-size.jsonl (``--report-only`` prints the table of what is there).
Reads the shared datasets (DPPORTAL_DATASETS_DIR or ../shared/datasets).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from concurrent.futures import ProcessPoolExecutor, as_completed

import pandas as pd

from benchmarks.harness.compare import ONE_THREAD, OUT, prepare_split, run_task
from benchmarks.harness.pgm_compare import pgm_task

LOG = OUT / "aim-model-size.jsonl"


def table(rows: list[dict]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("status") == "ok":
            groups.setdefault((r["dataset"], r["epsilon"], r["max_model_size"]), []).append(r)
    lines = [
        "| table | epsilon | max_model_size | releases | 2-way TVD (each) | mean | seconds (each) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (ds, eps, size), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2])):
        tv = [r["tvd_2way"] for r in rs]
        secs = ", ".join(f"{r['seconds']:.0f}" for r in rs)
        lines.append(
            f"| {ds} | {eps:g} | {size:g} | {len(rs)} | {', '.join(f'{x:.4f}' for x in tv)} | "
            f"{statistics.mean(tv):.4f} | {secs} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=["credit_default_taiwan:1"], help="DATASET:EPSILON pairs")
    ap.add_argument("--sizes", nargs="*", type=float, default=[80.0, 20.0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args(argv)
    if not a.report_only:
        pairs = [(p.split(":")[0], float(p.split(":")[1])) for p in a.only]
        work = OUT / "work-aim-model-size"
        tasks = []
        for ds, eps in pairs:
            tr, te, _, target = prepare_split(ds, work)
            n = len(pd.read_csv(tr, usecols=[0]))
            for rep in range(a.repeats):
                for size in a.sizes:  # interleaved: each size sees the same load
                    t = pgm_task(
                        ds,
                        "dpportal",
                        "aim",
                        eps,
                        {"max_model_size": size},
                        split=(tr, te, target, n),
                        out=work / f"{ds}-{eps}-{size:g}-{rep}.csv",
                        timeout=0,
                        dpportal_timeout=3600,
                        rep=rep,
                    )
                    t["max_model_size"] = size
                    tasks.append(t)
        os.environ.update(ONE_THREAD)  # children inherit: one thread per release
        with ProcessPoolExecutor(max_workers=a.jobs) as pool, LOG.open("a") as fh:
            futures = {pool.submit(run_task, t): t for t in tasks}
            for f in as_completed(futures):
                row = {**f.result(), "max_model_size": futures[f]["max_model_size"], "jobs": a.jobs}
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                print(json.dumps(row), flush=True)
    rows = [json.loads(x) for x in LOG.read_text().splitlines()] if LOG.exists() else []
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
