"""``make bench-throughput``: jobs per hour with 1 and 2 workers that share no disk.

Starts on loopback a throwaway PostgreSQL and Redis (``benchmarks.system.scale.Services``), moto's S3
server with a bucket (``tests.s3server``, as ``tests/e2e/test_two_workers_s3.py`` does), the web server
(``dpportal.serve``) and, round by round, 1 then 2 Celery workers. Every process has its own
``DPPORTAL_DATA_DIR`` (a fresh one per worker and round): web and workers share nothing but PostgreSQL,
Redis and the bucket, so each worker fetches the raw upload and any summary it needs from the bucket.
Each worker runs one job at a time (``--concurrency=1``, all queues) with one thread per job, so
2 workers need 2 cores.

Each round uploads ``samples/adult.csv`` (3,000 rows) through the API, confirms its schema, runs one
baseline release for the draws to come from (not timed), then submits a fixed batch of mixed jobs at once
(the first ``--jobs`` of the cycle baseline, MST, AIM, draw, crosstabs) and waits until every job is
finished and every utility evaluation queued behind them has drained. Reported per round: jobs per hour
(submit of the first job to the last job finished), wall time, per-job run seconds by kind, worker CPU
seconds, the load average before and after, which worker ran what, and whether every job settled
``done`` and the ledger is exact (spent = the sum of the charged epsilons, nothing reserved, chain
verified). Privacy risk reports are off (``DPPORTAL_RISK_REPORT=0``) unless ``--risk-reports``.

    python -m benchmarks.system.throughput                          # 10 jobs, 1 then 2 workers
    python -m benchmarks.system.throughput --jobs 40 --workers 1,2,4

Needs redis-server and PostgreSQL binaries (scripts/ensure-system-packages.sh) and moto
(requirements-dev.txt). Writes benchmarks/out/throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from fractions import Fraction
from pathlib import Path

from benchmarks.system.scale import (
    CONFIRM,
    PASSWORD,
    ROOT,
    Api,
    Services,
    cpu_seconds,
    free_port,
    percentile,
    seconds,
    setup_dataset,
    stop,
    wait_done,
    wait_port,
)
from tests.s3server import CREDENTIALS, keys, make_bucket, moto_server

OUT = ROOT / "benchmarks" / "out" / "throughput.json"
# One cycle of the batch: (kind, request body, or "draw" for a draw of the round's seed release).
# Epsilons are exact decimals so the ledger check is exact; AIM's max_rounds is adult's 15 kept columns
# plus 2 rounds of 2-way marginals.
CYCLE = [
    ("baseline", {"mechanism": "baseline", "epsilon": "0.1", "rows": 3000}),
    ("mst", {"mechanism": "mst", "epsilon": "0.5", "delta": "1e-6", "rows": 3000, "params": {"iters": 200}}),
    (
        "aim",
        {
            "mechanism": "aim",
            "epsilon": "0.5",
            "delta": "1e-6",
            "rows": 3000,
            "params": {"max_rounds": 17, "iters": 100, "final_iters": 100},
        },
    ),
    ("draw", "draw"),
    (
        "crosstabs",
        {
            "mechanism": "crosstabs",
            "epsilon": "0.5",
            "delta": "1e-6",
            "params": {"tables": "sex,income;age/5,education"},
        },
    ),
]
RUN_RELEASE = "dpportal.releases.tasks.run_release"  # services.queueing.RUN_RELEASE (importing it needs Django)
WORKER_ARGS = (
    "--concurrency=1",
    "--prefetch-multiplier=1",
    "--loglevel=INFO",
    "--without-gossip",
    "--without-mingle",
    "--without-heartbeat",
)


def batch(jobs: int) -> list[tuple[str, dict | str]]:
    return [CYCLE[i % len(CYCLE)] for i in range(jobs)]


def start_worker(name: str, env: dict, home: Path) -> subprocess.Popen:
    """One worker host: its own DATA_DIR (``home``), one job at a time, every queue."""
    home.mkdir(parents=True)
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "dpportal", "worker", "-n", f"{name}@%h", *WORKER_ARGS],
        cwd=ROOT,
        env={**env, "DPPORTAL_DATA_DIR": str(home)},
        stdout=(home / "worker.log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_ready(homes: list[Path], procs: list[subprocess.Popen], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not all("ready." in (h / "worker.log").read_text() for h in homes):
        for h, p in zip(homes, procs):
            if p.poll() is not None:
                raise RuntimeError(f"worker {h.name} exited: {(h / 'worker.log').read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers not ready after {timeout} s")
        time.sleep(0.5)


def jobs_run(log: Path, offset: int) -> int:
    """Releases and draws this worker finished after ``offset`` of its log (Celery's INFO line per task)."""
    with log.open("rb") as fh:
        fh.seek(offset)
        text = fh.read().decode(errors="replace")
    return sum(1 for line in text.splitlines() if f"Task {RUN_RELEASE}[" in line and " succeeded in " in line)


def pending_reports(database_url: str) -> int:
    """Utility evaluations and risk reports not yet finished (they run on the same workers)."""
    import psycopg

    sql = (
        "SELECT (SELECT count(*) FROM dashboards_evaluation WHERE status IN ('pending', 'running'))"
        " + (SELECT count(*) FROM dashboards_riskreport WHERE status IN ('pending', 'running'))"
    )
    with psycopg.connect(database_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        return conn.execute(sql).fetchone()[0]


def drain_reports(database_url: str, timeout: float = 1800) -> float:
    deadline = time.monotonic() + timeout
    while pending_reports(database_url):
        if time.monotonic() > deadline:
            raise TimeoutError("evaluations did not drain")
        time.sleep(1.0)
    return time.time()


def run_round(api: Api, env: dict, database_url: str, workers: int, homes: Path, jobs: int) -> dict:
    names = [f"r{workers}w{i}" for i in range(workers)]
    dirs = [homes / n for n in names]
    procs = [start_worker(n, env, d) for n, d in zip(names, dirs)]
    try:
        wait_ready(dirs, procs)
        ds = setup_dataset(api)
        status, seed = api(
            "POST",
            f"/api/datasets/{ds}/releases/",
            {"mechanism": "baseline", "epsilon": "0.1", "rows": 100, **CONFIRM},
        )
        assert status == 201, seed
        wait_done(api, ds, [seed["id"]])  # the release the draws come from (not timed)
        drain_reports(database_url)
        ids, kinds, charged = [], {}, [Fraction("0.1")]
        pids = [p.pid for p in procs]
        cpu0, load0 = cpu_seconds(pids), os.getloadavg()
        offsets = [(d / "worker.log").stat().st_size for d in dirs]
        t0 = time.time()
        for kind, body in batch(jobs):
            if body == "draw":
                status, r = api("POST", f"/api/releases/{seed['id']}/draws/", {"rows": 3000})
            else:
                status, r = api("POST", f"/api/datasets/{ds}/releases/", {**body, **CONFIRM})
                charged.append(Fraction(body["epsilon"]))
            assert status == 201, (kind, r)
            ids.append(r["id"])
            kinds[r["id"]] = kind
        done = wait_done(api, ds, ids)
        last = max(seconds(r["finished_at"]) for r in done.values())
        settled = drain_reports(database_url)
        cpu, load1 = cpu_seconds(pids) - cpu0, os.getloadavg()
    finally:
        for p in procs:
            stop(p)
    wall = last - t0
    ran = {rid: seconds(r["finished_at"]) - seconds(r["started_at"]) for rid, r in done.items() if r["started_at"]}
    by_kind: dict[str, list[float]] = {}
    for rid, t in ran.items():
        by_kind.setdefault(kinds[rid], []).append(t)
    ran_on = {n: jobs_run(d / "worker.log", o) for n, d, o in zip(names, dirs, offsets)}
    _, ledger = api("GET", f"/api/datasets/{ds}/ledger/")
    eps = ledger["budget"]["epsilon"]
    return {
        "workers": workers,
        "jobs": len(ids),
        "kinds": {k: sum(1 for v in kinds.values() if v == k) for k in dict.fromkeys(kinds.values())},
        "not_done": {
            rid: [kinds[rid], r["status"], r.get("error")] for rid, r in done.items() if r["status"] != "done"
        },
        "wall_s": round(wall, 1),
        "settled_s": round(settled - t0, 1),
        "jobs_per_hour": round(3600 * len(ids) / wall),
        "wall_s_per_job": round(wall / len(ids), 1),
        "job_run_s_p50_by_kind": {k: round(percentile(v, 50), 1) for k, v in by_kind.items()},
        "job_run_s_sum": round(sum(ran.values()), 1),
        "worker_cpu_s": round(cpu, 1),
        "load_before": [round(x, 2) for x in load0],
        "load_after": [round(x, 2) for x in load1],
        "jobs_by_worker": ran_on,
        # each worker's own copy of the raw upload, fetched from the bucket (nothing else shares a disk)
        "raw_fetched_by": [n for n, d in zip(names, dirs) if any((d / "uploads").glob("*.csv"))],
        "ledger_exact": Fraction(eps["spent"]) == sum(charged)
        and eps["reserved"] == "0"
        and ledger["chain"].get("ok", False),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10, help="jobs in each round's batch (default 10)")
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts, one round each (default 1,2)")
    p.add_argument("--threads", type=int, default=1, help="threads per job (default 1)")
    p.add_argument("--risk-reports", action="store_true", help="also run the privacy risk report of each release")
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    rounds = [int(w) for w in a.workers.split(",")]
    svc = Services()
    homes = svc.root / "hosts"
    env = {
        **os.environ,
        **CREDENTIALS,
        "DATABASE_URL": svc.database_url,
        "CELERY_BROKER_URL": svc.redis_url,
        "DJANGO_SECRET_KEY": "bench-throughput-" + uuid.uuid4().hex,
        "DJANGO_SETTINGS_MODULE": "dpportal.settings",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "DPPORTAL_WORKER_CONCURRENCY": "1",
        "DPPORTAL_THREADS_PER_JOB": str(a.threads),
        "DPPORTAL_RISK_REPORT": "1" if a.risk_reports else "0",
        "DPPORTAL_LEDGER_ANCHOR": "off",
    }
    results, web = [], None
    try:
        with moto_server(svc.root) as endpoint:
            bucket = "dpportal-" + uuid.uuid4().hex[:8]
            client = make_bucket(endpoint, bucket)
            env.update(DPPORTAL_S3_BUCKET=bucket, DPPORTAL_S3_ENDPOINT_URL=endpoint)
            webenv = {**env, "DPPORTAL_DATA_DIR": str(homes / "web")}
            manage = [sys.executable, "manage.py"]
            subprocess.run(manage + ["migrate", "--noinput", "-v0"], cwd=ROOT, env=webenv, check=True)
            subprocess.run(
                manage + ["create_steward", "bench", "--password", PASSWORD],
                cwd=ROOT,
                env=webenv,
                check=True,
                capture_output=True,
            )
            port = free_port()
            web = subprocess.Popen(
                [sys.executable, "-m", "dpportal.serve", "--listen", f"127.0.0.1:{port}"],
                cwd=ROOT,
                env=webenv,
                stdout=(svc.root / "web.log").open("w"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            wait_port(port)
            api = Api(f"http://127.0.0.1:{port}")
            status, tok = api("POST", "/api/auth/token/", {"username": "bench", "password": PASSWORD})
            assert status == 201, tok
            api.token = tok["token"]
            for n in rounds:
                r = run_round(api, env, svc.database_url, n, homes, a.jobs)
                r["threads_per_job"] = a.threads
                results.append(r)
                print(json.dumps(r), flush=True)
            objects = keys(client, bucket)
    finally:
        if web is not None:
            stop(web)
        svc.close()
    base = next((r for r in results if r["workers"] == 1), None)
    for r in results:
        if base:
            r["ratio_vs_1"] = round(r["jobs_per_hour"] / base["jobs_per_hour"], 2)
    summary = {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "batch": [k for k, _ in batch(a.jobs)],
        "risk_reports": a.risk_reports,
        "objects_in_bucket": len(objects),
        "rounds": results,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(summary, indent=2))
    print(f"cores {summary['usable_cores']}; batch of {a.jobs}: {', '.join(summary['batch'])}")
    print(
        "| workers | jobs | all done | wall s | s/job | jobs/hour | ratio | run s p50 by kind | jobs by worker "
        "| worker CPU s | load avg before -> after (1/5/15 min) | ledger exact |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---|---|---:|---|---|")
    for r in results:
        kinds = ", ".join(f"{k} {v}" for k, v in r["job_run_s_p50_by_kind"].items())
        by = ", ".join(str(v) for v in r["jobs_by_worker"].values())
        print(
            f"| {r['workers']} | {r['jobs']} | {'yes' if not r['not_done'] else 'NO'} | {r['wall_s']} "
            f"| {r['wall_s_per_job']} | {r['jobs_per_hour']} | {r.get('ratio_vs_1', '-')} | {kinds} | {by} "
            f"| {r['worker_cpu_s']} "
            f"| {' / '.join(map(str, r['load_before']))} -> {' / '.join(map(str, r['load_after']))} "
            f"| {'yes' if r['ledger_exact'] else 'NO'} |"
        )
    return 0 if results and all(r["ledger_exact"] and not r["not_done"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
