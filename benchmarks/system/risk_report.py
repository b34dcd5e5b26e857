"""The privacy risk report on benchmark tables: empirical epsilon lower bounds against the claim, the
positive control's AUC, the report's time against the release's own, and a broken variant (noise
scale divided by 10) that the report must catch.

    .venv/bin/python -m benchmarks.system.risk_report --tables adult bank_marketing credit_default_taiwan \
        bank_credit_wide --mechanisms baseline --rows 5000 --runs 30 --time-factor 3 --min-seconds 10 \
        --broken --broken-runs 30 --out docs/data/risk/goals-baseline.jsonl

(docs/benchmarks/risk.md lists the runs behind its tables.) Each line of ``--out`` is one (table,
mechanism) result; ``--markdown`` prints the table of
docs/benchmarks/risk.md from such a file. Seeded noise (benchmarks only): reruns give the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from benchmarks.harness.datasets import dataset_path
from benchmarks.harness.wide import raw_side_by_side, split
from mechanisms import risk
from mechanisms.draft import draft_schema
from mechanisms.noise import Noise, ScaledNoise
from mechanisms.runner import build
from mechanisms.schema import Schema
from mechanisms.source import TableSource, read_raw_csv

ROOT = Path(__file__).resolve().parents[2]
DELTA = 1e-6
# shorter fits than the defaults (the same privacy: fewer rounds or epochs) to fit the time of a run
PARAMS = {"dpmerf": {"epochs": 200}, "aim": {"max_rounds": 24, "iters": 100, "final_iters": 200}}


# A table with 40+ columns, which the shared datasets lack: bank_marketing's records side by side with
# as many random records of credit_default_taiwan (row i of one next to row i of the other), columns
# prefixed by their table. Each half keeps its own correlations; across halves the columns are
# independent by construction. 17 + 24 = 41 kept columns, 4,521 rows.
WIDE = {"bank_credit_wide": ("bank_marketing", "credit_default_taiwan")}
# benchmarks/harness/wide.py's tables: credit_adult, 39 columns, its half A of 15,000 rows (the stand-in for a
# census extract of about 40 columns)
HARNESS_WIDE = ("credit_adult",)


def _one_table(table: str):
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{table}.json").read_text())
    return schema, read_raw_csv(dataset_path(f"{table}.csv"))


def side_by_side(left: str, right: str, seed: int):
    """The WIDE table: ``left``'s records, each next to a random record of ``right`` (no repeats)."""
    (ls, lraw), (rs, rraw) = _one_table(left), _one_table(right)
    n = min(len(lraw), len(rraw))
    lraw = lraw.sample(n=n, random_state=seed).reset_index(drop=True) if len(lraw) > n else lraw
    rraw = rraw.sample(n=n, random_state=seed).reset_index(drop=True) if len(rraw) > n else rraw
    cols = []
    for prefix, sch in ((left.split("_")[0], ls), (right.split("_")[0], rs)):
        for c in sch.to_dict()["columns"]:
            cols.append({**c, "name": f"{prefix}_{c['name']}"})
    d = ls.to_dict()
    d["columns"] = cols
    d["missing_markers"] = sorted(set(d.get("missing_markers") or []) | set(rs.to_dict().get("missing_markers") or []))
    raw = pd.concat([lraw.add_prefix(left.split("_")[0] + "_"), rraw.add_prefix(right.split("_")[0] + "_")], axis=1)
    return Schema.from_dict(d), raw


def load(table: str, rows: int, seed: int):
    if table in HARNESS_WIDE:  # the fitted half A, its schema drafted from A and confirmed as drafted
        raw, _ = split(raw_side_by_side(table, seed), seed)
        schema = draft_schema(raw).confirmed()
    else:
        schema, raw = side_by_side(*WIDE[table], seed) if table in WIDE else _one_table(table)
    if rows and len(raw) > rows:
        raw = raw.sample(n=rows, random_state=seed).reset_index(drop=True)
    return schema, raw


