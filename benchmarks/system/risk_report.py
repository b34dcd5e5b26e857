"""The privacy risk report on benchmark tables: empirical epsilon lower bounds against the claim, the
positive control's AUC, the report's time against the release's own, and a broken variant (noise
scale divided by 10) that the report must catch.

    .venv/bin/python -m benchmarks.system.risk_report --tables adult bank_marketing credit_default_taiwan \
        --mechanisms baseline mst --epsilon 1 --rows 5000 --runs 2 --broken --out docs/benchmarks-risk.jsonl

Each line of ``--out`` is one (table, mechanism) result; ``--markdown`` prints the table of
docs/benchmarks-risk.md from such a file. Seeded noise (benchmarks only): reruns give the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.harness.datasets import dataset_path
from mechanisms import risk
from mechanisms.noise import Noise, ScaledNoise
from mechanisms.runner import build
from mechanisms.schema import Schema, TableSource, read_raw_csv

ROOT = Path(__file__).resolve().parents[2]
DELTA = 1e-6
# shorter fits than the defaults (the same privacy: fewer rounds or epochs) to fit the time of a run
PARAMS = {"dpmerf": {"epochs": 200}, "aim": {"max_rounds": 24, "iters": 100, "final_iters": 200}}


def load(table: str, rows: int, seed: int):
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{table}.json").read_text())
    raw = read_raw_csv(dataset_path(f"{table}.csv"))
    if rows and len(raw) > rows:
        raw = raw.sample(n=rows, random_state=seed).reset_index(drop=True)
    return schema, raw


def release_seconds(schema: Schema, raw, mechanism: str, epsilon: float, params: dict, seed: int) -> float:
    """fit + sample of the release itself, on the same records the report uses, after a warm-up fit on a
    few rows (imports and compilation are paid once per worker process, not per release)."""
    warm = build(mechanism, schema, epsilon=epsilon, delta=DELTA if _needs_delta(mechanism, schema, params) else 0.0,
                 params=params, noise=Noise.seeded(seed), n=min(len(raw), 200))
    warm.fit(TableSource(schema, frame=raw.iloc[:200].reset_index(drop=True)))
    mech = build(mechanism, schema, epsilon=epsilon, delta=DELTA if _needs_delta(mechanism, schema, params) else 0.0,
                 params=params, noise=Noise.seeded(seed), n=len(raw))
    t0 = time.perf_counter()
    mech.fit(TableSource(schema, frame=raw))
    mech.sample(len(raw))
    return time.perf_counter() - t0


def _needs_delta(mechanism: str, schema: Schema, params: dict) -> bool:
    from mechanisms import registry

    cls = registry.get(mechanism)
    return cls.requires_delta(cls.validate_params(dict(params), schema))


def one(table: str, mechanism: str, *, epsilon: float, rows: int, runs: int, seed: int, broken: bool,
        time_factor: float | None = None, default_params: bool = False) -> dict:
    schema, raw = load(table, rows, seed)
    params = {} if default_params else PARAMS.get(mechanism, {})
    delta = DELTA if _needs_delta(mechanism, schema, params) else 0.0
    rel_s = release_seconds(schema, raw, mechanism, epsilon, params, seed)
    prepared = schema.prepare(raw)
    rep = risk.risk_report(schema, prepared, mechanism, epsilon=epsilon, delta=delta, params=params, runs=runs,
                           noise=Noise.seeded(seed), release_seconds=rel_s,
                           time_budget=None if time_factor is None else time_factor * rel_s)
    out = {"table": table, "mechanism": mechanism, "epsilon": epsilon, "delta": delta, "rows": len(raw),
           "columns": len(schema.kept), "runs": runs, "params": params, "release_seconds": round(rel_s, 2),
           "status": rep["status"], "reason": rep.get("reason")}
    if rep["status"] == "done":
        out.update(report_seconds=rep["seconds"], time_ratio=rep["time_ratio"], runs_done=rep["runs"],
                   skipped_for_time=rep["skipped_for_time"], fit_seconds=rep["fit_seconds"],
                   lower_bounds={a["name"]: a["epsilon_lower_bound"] for a in rep["attacks"]},
                   aucs={a["name"]: a["auc"] for a in rep["attacks"]},
                   control_auc=rep["control_auc"], control_detected=rep["control_detected"],
                   noise_off_aucs={a["name"]: a["auc"] for a in rep["control"] if a["release"] == "noise switched off"},
                   guarantee_failed=rep["guarantee_failed"], advantage=rep["empirical_advantage"],
                   attribute_risk=max((x["risk"] for x in rep["attribute_inference"]), default=None))
    if broken:
        b = risk.risk_report(schema, prepared, mechanism, epsilon=epsilon, delta=delta, params=params, runs=runs,
                             noise=Noise.seeded(seed), attack_noise=ScaledNoise(0.1, seed=seed),
                             noise_off_control=False)
        out["broken_lower_bound"] = b.get("epsilon_lower_bound")
        out["broken_caught"] = b.get("guarantee_failed")
    return out


def markdown(lines: list[dict]) -> str:
    head = ("| table | cols | rows | mechanism | ε claimed | LB dcr / DOMIAS / cells | AUC dcr / DOMIAS / cells | "
            "control AUC | noise-off AUC (best) | broken LB (scale /10) | refits | release s | report s | ratio |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for r in lines:
        if r["status"] != "done":
            rows.append(f"| {r['table']} | {r['columns']} | {r['rows']} | {r['mechanism']} | {r['epsilon']:g} | "
                        f"not computable: {r['reason']} |||||||||")
            continue
        lb, auc = r["lower_bounds"], r["aucs"]
        broken = r.get("broken_lower_bound")
        names = ("dcr", "density_ratio", "marginal_ratio")
        off = max(r["noise_off_aucs"].values(), default=None)
        refits = f"{r.get('runs_done', r['runs'])}" + (" + noise off" if off is not None else "")
        rows.append(
            f"| {r['table']} | {r['columns']} | {r['rows']} | {r['mechanism']} | {r['epsilon']:g} | "
            f"{' / '.join(str(lb.get(n)) for n in names)} | {' / '.join(str(auc.get(n)) for n in names)} | "
            f"{r['control_auc']} | {'' if off is None else off} | {'' if broken is None else broken} | {refits} | "
            f"{r['release_seconds']} | {r['report_seconds']:.1f} | {r['time_ratio']} |")
    return head + "\n" + "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", nargs="+", default=["adult", "bank_marketing", "credit_default_taiwan"])
    p.add_argument("--mechanisms", nargs="+", default=["baseline", "mst", "aim", "dpmerf"])
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--rows", type=int, default=5000, help="records sampled from each table (0: all)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-factor", type=float, default=None,
                   help="skip refits after the first past this many times the release's time (the web app: 3)")
    p.add_argument("--default-params", action="store_true", help="the mechanisms' defaults, not the shorter PARAMS")
    p.add_argument("--broken", action="store_true", help="also attack the variant with noise scale / 10")
    p.add_argument("--out", default=None, help="append one JSON line per result")
    p.add_argument("--markdown", default=None, help="print the markdown table of a JSON-lines file and exit")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown([json.loads(x) for x in Path(args.markdown).read_text().splitlines() if x.strip()]))
        return 0
    for table in args.tables:
        for mech in args.mechanisms:
            res = one(table, mech, epsilon=args.epsilon, rows=args.rows, runs=args.runs, seed=args.seed,
                      broken=args.broken, time_factor=args.time_factor,
                      default_params=args.default_params)
            line = json.dumps(res)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
