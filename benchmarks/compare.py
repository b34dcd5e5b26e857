"""dpportal mechanisms against SmartNoise Synth peers: same data, same public bounds, same epsilon.

    python -m benchmarks.compare --quick      # make bench-quick: under 10 minutes on 2 cores
    python -m benchmarks.compare              # make bench: all datasets, eps 0.1/1/10, 3 repetitions

Every run is its own process (dpportal: benchmarks/run_one.py in the product venv; peers:
benchmarks/peers_runner.py in a separate venv with `smartnoise-synth`, so the product never
depends on it) and reports wall time and peak RSS. Peers receive the table as public cell indices
(numeric columns cut into the schema's public bins), so they spend no epsilon on bounds
(preprocessor_eps=0); their synthetic cells are decoded through the same schema (uniform inside
a bin). All synthetic tables are evaluated by mechanisms.evaluation on the public scale, TSTR
against a real test table (adult_test for adult, a fixed 20% holdout otherwise: in that case the
mechanisms are fitted on the remaining 80%).

Results: benchmarks/out/compare-*.json and docs/benchmarks.md (with charts under docs/img/).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mechanisms import registry
from mechanisms.evaluation import evaluate, load_prepared
from mechanisms.schema import Schema, read_raw_csv

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "datasets"
OUT = ROOT / "benchmarks" / "out"
BENCH_PY = os.environ.get("DPPORTAL_BENCH_PY", str(ROOT / ".venv-bench" / "bin" / "python"))

# dataset -> (target column, external test file or None)
DATASETS = {
    "adult": ("income", "adult_test.csv"),
    "german_credit": ("credit_risk", None),
    "bank_marketing": ("y", None),
    "california_housing": ("ocean_proximity", None),
    "credit_default_taiwan": ("default.payment.next.month", None),
    "california_housing_numeric": (None, None),  # numeric-only schema: where pmse can run; no TSTR
}
FILES = {"california_housing_numeric": "california_housing"}  # dataset -> CSV name when they differ
MECHANISMS = ["baseline", "kdtree-grid", "kdtree-adaptive", "pmse", "privhp", "density-lp", "dpmerf"]
PEERS = ["mst", "aim", "dpctgan"]
DELTA = 1e-5
# Parameters that keep one run within a few minutes on 2 cores (documented in docs/benchmarks.md).
PARAMS = {"dpmerf": {"epochs": "2000"}, "pmse": {"iterations": "400", "burn_in": "200"}}
QUICK_PARAMS = {"dpmerf": {"epochs": "300"}, "pmse": {"iterations": "300", "burn_in": "100"}}
PEER_TIMEOUT = {"quick": 300, "full": 1500}


def prepare_split(name: str, work: Path) -> tuple[Path, Path, Schema, str]:
    """Write the training CSV (and the test CSV) for one dataset; returns paths, schema, target."""
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{name}.json").read_text())
    target, test_file = DATASETS[name]
    raw = read_raw_csv(DATA / f"{FILES.get(name, name)}.csv")
    if test_file:
        train, test = raw, read_raw_csv(DATA / test_file)
    else:
        idx = np.random.default_rng(2024).permutation(len(raw))
        cut = int(0.8 * len(raw))
        train, test = raw.iloc[idx[:cut]], raw.iloc[idx[cut:]]
    work.mkdir(parents=True, exist_ok=True)
    tr, te = work / f"{name}-train.csv", work / f"{name}-test.csv"
    train.to_csv(tr, index=False)
    test.to_csv(te, index=False)
    return tr, te, schema, target


def run_dpportal(mech: str, data: Path, schema_path: Path, eps: float, rows: int, out: Path, quick: bool,
                 target: str | None = None) -> dict:
    cls = registry.get(mech)
    params = dict((QUICK_PARAMS if quick else PARAMS).get(mech, {}))
    if target is not None:
        params.setdefault("target", target)  # labelled mode where the mechanism has one (DP-MERF)
    params = {k: v for k, v in params.items() if any(p.name == k for p in cls.params)}
    cmd = [sys.executable, "-m", "benchmarks.run_one", mech, "--data", str(data), "--schema", str(schema_path),
           "--epsilon", str(eps), "--rows", str(rows), "--out", str(out)]
    if cls.needs_delta:
        cmd += ["--delta", str(DELTA)]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_peer(peer: str, schema: Schema, data: Path, eps: float, rows: int, out: Path, timeout: int) -> dict:
    prepared = schema.prepare(read_raw_csv(data))
    cells = pd.DataFrame(schema.to_cells(prepared), columns=schema.names)
    cin = out.with_suffix(".cells-in.csv")
    cout = out.with_suffix(".cells-out.csv")
    cells.to_csv(cin, index=False)
    cmd = [BENCH_PY, str(ROOT / "benchmarks" / "peers_runner.py"), "--synth", peer, "--cells", str(cin),
           "--epsilon", str(eps), "--delta", str(DELTA), "--rows", str(rows), "--out", str(cout)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["failed"])[-1][:300])
    info = json.loads(r.stdout.strip().splitlines()[-1])
    syn_cells = pd.read_csv(cout)[schema.names].to_numpy()
    schema.from_cells(syn_cells, np.random.default_rng(0)).to_csv(out, index=False)
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--datasets", nargs="*")
    ap.add_argument("--mechanisms", nargs="*")
    ap.add_argument("--peers", nargs="*")
    ap.add_argument("--epsilons", nargs="*", type=float)
    ap.add_argument("--reps", type=int)
    ap.add_argument("--name", help="output name (default: quick or full)")
    ap.add_argument("--peer-timeout", type=int)
    a = ap.parse_args(argv)
    quick = a.quick
    datasets = a.datasets or (["adult", "german_credit"] if quick else list(DATASETS))
    mechs = a.mechanisms or [m for m in MECHANISMS if m in registry.names()]
    peers = a.peers if a.peers is not None else (["mst"] if quick else PEERS)
    if not Path(BENCH_PY).exists():
        print(f"peer venv missing ({BENCH_PY}); run `make bench-venv`; peers skipped", file=sys.stderr)
        peers = []
    epsilons = a.epsilons or ([1.0] if quick else [0.1, 1.0, 10.0])
    reps = a.reps or (1 if quick else 3)
    mode = a.name or ("quick" if quick else "full")
    peer_timeout = a.peer_timeout or PEER_TIMEOUT["quick" if quick else "full"]
    work = OUT / f"work-{mode}"
    results = []
    t_start = time.time()
    for ds in datasets:
        tr, te, schema, target = prepare_split(ds, work)
        schema_path = ROOT / "benchmarks" / "schemas" / f"{ds}.json"
        real = load_prepared(schema, str(tr))
        test = load_prepared(schema, str(te))
        rows = len(real)
        for eps in epsilons:
            for rep in range(reps):
                runners = [("dpportal", m) for m in mechs] + [("smartnoise", p) for p in peers]
                for family, name in runners:
                    out = work / f"{ds}-{name}-{eps}-{rep}.csv"
                    row = {"dataset": ds, "family": family, "mechanism": name, "epsilon": eps, "rep": rep}
                    try:
                        if family == "dpportal":
                            cls = registry.get(name)
                            if schema.kinds - cls.supported_kinds:
                                row["status"] = "n/a: " + ", ".join(sorted(schema.kinds - cls.supported_kinds)) + \
                                                " columns unsupported"
                                results.append(row)
                                continue
                            info = run_dpportal(name, tr, schema_path, eps, rows, out, quick, target)
                        else:
                            info = run_peer(name, schema, tr, eps, rows, out, peer_timeout)
                        syn = load_prepared(schema, str(out), synthetic=True)
                        ev = evaluate(schema, real, syn, target=target, test=test, seed=rep, fast=True)
                        s = ev["summary"]
                        row.update(status="ok", seconds=round(info["seconds"], 2),
                                   peak_rss_mib=round(info["peak_rss_mib"], 1),
                                   tvd_1way=s["tvd_1way_mean"], tvd_2way=s["tvd_2way_mean"],
                                   assoc_diff=s["association_diff_mean"], pmse_cart=s["pmse_cart"],
                                   tstr=s["tstr"], trtr=s["trtr"])
                    except subprocess.TimeoutExpired:
                        row["status"] = "timeout"
                    except Exception as exc:  # record and go on: one failure must not end the run
                        row["status"] = f"error: {str(exc)[:200]}"
                    results.append(row)
                    print(json.dumps(row), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {"mode": mode, "command": " ".join(["python -m benchmarks.compare", *sys.argv[1:]]),
            "argv": sys.argv[1:], "seconds": round(time.time() - t_start, 1), "delta": DELTA,
            "params": QUICK_PARAMS if quick else PARAMS, "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    path = OUT / f"compare-{mode}.json"
    path.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    from benchmarks.report import write_report
    write_report(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