def release_seconds(schema: Schema, raw, mechanism: str, epsilon: float, params: dict, seed: int) -> float:
    """fit + sample of the release itself, on the same records the report uses, after a warm-up fit on a
    few rows (imports and compilation are paid once per worker process, not per release)."""
    warm = build(
        mechanism,
        schema,
        epsilon=epsilon,
        delta=DELTA if _needs_delta(mechanism, schema, params) else 0.0,
        params=params,
        noise=Noise.seeded(seed),
        n=min(len(raw), 200),
    )
    warm.fit(TableSource(schema, frame=raw.iloc[:200].reset_index(drop=True)))
    mech = build(
        mechanism,
        schema,
        epsilon=epsilon,
        delta=DELTA if _needs_delta(mechanism, schema, params) else 0.0,
        params=params,
        noise=Noise.seeded(seed),
        n=len(raw),
    )
    t0 = time.perf_counter()
    mech.fit(TableSource(schema, frame=raw))
    mech.sample(len(raw))
    return time.perf_counter() - t0


def _needs_delta(mechanism: str, schema: Schema, params: dict) -> bool:
    from mechanisms import registry

    cls = registry.get(mechanism)
    return cls.requires_delta(cls.validate_params(dict(params), schema))


def one(
    table: str,
    mechanism: str,
    *,
    epsilon: float,
    rows: int,
    runs: int,
    seed: int,
    broken: bool,
    time_factor: float | None = None,
    min_seconds: float = 0.0,
    default_params: bool = False,
    canary_pairs: int = risk.DEFAULT_CANARY_PAIRS,
    broken_runs: int | None = None,
    broken_only: bool = False,
    min_check_refits: int = risk.MIN_CHECK_REFITS,
    max_synthetic_cells: int = risk.MAX_SYNTHETIC_CELLS,
) -> dict:
    schema, raw = load(table, rows, seed)
    params = {} if default_params else dict(PARAMS.get(mechanism, {}))
    if params.get("max_rounds") and params["max_rounds"] < len(schema.kept):
        params["max_rounds"] = len(schema.kept) + 8  # AIM's first rounds measure every column, one each
    delta = DELTA if _needs_delta(mechanism, schema, params) else 0.0
    rel_s = release_seconds(schema, raw, mechanism, epsilon, params, seed) if time_factor or not broken_only else None
    budget = None if time_factor is None else max(time_factor * rel_s, min_seconds)
    head = {
        "table": table,
        "mechanism": mechanism,
        "epsilon": epsilon,
        "delta": delta,
        "rows": len(raw),
        "columns": len(schema.kept),
        "runs": runs,
        "params": params,
        "canary_pairs": canary_pairs,
        "seed": seed,
        "release_seconds": None if rel_s is None else round(rel_s, 2),
        "time_budget": None if budget is None else round(budget, 2),
        "min_check_refits": min_check_refits,
        "max_synthetic_cells": max_synthetic_cells,
    }
    prepared = schema.prepare(raw)
    broken_args = (schema, prepared, mechanism, epsilon, delta, params, broken_runs or runs, seed, canary_pairs, budget)
    broken_args += (min_check_refits, max_synthetic_cells)
    if broken_only:
        return {**head, **_broken(*broken_args)}
    rep = risk.risk_report(
        schema,
        prepared,
        mechanism,
        epsilon=epsilon,
        delta=delta,
        params=params,
        runs=runs,
        noise=Noise.seeded(seed),
        release_seconds=rel_s,
        time_budget=budget,
        canary_pairs=canary_pairs,
        min_check_refits=min_check_refits,
        max_synthetic_cells=max_synthetic_cells,
    )
    out = {**head, "status": rep["status"], "reason": rep.get("reason")}
    if rep["status"] == "done":
        out.update(
            report_seconds=rep["seconds"],
            time_ratio=rep["time_ratio"],
            runs_done=rep["runs"],
            skipped_for_time=rep["skipped_for_time"],
            fit_seconds=rep["fit_seconds"],
            check_refits=rep["implementation_check"].get("refits"),
            lower_bounds={a["name"]: a["epsilon_lower_bound"] for a in rep["attacks"]},
            aucs={a["name"]: a["auc"] for a in rep["attacks"]},
            control_auc=rep["control_auc"],
            control_detected=rep["control_detected"],
            control_aucs={a["name"]: a["auc"] for a in rep["control"] if a["release"] == "members themselves"},
            noise_off_aucs={a["name"]: a["auc"] for a in rep["control"] if a["release"] == "noise switched off"},
            guarantee_failed=rep["guarantee_failed"],
            lower_bound=rep["epsilon_lower_bound"],
            advantage=rep["empirical_advantage"],
            attribute_risk=max((x["risk"] for x in rep["attribute_inference"]), default=None),
            linkability_risk=(rep["linkability"] or {}).get("risk"),
            singling_out_risk=(rep["singling_out"] or {}).get("risk"),
        )
    if broken:
        out.update(_broken(*broken_args))
    return out


