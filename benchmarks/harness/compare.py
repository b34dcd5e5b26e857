"""dpportal mechanisms against SmartNoise Synth peers: same data, same public bounds, same epsilon.

    python -m benchmarks.harness.compare --quick      # make bench-quick: under 10 minutes on 2 cores
    python -m benchmarks.harness.compare              # make bench: all datasets, eps 0.1/1/10, 3 repetitions

Every run is its own process (dpportal: benchmarks/harness/run_one.py in the product venv; peers:
benchmarks/harness/peers_runner.py in a separate venv with `smartnoise-synth`, so the product never
depends on it) and reports wall time and peak RSS. Peers receive the table as public cell indices
(numeric columns cut into the schema's public bins), so they spend no epsilon on bounds
(preprocessor_eps=0); their synthetic cells are decoded through the same schema (uniform inside
a bin). All synthetic tables are evaluated by mechanisms.evaluation on the public scale, TSTR
against a real test table (adult_test for adult, a fixed 20% holdout otherwise: in that case the
mechanisms are fitted on the remaining 80%).

Two families of peers: the grid peers (MST) run at every epsilon and repetition like dpportal's
mechanisms; the slow peers (AIM, DPCTGAN, PATECTGAN, MWEM with its defaults and with
split_factor=3: minutes to tens of minutes per run on
2 cores) run once at ``--slow-epsilons`` (default 1), after the first two repetitions of the grid,
smaller tables first and not on adult unless ``--slow-datasets`` says so, each under
``--peer-timeout`` (600 s).

``--jobs N`` runs N releases (each with its evaluation) at a time; every child is limited to one
thread, so on a 2-core machine ``--jobs 2`` measures each release on one core. Every finished run is
appended to benchmarks/out/compare-NAME.jsonl at once, so ``--resume`` continues an interrupted
run and ``--report-only`` writes the report from what is there.

Results: benchmarks/out/compare-NAME.json and .md, charts under docs/img/; the committed run
(docs/data/benchmarks-full.json) becomes docs/benchmarks/full.md through ``python -m benchmarks.report``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.harness.datasets import dataset_path, datasets_dir
from mechanisms import registry
from mechanisms.evaluation.tables import load_prepared
from mechanisms.evaluation.utility import evaluate
from mechanisms.schema import Schema
from mechanisms.source import read_raw_csv

ROOT = Path(__file__).resolve().parents[2]
DATA = datasets_dir()  # DPPORTAL_DATASETS_DIR, default ../shared/datasets
OUT = ROOT / "benchmarks" / "out"
BENCH_PY = os.environ.get("DPPORTAL_BENCH_PY", str(ROOT / ".venv-bench" / "bin" / "python"))

# dataset -> (target column, external test file or None); ordered smallest first
DATASETS = {
    "german_credit": ("credit_risk", None),
    "california_housing_numeric": (None, None),  # numeric-only schema: where pmse can run; no TSTR
    "california_housing": ("ocean_proximity", None),
    "credit_default_taiwan": ("default.payment.next.month", None),
    "bank_marketing": ("y", None),
    "adult": ("income", "adult_test.csv"),
}
FILES = {"california_housing_numeric": "california_housing"}  # dataset -> CSV name when they differ
MECHANISMS = ["baseline", "kdtree-grid", "kdtree-adaptive", "pmse", "privhp", "density-lp", "dpmerf"]
PEERS = ["mst"]
SLOW_PEERS = ["aim", "dpctgan", "patectgan", "mwem", "mwem-split3"]
DELTA = 1e-5
# Parameters that keep one run within a few minutes on 2 cores (documented in docs/benchmarks.md).
PARAMS = {"dpmerf": {"epochs": "2000"}, "pmse": {"iterations": "400", "burn_in": "200"}}
QUICK_PARAMS = {"dpmerf": {"epochs": "300"}, "pmse": {"iterations": "300", "burn_in": "100"}}
PEER_TIMEOUT = {"quick": 300, "full": 600}
# Slow peers skip adult by default: AIM and DPCTGAN need 14-17 minutes each there on 2 cores
# (more than the 600 s limit); SmartNoise AIM on adult is measured in the grid (docs/benchmarks/pgm.md).
SLOW_DATASETS = [d for d in DATASETS if d != "adult"]
# DPPORTAL_THREADS_PER_JOB as well: without it a release's own
# resources.limit_threads sized its pools to cores // 1 = 2, BLAS and (from then on) XLA's intra-op pool.
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "DPMERF_TORCH_THREADS": "1",
    "DPPORTAL_THREADS_PER_JOB": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
}


def prepare_split(name: str, work: Path) -> tuple[Path, Path, Schema, str]:
    """Write the training CSV (and the test CSV) for one dataset; returns paths, schema, target."""
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / f"{name}.json").read_text())
    target, test_file = DATASETS[name]
    raw = read_raw_csv(dataset_path(f"{FILES.get(name, name)}.csv", DATA))
    if test_file:
        train, test = raw, read_raw_csv(dataset_path(test_file, DATA))
    else:
        idx = np.random.default_rng(2024).permutation(len(raw))
        cut = int(0.8 * len(raw))
        train, test = raw.iloc[idx[:cut]], raw.iloc[idx[cut:]]
    work.mkdir(parents=True, exist_ok=True)
    tr, te = work / f"{name}-train.csv", work / f"{name}-test.csv"
    train.to_csv(tr, index=False)
    test.to_csv(te, index=False)
    return tr, te, schema, target


def run_dpportal(
    mech: str,
    data: Path,
    schema_path: Path,
    eps: float,
    rows: int,
    out: Path,
    params: dict,
    target: str | None = None,
    timeout: int = 1800,
) -> dict:
    cls = registry.get(mech)
    params = dict(params)
    if target is not None:
        params.setdefault("target", target)  # labelled mode where the mechanism has one (DP-MERF)
    params = {k: v for k, v in params.items() if any(p.name == k for p in cls.params)}
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
        str(eps),
        "--rows",
        str(rows),
        "--out",
        str(out),
    ]
    if cls.requires_delta(params):
        cmd += ["--delta", str(DELTA)]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_peer(peer: str, schema: Schema, data: Path, eps: float, rows: int, out: Path, timeout: int) -> dict:
    prepared = schema.prepare(read_raw_csv(data))
    cells = pd.DataFrame(schema.to_cells(prepared), columns=schema.names)
    cin = out.with_suffix(".cells-in.csv")
    cout = out.with_suffix(".cells-out.csv")
    cells.to_csv(cin, index=False)
    cmd = [
        BENCH_PY,
        "-m",
        "benchmarks.harness.peers_runner",
        "--synth",
        peer,
        "--cells",
        str(cin),
        "--epsilon",
        str(eps),
        "--delta",
        str(DELTA),
        "--rows",
        str(rows),
        "--out",
        str(cout),
        "--cardinalities",
        ",".join(str(k) for k in schema.cell_sizes),
    ]  # the public bins, as dpportal's
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["failed"])[-1][:300])
    info = json.loads(r.stdout.strip().splitlines()[-1])
    syn_cells = pd.read_csv(cout)[schema.names].to_numpy()
    schema.from_cells(syn_cells, np.random.default_rng(0)).to_csv(out, index=False)
    return info


_TABLES: dict[str, tuple] = {}  # per worker process: dataset -> (real, test) prepared frames


def run_task(task: dict) -> dict:
    """One release and its evaluation (runs in a pool worker); never raises."""
    ds, family, name, eps, rep = task["dataset"], task["family"], task["mechanism"], task["epsilon"], task["rep"]
    schema = Schema.from_json(Path(task["schema"]).read_text())
    tr, te, out, target = Path(task["train"]), Path(task["test"]), Path(task["out"]), task["target"]
    row = {k: task[k] for k in ("dataset", "family", "mechanism", "epsilon", "rep")}
    if family != "dpportal":
        row["phase"] = task["phase"]
    try:
        if family == "dpportal":
            cls = registry.get(name)
            missing = schema.kinds - cls.supported_kinds
            if missing:
                row["status"] = "n/a: " + ", ".join(sorted(missing)) + " columns unsupported"
                return row
            info = run_dpportal(
                name,
                tr,
                Path(task["schema"]),
                eps,
                task["rows"],
                out,
                task["params"],
                target,
                timeout=task.get("dpportal_timeout", 1800),
            )
        else:
            info = run_peer(name, schema, tr, eps, task["rows"], out, task["timeout"])
        if ds not in _TABLES:
            _TABLES[ds] = (load_prepared(schema, str(tr)), load_prepared(schema, str(te)))
        real, test = _TABLES[ds]
        syn = load_prepared(schema, str(out), synthetic=True)
        ev = evaluate(schema, real, syn, target=target, test=test, seed=rep, fast=True)
        s = ev["summary"]
        row.update(
            status="ok",
            seconds=round(info["seconds"], 2),
            peak_rss_mib=round(info["peak_rss_mib"], 1),
            cpu_seconds=round(info["cpu_seconds"], 1) if "cpu_seconds" in info else None,
            rss=info.get("rss", "maxrss"),
            peak_anon_mib=round(info["peak_anon_mib"], 1) if info.get("peak_anon_mib") else None,
            tvd_1way=s["tvd_1way_mean"],
            tvd_2way=s["tvd_2way_mean"],
            assoc_diff=s["association_diff_mean"],
            pmse_cart=s["pmse_cart"],
            tstr=s["tstr"],
            trtr=s["trtr"],
        )
    except subprocess.TimeoutExpired as exc:
        row["status"] = f"timeout after {exc.timeout:.0f} s"
    except Exception as exc:  # record and go on: one failure must not end the run
        row["status"] = f"error: {str(exc)[:200]}"
    return row


def _key(r: dict) -> tuple:
    return (r["dataset"], r["family"], r["mechanism"], float(r["epsilon"]), int(r["rep"]))


def plan(
    datasets, mechs, peers, slow_peers, epsilons, slow_epsilons, reps, slow_datasets=None, slow_reps: int = 1
) -> list[tuple]:
    """Order of the runs: grid repetitions 0 and 1, then the slow peers, then the remaining
    repetitions; an interrupted run therefore still has whole repetitions to report."""
    grid = [
        [("dpportal", m, ds, eps, rep) for ds in datasets for eps in epsilons for m in mechs]
        + [("smartnoise", p, ds, eps, rep) for ds in datasets for eps in epsilons for p in peers]
        for rep in range(reps)
    ]
    slow = [
        ("smartnoise-slow", p, ds, eps, rep)
        for rep in range(slow_reps)
        for ds in datasets
        if slow_datasets is None or ds in slow_datasets
        for eps in slow_epsilons
        for p in slow_peers
    ]
    order = [t for g in grid[:2] for t in g] + slow + [t for g in grid[2:] for t in g]
    return order


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--datasets", nargs="*")
    ap.add_argument("--mechanisms", nargs="*")
    ap.add_argument("--peers", nargs="*", help="grid peers: every epsilon and repetition (default mst)")
    ap.add_argument(
        "--slow-peers",
        nargs="*",
        help=f"once per dataset at --slow-epsilons (default {' '.join(SLOW_PEERS)}; none in --quick)",
    )
    ap.add_argument("--epsilons", nargs="*", type=float)
    ap.add_argument("--slow-epsilons", nargs="*", type=float)
    ap.add_argument("--slow-datasets", nargs="*", help="datasets for the slow peers (default: all but adult)")
    ap.add_argument("--slow-reps", type=int, default=1, help="repetitions of the slow peers (default 1)")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--jobs", type=int, default=1, help="releases at a time (each on one thread)")
    ap.add_argument("--name", help="output name (default: quick or full)")
    ap.add_argument("--peer-timeout", type=int)
    ap.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="MECH:KEY=VALUE",
        help="override a mechanism parameter, e.g. pmse:iterations=2000 (repeatable)",
    )
    ap.add_argument("--resume", action="store_true", help="skip runs already in compare-NAME.jsonl")
    ap.add_argument("--report-only", action="store_true", help="write the report from compare-NAME.jsonl")
    a = ap.parse_args(argv)
    quick = a.quick
    datasets = a.datasets or (["adult", "german_credit"] if quick else list(DATASETS))
    mechs = a.mechanisms or [m for m in MECHANISMS if m in registry.names()]
    peers = a.peers if a.peers is not None else PEERS
    slow_peers = a.slow_peers if a.slow_peers is not None else ([] if quick else SLOW_PEERS)
    if not Path(BENCH_PY).exists():
        print(f"peer venv missing ({BENCH_PY}); run `make bench-venv`; peers skipped", file=sys.stderr)
        peers, slow_peers = [], []
    epsilons = a.epsilons or ([1.0] if quick else [0.1, 1.0, 10.0])
    slow_epsilons = a.slow_epsilons or [1.0]
    reps = a.reps or (1 if quick else 3)
    mode = a.name or ("quick" if quick else "full")
    peer_timeout = a.peer_timeout or PEER_TIMEOUT["quick" if quick else "full"]
    params = {m: dict(v) for m, v in (QUICK_PARAMS if quick else PARAMS).items()}
    for spec in a.param:
        mech, _, kv = spec.partition(":")
        key, eq, value = kv.partition("=")
        if not (mech and key and eq):
            ap.error(f"--param {spec!r}: expected MECH:KEY=VALUE")
        params.setdefault(mech, {})[key] = value
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / f"compare-{mode}.jsonl"
    start_file = OUT / f"compare-{mode}.start"  # epoch seconds when the (first) run of this name began
    if a.report_only and not log.exists():
        print(f"nothing to report: {log} does not exist", file=sys.stderr)
        return 2
    done = {}
    if (a.resume or a.report_only) and log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[_key(r)] = r
    elif log.exists():
        log.unlink()
    command = " ".join(["python -m benchmarks.harness.compare", *(argv if argv is not None else sys.argv[1:])])
    keep = (a.resume or a.report_only) and start_file.exists()
    started = json.loads(start_file.read_text()) if keep else {"t": time.time(), "jobs": a.jobs, "commands": []}
    if not a.report_only:  # a resumed run's command joins the record
        started["commands"].append(command)
        start_file.write_text(json.dumps(started))
    if not a.report_only:
        work = OUT / f"work-{mode}"
        splits = {ds: prepare_split(ds, work) for ds in datasets}
        n_rows = {ds: len(pd.read_csv(splits[ds][0], usecols=[0])) for ds in datasets}  # public n of each table
        tasks = []
        for family, name, ds, eps, rep in plan(
            datasets,
            mechs,
            peers,
            slow_peers,
            epsilons,
            slow_epsilons,
            reps,
            a.slow_datasets if a.slow_datasets is not None else SLOW_DATASETS,
            a.slow_reps,
        ):
            tr, te, schema, target = splits[ds]
            fam = "dpportal" if family == "dpportal" else "smartnoise"
            task = {
                "dataset": ds,
                "family": fam,
                "mechanism": name,
                "epsilon": eps,
                "rep": rep,
                "phase": "slow" if family == "smartnoise-slow" else "grid",
                "schema": str(ROOT / "benchmarks" / "schemas" / f"{ds}.json"),
                "train": str(tr),
                "test": str(te),
                "target": target,
                "rows": n_rows[ds],
                "out": str(work / f"{ds}-{name}-{eps}-{rep}.csv"),
                "params": params.get(name, {}),
                "timeout": peer_timeout,
            }
            if _key(task) not in done:
                tasks.append(task)
        if a.jobs > 1:
            os.environ.update(ONE_THREAD)  # children inherit: one thread per release
        with ProcessPoolExecutor(max_workers=a.jobs) as pool, log.open("a") as fh:
            # the pool starts tasks in submission order, so the plan's order holds
            for f in as_completed([pool.submit(run_task, t) for t in tasks]):
                row = f.result()
                done[_key(row)] = row
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                print(json.dumps(row), flush=True)
    order = {m: i for i, m in enumerate(MECHANISMS + PEERS + SLOW_PEERS)}
    results = sorted(
        done.values(),
        key=lambda r: (
            list(DATASETS).index(r["dataset"]) if r["dataset"] in DATASETS else 99,
            r["epsilon"],
            r["family"] != "dpportal",
            order.get(r["mechanism"], 99),
            r["mechanism"],
            r["rep"],
        ),
    )
    end = log.stat().st_mtime if a.report_only else time.time()  # report-only: the last finished run
    meta = {
        "mode": mode,
        "command": "`, then `".join(started.get("commands", [command])),
        "seconds": round(end - started["t"], 1) if "t" in started else None,
        "delta": DELTA,
        "jobs": started.get("jobs", a.jobs),
        "params": params,
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(end)),
    }
    path = OUT / f"compare-{mode}.json"
    path.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    if Path(BENCH_PY).exists():  # PNG charts need plotly + kaleido, which live in the benchmark venv
        r = subprocess.run(
            [BENCH_PY, "-m", "benchmarks.harness.charts", str(path), "--prefix", f"bench-{mode}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        print(r.stdout.strip() or r.stderr.strip()[-500:], flush=True)
    from benchmarks.harness.report import write_report

    write_report(path, doc=OUT / f"compare-{mode}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
