"""Calibrate the run-time estimates (mechanisms/guidance/runtime.py): time releases on the shared datasets, fit
``seconds = a + b w`` per mechanism, print predicted vs measured (docs/operations.md quotes the table) and the
COEFFICIENTS to paste into each mechanism's RuntimeModel (its package's guide.py).

    python -m benchmarks.calibration.runtime_calibration            # ~10 min on 2 cores, one thread per run
    python -m benchmarks.calibration.runtime_calibration --refit    # fit again from the last log (no runs)
    python -m benchmarks.calibration.runtime_calibration --report   # table from the last log, with the module's
                                                        # current coefficients (no runs)

AIM's estimate is its plan's cost model, calibrated stage by stage by ``benchmarks.calibration.aim_plan``.

Every run is its own process (benchmarks/harness/run_one.py) limited to one thread, like a worker job with
DPPORTAL_THREADS_PER_JOB=1; synthetic rows = n. Needs the shared datasets (DPPORTAL_DATASETS_DIR).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from benchmarks.harness.compare import FILES, ONE_THREAD
from benchmarks.harness.datasets import dataset_path
from mechanisms import registry
from mechanisms.guidance import runtime
from mechanisms.schema import Schema

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "benchmarks" / "out" / "runtime-calibration.jsonl"
DELTA = 1e-5
# (mechanism, dataset, rows used (None = all), params): small enough that the whole plan is ~10 min
PLAN = [
    *[
        (m, ds, n, {})
        for m in ("baseline", "kdtree-grid", "kdtree-adaptive", "privhp")
        for ds, n in (("german_credit", None), ("bank_marketing", None), ("california_housing", None), ("adult", None))
    ],
    *[
        ("density-lp", ds, n, {})
        for ds, n in (("german_credit", None), ("bank_marketing", None), ("adult", 10000), ("adult", None))
    ],
    *[
        ("pmse", "california_housing_numeric", n, {"iterations": str(it), "burn_in": str(burn)})
        for n, it, burn in ((2000, 100, 100), (5000, 100, 100), (5000, 200, 100))
    ],  # the chain's floors: 100
    *[
        ("dpmerf", ds, n, {"epochs": str(e)})
        for ds, n, e in (
            ("german_credit", None, 300),
            ("bank_marketing", None, 300),
            ("adult", None, 200),
            ("adult", None, 500),
            ("california_housing", None, 300),
        )
    ],
    *[("mst", ds, None, {}) for ds in ("german_credit", "bank_marketing", "california_housing", "adult")],
]


def _table(name: str, n: int | None, work: Path) -> tuple[Path, Schema, int]:
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{name}.json").read_text())
    raw = pd.read_csv(dataset_path(f"{FILES.get(name, name)}.csv"), dtype=str, keep_default_na=False)
    if n is not None and n < len(raw):
        raw = raw.sample(n=n, random_state=2026)
    path = work / f"{name}-{len(raw)}.csv"
    raw.to_csv(path, index=False)
    return path, schema, len(raw)


def run_plan(plan) -> list[dict]:
    rows = []
    LOG.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, LOG.open("a") as log:
        work = Path(tmp)
        for mech, ds, n, params in plan:
            data, schema, n_rows = _table(ds, n, work)
            if mech not in registry.supporting(schema):
                continue
            schema_path = work / f"{ds}.json"
            schema_path.write_text(schema.to_json() if hasattr(schema, "to_json") else json.dumps(schema.to_dict()))
            cmd = [
                sys.executable,
                "-m",
                "benchmarks.harness.run_one",
                mech,
                "--data",
                str(data),
                "--schema",
                str(schema_path),
                "--epsilon",
                "1",
                "--rows",
                str(n_rows),
                "--out",
                str(work / "o.csv"),
            ]
            if registry.get(mech).needs_delta:
                cmd += ["--delta", str(DELTA)]
            for k, v in params.items():
                cmd += ["--param", f"{k}={v}"]
            r = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=1800,
                env={**_env(), **ONE_THREAD, "DPPORTAL_THREADS_PER_JOB": "1"},
            )
            if r.returncode != 0:
                print(f"{mech} {ds}: failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}", file=sys.stderr)
                continue
            out = json.loads(r.stdout.strip().splitlines()[-1])
            row = {"mechanism": mech, "dataset": ds, "n": n_rows, "params": params, "seconds": out["seconds"]}
            rows.append(row)
            log.write(json.dumps(row) + "\n")
            log.flush()
            print(f"{mech:16s} {ds:28s} n={n_rows:6d} {params} {out['seconds']:.2f} s", flush=True)
    return rows


def _env() -> dict:
    import os

    return dict(os.environ)


def _work(row: dict) -> float:
    """The work measure of a logged run, computed with the CURRENT run-time models."""
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{row['dataset']}.json").read_text())
    return runtime.work(
        row["mechanism"],
        n=row["n"],
        schema=schema,
        params=row["params"],
        epsilon=row.get("epsilon"),
        delta=row.get("delta"),
    )


def fit(rows: list[dict]) -> dict[str, tuple[float, float]]:
    """Per mechanism, a and b >= 0 minimising the squared RELATIVE error (weights 1/measured)."""
    coeffs = {}
    for mech in sorted({r["mechanism"] for r in rows}):
        pts = [r for r in rows if r["mechanism"] == mech]
        t = np.array([r["seconds"] for r in pts])
        A = np.column_stack([1 / t, np.array([_work(r) for r in pts]) / t])
        (a, b), _ = nnls(A, np.ones(len(pts)))
        coeffs[mech] = (float(f"{a:.3g}"), float(f"{b:.3g}"))
    return coeffs


def report(rows: list[dict], coeffs: dict[str, tuple[float, float]]) -> str:
    lines = [
        "| mechanism | dataset | n | parameters | measured s | predicted s | ratio |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    worst = 1.0
    for r in rows:
        a, b = coeffs.get(r["mechanism"], runtime.FALLBACK)
        pred = a + b * _work(r)
        ratio = pred / r["seconds"]
        worst = max(worst, ratio, 1 / ratio)
        params = (
            ", ".join(
                f"{k}={v}" for k, v in {**r["params"], **({"epsilon": r["epsilon"]} if "epsilon" in r else {})}.items()
            )
            or "defaults"
        )
        lines.append(
            f"| {r['mechanism']} | {r['dataset']} | {r['n']:,} | {params} | {r['seconds']:.1f} | "
            f"{pred:.1f} | {ratio:.2f} |"
        )
    lines.append(f"\nworst factor between predicted and measured: {worst:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--report", action="store_true", help="no runs: report the last log with the module's coefficients")
    p.add_argument("--refit", action="store_true", help="no runs: fit the last log again")
    p.add_argument("--only", nargs="+", help="run only these mechanisms, appending to the log")
    a = p.parse_args(argv)
    if a.report or a.refit:
        rows = [json.loads(line) for line in LOG.read_text().splitlines()]
        coeffs = fit(rows) if a.refit else runtime.coefficients()
        print(report(rows, coeffs))
        if a.refit:
            print("COEFFICIENTS = " + json.dumps(coeffs))
        return 0
    if a.only:
        run_plan([t for t in PLAN if t[0] in a.only])
        rows = [json.loads(line) for line in LOG.read_text().splitlines()]
    else:
        LOG.unlink(missing_ok=True)
        rows = run_plan(PLAN)
    coeffs = fit(rows)
    print(report(rows, coeffs))
    print("COEFFICIENTS = " + json.dumps(coeffs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