def _broken(
    schema,
    prepared,
    mechanism,
    epsilon,
    delta,
    params,
    runs,
    seed,
    canary_pairs,
    budget=None,
    min_check_refits=None,
    max_synthetic_cells=None,
) -> dict:
    """The report on the variant with every noise scale divided by 10, claiming ``epsilon``, within the
    same time budget as the honest report (when one is given)."""
    b = risk.risk_report(
        schema,
        prepared,
        mechanism,
        epsilon=epsilon,
        delta=delta,
        params=params,
        runs=runs,
        noise=Noise.seeded(seed),
        attack_noise=ScaledNoise(0.1, seed=seed),
        noise_off_control=False,
        canary_pairs=canary_pairs,
        time_budget=budget,
        min_check_refits=risk.MIN_CHECK_REFITS if min_check_refits is None else min_check_refits,
        max_synthetic_cells=risk.MAX_SYNTHETIC_CELLS if max_synthetic_cells is None else max_synthetic_cells,
    )
    return {
        "broken_runs": b.get("runs"),
        "broken_check_refits": (b.get("implementation_check") or {}).get("refits"),
        "broken_seconds": b.get("seconds"),
        "broken_lower_bound": b.get("epsilon_lower_bound"),
        "broken_lower_bounds": {a["name"]: a["epsilon_lower_bound"] for a in b.get("attacks", [])},
        "broken_caught": b.get("guarantee_failed"),
    }


