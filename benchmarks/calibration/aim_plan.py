"""AIM's plan cost model (mechanisms/synthesizers/aim/guide.py, PLAN_*): releases timed stage by stage, the
constants fitted on them, and the plan's prediction against the measured seconds of each release.

    python -m benchmarks.calibration.aim_plan [--out docs/data/aim-plan.jsonl]   # run the releases (minutes)
    python -m benchmarks.calibration.aim_plan --fit [--out ...]                  # fit and compare (seconds)

Each release: a shared table (drafted schema of a random half, as a steward confirms it), AIM at epsilon 1,
delta 1e-5, one job thread, the plan's own rounds (``estimates``) and T (``max_rounds``) varied. A fit records
the time at the end of its start (1-way marginals and the first estimate), of each round (scoring every
candidate, selecting, measuring, re-estimating) and of the final estimate, with the measured marginals in the
model at each point (``AIM.timings``). The fit: non-negative least squares per stage (scipy.optimize.nnls).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.harness.datasets import dataset_path
from benchmarks.harness.wide import raw_side_by_side, split
from mechanisms.draft import draft_schema
from mechanisms.noise import Noise
from mechanisms.runner import build, run
from mechanisms.source import TableSource, read_raw_csv
from mechanisms.synthesizers.aim import candidate_weights, guide, workload_cliques

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data" / "aim-plan.jsonl"
# (table, workload, target, rounds per column for T (0: the default), estimates)
RUNS = [
    ("german_credit", "all-2way", None, 0, 0),
    ("german_credit", "target", "credit_risk", 0, 0),
    ("adult", "target", "income", 0, 0),
    ("adult", "all-2way", None, 0, 0),
    ("adult", "target", "income", 2, 1),
    ("bank_marketing", "all-2way", None, 0, 0),
    ("california_housing", "all-2way", None, 0, 0),
    ("credit_default_taiwan", "all-2way", None, 0, 0),
    ("credit_default_taiwan", "target", "default.payment.next.month", 0, 0),
    ("credit_adult", "target", "adult_income", 0, 0),
    ("credit_adult", "all-2way", None, 0, 0),
    ("credit_adult", "target", "adult_income", 4, 8),
    ("bank_credit", "all-2way", None, 0, 0),
    ("bank_credit", "target", "credit_default.payment.next.month", 0, 0),
]


def table(name: str, seed: int):
    if name in ("credit_adult", "bank_credit"):
        a, _ = split(raw_side_by_side(name, seed), seed)
    else:
        a, _ = split(read_raw_csv(dataset_path(f"{name}.csv")), seed)
    return a


def one(name: str, workload: str, target: str | None, per_column: int, estimates: int, seed: int) -> dict:
    a = table(name, seed)
    schema = draft_schema(a).confirmed()
    d = len(schema.names)
    params = {"workload": workload}
    if target:
        params["target"] = target
    if per_column:
        params["max_rounds"] = per_column * d
    if estimates:
        params["estimates"] = estimates
    mech = build("aim", schema, epsilon=1.0, delta=1e-5, params=params, noise=Noise.secure_backend(), n=len(a))
    t0 = time.perf_counter()
    run(mech, TableSource.from_frame(schema, a), len(a))
    seconds = time.perf_counter() - t0
    candidates = len(candidate_weights(schema.names, workload_cliques(schema.names, workload, target)))
    return {
        "table": name,
        "params": params,
        "n": len(a),
        "d": d,
        "candidates": candidates,
        "plan": mech.plan.to_dict(),
        "batches": mech.batches,
        "seconds": round(seconds, 2),
        "timings": [[s, round(t, 3), k, round(m, 3)] for s, t, k, m in mech.timings],
    }


def fit(rows: list[dict]) -> dict:
    """PLAN_START, PLAN_COUNT, PLAN_ROUND, PLAN_FINAL by non-negative least squares on the stages' durations."""
    from scipy.optimize import nnls

    start_x, start_y, round_x, round_y, final_x, final_y = [], [], [], [], [], []
    for r in rows:
        t = r["timings"]
        start_x.append([1.0, r["d"]])
        start_y.append(t[0][1])
        previous = t[0][1]
        rounds = [s for s in t if s[0] == "round"]
        for k, (_, when, cliques, _) in enumerate(rounds):
            first = r["n"] * r["candidates"] / 1e6 if k == 0 else 0.0
            round_x.append([1.0, r["candidates"], cliques, first])
            round_y.append(when - previous)
            previous = when
        final_x.append([1.0, t[-1][2]])
        final_y.append(t[-1][1] - previous)
    s, _ = nnls(np.array(start_x), np.array(start_y))
    rd, _ = nnls(np.array(round_x), np.array(round_y))
    f, _ = nnls(np.array(final_x), np.array(final_y))
    return {
        "PLAN_START": (round(s[0], 3), round(s[1], 4)),
        "PLAN_COUNT": round(rd[3], 4),
        "PLAN_ROUND": (round(rd[0], 3), round(rd[1], 6), round(rd[2], 4)),
        "PLAN_FINAL": (round(f[0], 3), round(f[1], 4)),
    }


def compare(rows: list[dict]) -> list[str]:
    """Predicted (the plan as shown before the release) against measured seconds of each release."""
    out = ["| table | params | T | rounds run | predicted s | measured s | measured / predicted |", "|" + "---|" * 7]
    for r in rows:
        p = guide.plan_seconds(
            n=r["n"], d=r["d"], candidates=r["candidates"], units=r["plan"]["units"], estimates=r["plan"]["estimates"]
        )
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items() if k != "target")
        out.append(
            f"| {r['table']} | {params} | {r['plan']['units']} | {len(r['batches'])} | {p:.1f} | {r['seconds']:.1f} | "
            f"{r['seconds'] / p:.2f} |"
        )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--fit", action="store_true", help="fit the constants on --out and compare; runs nothing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", help="run only these tables")
    args = p.parse_args(argv)
    if args.fit:
        rows = [json.loads(line) for line in open(args.out)]
        print(json.dumps(fit(rows)))
        print("\n".join(compare(rows)))
        return 0
    for spec in RUNS:
        if args.only and spec[0] not in args.only:
            continue
        row = one(*spec, seed=args.seed)
        print(json.dumps({k: v for k, v in row.items() if k != "timings"}), flush=True)
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