def broken_markdown(lines: list[dict]) -> str:
    head = (
        "| table | cols | rows | mechanism | seed | refits | broken LB (best attack) | caught | seconds |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )

    def refits(r: dict) -> str:
        extra = (r.get("broken_check_refits") or r["broken_runs"]) - r["broken_runs"]
        return f"{r['broken_runs']}" + (f" + {extra} measure-only" if extra else "")

    rows = [
        f"| {r['table']} | {r['columns']} | {r['rows']} | {r['mechanism']} | {r.get('seed', 0)} | {refits(r)} | "
        f"{_best(r['broken_lower_bounds'])} | {'yes' if r['broken_caught'] else 'no'} | {r['broken_seconds']:.0f} |"
        for r in lines
    ]
    return head + "\n" + "\n".join(rows)


def _best(d: dict) -> str:
    vals = {k: (float("inf") if v == "inf" else float(v or 0)) for k, v in d.items()}
    k = max(vals, key=vals.get)
    return f"{d[k]} ({k})" if vals[k] > 0 else "0"


def markdown(lines: list[dict]) -> str:
    head = (
        "| table | cols | rows | mechanism | LB (best attack) | LB ≤ ε | control AUC | refits | release s | "
        "report s | ratio | broken LB (best attack, refits) | broken caught |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = []
    for r in lines:
        if r["status"] != "done":
            rows.append(
                f"| {r['table']} | {r['columns']} | {r['rows']} | {r['mechanism']} | "
                f"not computable: {r['reason']} |||||||||"
            )
            continue
        off = max(r["noise_off_aucs"].values(), default=None)
        refits = f"{r.get('runs_done', r['runs'])}" + (" + noise off" if off is not None else "")
        if "shadow" not in r.get("skipped_for_time", []) and "shadow_model" in r["lower_bounds"]:
            refits += " + shadow"
        if r.get("check_refits"):
            refits += f" + {r['check_refits'] - r['runs_done']} measure-only"
        broken = ""
        if r.get("broken_lower_bounds"):
            rows_lb = {k: v for k, v in r["broken_lower_bounds"].items() if k != "measurements"}
            broken = f"{_best(r['broken_lower_bounds'])}, {r['broken_runs']}"
            if r.get("broken_check_refits"):
                broken += f" + {r['broken_check_refits'] - r['broken_runs']} measure-only"
            broken += f" (rows alone: {_best(rows_lb)})"
        rows.append(
            f"| {r['table']} | {r['columns']} | {r['rows']} | {r['mechanism']} | {_best(r['lower_bounds'])} | "
            f"{'yes' if not r['guarantee_failed'] else 'NO'} | {r['control_auc']} | {refits} | "
            f"{r['release_seconds']} | {r['report_seconds']:.1f} | {r['time_ratio']} | {broken} | "
            f"{'' if 'broken_caught' not in r else ('yes' if r['broken_caught'] else 'no')} |"
        )
    return head + "\n" + "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--tables", nargs="+", default=["adult", "bank_marketing", "credit_default_taiwan", "bank_credit_wide"]
    )
    p.add_argument("--mechanisms", nargs="+", default=["baseline", "mst", "aim", "dpmerf"])
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--rows", type=int, default=5000, help="records sampled from each table (0: all)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--time-factor",
        type=float,
        default=None,
        help="skip refits after the first past this many times the release's time (the web app: 3)",
    )
    p.add_argument(
        "--min-seconds",
        type=float,
        default=10.0,
        help="with --time-factor: the budget's floor in seconds (the web app: 10)",
    )
    p.add_argument(
        "--min-check-refits",
        type=int,
        default=risk.MIN_CHECK_REFITS,
        help="measure-only refits that run whatever the time budget (the web app: risk.MIN_CHECK_REFITS)",
    )
    p.add_argument(
        "--max-synthetic-cells",
        type=int,
        default=risk.MAX_SYNTHETIC_CELLS,
        help="rows x columns drawn per attacked refit at most (0: only the 400,000-row cap)",
    )
    p.add_argument("--canary-pairs", type=int, default=risk.DEFAULT_CANARY_PAIRS, help="target pairs per refit")
    p.add_argument("--broken-runs", type=int, default=None, help="refits of the broken variant (default: --runs)")
    p.add_argument("--default-params", action="store_true", help="the mechanisms' defaults, not the shorter PARAMS")
    p.add_argument("--broken", action="store_true", help="also attack the variant with noise scale / 10")
    p.add_argument("--broken-only", action="store_true", help="only the broken variant (no release, no honest report)")
    p.add_argument("--out", default=None, help="append one JSON line per result")
    p.add_argument("--markdown", default=None, help="print the markdown table of a JSON-lines file and exit")
    args = p.parse_args(argv)
    if args.markdown:
        lines = [json.loads(x) for x in Path(args.markdown).read_text().splitlines() if x.strip()]
        print(broken_markdown(lines) if lines and "status" not in lines[0] else markdown(lines))
        return 0
    for table in args.tables:
        for mech in args.mechanisms:
            res = one(
                table,
                mech,
                epsilon=args.epsilon,
                rows=args.rows,
                runs=args.runs,
                seed=args.seed,
                broken=args.broken,
                time_factor=args.time_factor,
                min_seconds=args.min_seconds,
                default_params=args.default_params,
                canary_pairs=args.canary_pairs,
                broken_runs=args.broken_runs,
                broken_only=args.broken_only,
                min_check_refits=args.min_check_refits,
                max_synthetic_cells=args.max_synthetic_cells,
            )
            line = json.dumps(res)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
