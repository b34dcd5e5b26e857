"""``make bench-scale``: does dpportal scale with worker processes?

Starts, on loopback ports of this machine, a throwaway PostgreSQL, a Redis server, the web server
(gunicorn, as in production) and 1, 2 and 4 Celery worker processes (each round its own workers, each
consuming every queue with concurrency 1, as ``docker compose up --scale worker=N`` does, with
DPPORTAL_THREADS_PER_JOB = max(1, cores // N)). Each round submits the same mixed burst through the
JSON API (baseline, density-lp, DP-MERF small, draws) on the repository's sample table
(samples/adult.csv, 3,000 rows), waits until every release is done and every utility evaluation has
drained, and reports throughput (releases per minute), p50/p95 time from submit to done, and whether
the ledger is exact afterwards (spent = the sum of the charged releases' epsilons, nothing reserved,
the hash chain verified).

    python -m benchmarks.system.scale                 # rounds 1, 2, 4 workers
    python -m benchmarks.system.scale --workers 1 2   # fewer rounds

Needs redis-server, PostgreSQL 15 binaries and gunicorn (scripts/ensure-system-packages.sh,
requirements.txt). Writes benchmarks/out/scale.json.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "adult.csv"
OUT = ROOT / "benchmarks" / "out" / "scale.json"
PASSWORD = secrets.token_urlsafe(16)  # the throwaway steward of this run
# small releases at epsilon 0.1 are above the form's error warning: the benchmark confirms it, as a steward would
CONFIRM = {"confirm_high_error": True, "confirm_would_fail": True}
# The burst: (label, request body or "draw"); epsilons are exact decimals so the ledger check is exact.
BURST = (
    [("baseline", {"mechanism": "baseline", "epsilon": "0.1", "rows": 3000})] * 6
    + [("density-lp", {"mechanism": "density-lp", "epsilon": "0.1", "rows": 3000, "params": {"m": 2000}})] * 2
    + [
        (
            "dpmerf-small",
            {"mechanism": "dpmerf", "epsilon": "0.1", "delta": "1e-7", "rows": 3000, "params": {"epochs": 300}},
        )
    ]
    * 2
    + [("draw", "draw")] * 6
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout} s")


class Services:
    """PostgreSQL + Redis on loopback, in a temporary directory; stopped by close()."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="dpportal-scale-"))
        self.procs: list[subprocess.Popen] = []
        self.pg_stop = None
        self.redis_url = self._redis()
        self.database_url = self._postgres()

    def _redis(self) -> str:
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("redis-server not found: run scripts/ensure-system-packages.sh")
        port = free_port()
        self.procs.append(
            subprocess.Popen(
                [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait_port(port)
        return f"redis://127.0.0.1:{port}/0"

    def _postgres(self) -> str:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
        if not found:
            raise SystemExit("PostgreSQL binaries not found: run scripts/ensure-system-packages.sh")
        bindir = Path(found[-1]).parent
        pg = self.root / "pg"
        pg.mkdir()
        prefix: list[str] = []
        if os.geteuid() == 0:  # postgres refuses to run as root
            import pwd

            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chown(pg, pw.pw_uid, pw.pw_gid)
            prefix = ["runuser", "-u", "postgres", "--"]
        port = free_port()

        def run(*cmd: str) -> None:
            subprocess.run(prefix + [str(bindir / cmd[0]), *cmd[1:]], check=True, capture_output=True, timeout=120)

        run("initdb", "-D", str(pg / "data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        opts = f"-k {pg} -p {port} -h 127.0.0.1 -F -c max_connections=100"
        run("pg_ctl", "-D", str(pg / "data"), "-o", opts, "-l", str(pg / "log"), "-w", "-t", "60", "start")
        self.pg_stop = lambda: run("pg_ctl", "-D", str(pg / "data"), "-m", "immediate", "-w", "stop")
        return f"postgres://postgres@127.0.0.1:{port}/postgres"

    def close(self) -> None:
        for p in self.procs:
            stop(p)
        if self.pg_stop is not None:
            self.pg_stop()
        shutil.rmtree(self.root, ignore_errors=True)


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


class Api:
    def __init__(self, url: str):
        self.url = url
        self.token = ""

    def __call__(self, method: str, path: str, body=None, files=None) -> tuple[int, dict]:
        from tests.live import multipart  # the same stdlib multipart helper as the live tests
        import urllib.error
        import urllib.request

        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        elif files is not None:
            data, headers["Content-Type"] = multipart({"name": "adult-sample"}, files)
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")


def setup_dataset(api: Api) -> int:
    status, ds = api("POST", "/api/datasets/", files={"file": ("adult.csv", SAMPLE.read_bytes())})
    assert status == 201, ds
    schema = dict(ds["schema_draft"], draft=False)
    assert api("PUT", f"/api/datasets/{ds['id']}/schema/", schema)[0] == 200
    assert api("PUT", f"/api/datasets/{ds['id']}/budget/", {"epsilon": "100", "delta": "1e-3"})[0] == 200
    return ds["id"]


def wait_done(api: Api, ds: int, ids: list[int], timeout: float = 1800) -> dict[int, dict]:
    """Poll the dataset's release list once a second (one request: polling each release twice a second
    cost the 2-core machine about half a core of web-server CPU in a first run)."""
    deadline, wanted = time.monotonic() + timeout, set(ids)
    while True:
        _, listing = api("GET", f"/api/datasets/{ds}/releases/")
        done = {r["id"]: r for r in listing["releases"] if r["id"] in wanted and r["finished"]}
        if len(done) == len(wanted):
            return done
        if time.monotonic() > deadline:
            raise TimeoutError(f"releases not finished after {timeout} s: {sorted(wanted - set(done))}")
        time.sleep(1.0)


def drain_evaluations(env: dict, timeout: float = 1800) -> None:
    """Wait until no utility evaluation is pending or running (they share the workers)."""
    code = (
        "import django; django.setup(); from dpportal.dashboards.models import Evaluation as E; "
        "print(E.objects.filter(status__in=[E.PENDING, E.RUNNING]).count())"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
        if out.stdout.strip() == "0":
            return
        time.sleep(2)
    raise TimeoutError("evaluations did not drain")


def seconds(ts: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(ts).timestamp()


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q))


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and their live children (Celery's pool)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(stat.split("/")[2]), int(fields[1])
        if pid in pids or ppid in pids:
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    return total


def burst_round(api: Api, env: dict, workers: int, pids: list[int], repeat: int = 1) -> dict:
    ds = setup_dataset(api)
    status, seed = api(
        "POST", f"/api/datasets/{ds}/releases/", {"mechanism": "baseline", "epsilon": "0.1", "rows": 100, **CONFIRM}
    )
    assert status == 201, seed
    wait_done(api, ds, [seed["id"]])  # the release the draws come from (not timed)
    drain_evaluations(env)
    ids, labels, charged = [], {}, [Fraction("0.1")]
    cpu0, load0 = cpu_seconds(pids), os.getloadavg()[0]
    t0 = time.time()
    for label, body in BURST * repeat:
        if body == "draw":
            status, r = api("POST", f"/api/releases/{seed['id']}/draws/", {"rows": 3000})
        else:
            status, r = api("POST", f"/api/datasets/{ds}/releases/", {**body, **CONFIRM})
            charged.append(Fraction(body["epsilon"]))
        assert status == 201, r
        ids.append(r["id"])
        labels[r["id"]] = label
    done = wait_done(api, ds, ids)
    releases_done = max(seconds(r["finished_at"]) for r in done.values()) - t0
    drain_evaluations(env)
    drained = time.time() - t0
    cpu = cpu_seconds(pids) - cpu0
    failed = {rid: r.get("error") for rid, r in done.items() if r["status"] != "done"}
    times = {rid: seconds(r["finished_at"]) - seconds(r["created_at"]) for rid, r in done.items()}
    by_label = {}
    for rid, t in times.items():
        by_label.setdefault(labels[rid], []).append(t)
    _, ledger = api("GET", f"/api/datasets/{ds}/ledger/")
    eps = ledger["budget"]["epsilon"]
    exact = Fraction(eps["spent"]) == sum(charged) and eps["reserved"] == "0" and ledger["chain"].get("ok", False)
    return {
        "workers": workers,
        "jobs": len(ids),
        "failed": failed,
        "releases_done_s": round(releases_done, 1),
        "drained_s": round(drained, 1),
        "throughput_per_min": round(60 * len(ids) / releases_done, 2),
        "p50_s": round(percentile(list(times.values()), 50), 1),
        "p95_s": round(percentile(list(times.values()), 95), 1),
        "p50_by_kind_s": {k: round(percentile(v, 50), 1) for k, v in sorted(by_label.items())},
        "worker_cpu_s": round(cpu, 1),
        "load_before": round(load0, 1),
        "load_after": round(os.getloadavg()[0], 1),
        "ledger_exact": exact,
        "epsilon_spent": eps["spent"],
        "epsilon_expected": str(sum(charged)),
        "chain": ledger["chain"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--threads", type=int, default=None, help="threads per job (default: max(1, cores // workers))")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="submit the burst this many times back to back (a longer burst: less weight on the "
        "last job's tail and on the once-a-second polling)",
    )
    a = p.parse_args(argv)
    from mechanisms.resources import available_cores

    cores = available_cores()
    svc = Services()
    data = svc.root / "data"
    env = {
        **os.environ,
        "DATABASE_URL": svc.database_url,
        "CELERY_BROKER_URL": svc.redis_url,
        "DPPORTAL_DATA_DIR": str(data),
        "DJANGO_SECRET_KEY": "bench-scale-" + os.urandom(8).hex(),
        "DJANGO_SETTINGS_MODULE": "dpportal.settings",
        "PYTHONPATH": str(ROOT),
    }
    procs: list[subprocess.Popen] = []
    results = []
    try:
        manage = [sys.executable, "manage.py"]
        subprocess.run(manage + ["migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
        subprocess.run(
            manage + ["create_steward", "bench", "--password", PASSWORD],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        port = free_port()
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "dpportal.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--timeout",
                "120",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(data / "web.log").open("w"),
            start_new_session=True,
        )
        procs.append(web)
        wait_port(port)
        api = Api(f"http://127.0.0.1:{port}")
        status, tok = api("POST", "/api/auth/token/", {"username": "bench", "password": PASSWORD})
        assert status == 201, tok
        api.token = tok["token"]
        for n in a.workers:
            threads = a.threads or max(1, cores // n)
            wenv = {**env, "DPPORTAL_WORKER_CONCURRENCY": "1", "DPPORTAL_THREADS_PER_JOB": str(threads)}
            workers = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "dpportal",
                        "worker",
                        "-n",
                        f"w{i}@%h",
                        "--concurrency=1",
                        "--prefetch-multiplier=1",
                        "--loglevel=WARNING",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                    ],
                    cwd=ROOT,
                    env=wenv,
                    stdout=subprocess.DEVNULL,
                    stderr=(data / f"worker-{n}-{i}.log").open("w"),
                    start_new_session=True,
                )
                for i in range(n)
            ]
            time.sleep(3)
            try:
                r = burst_round(api, env, n, [w.pid for w in workers], a.repeat)
            finally:
                for w in workers:
                    stop(w)
            r["threads_per_job"], r["cores"] = threads, cores
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "chain"}), flush=True)
    finally:
        for proc in procs:
            stop(proc)
        svc.close()
    base = next((r for r in results if r["workers"] == 1), None)
    for r in results:
        if base:
            r["speedup_vs_1"] = round(r["throughput_per_min"] / base["throughput_per_min"], 2)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cores": cores, "burst": [b[0] for b in BURST], "rounds": results}, indent=2))
    print(
        "| workers | threads/job | jobs | releases done (s) | drained (s) | throughput /min | speedup | p50 s | p95 s "
        "| worker CPU s | load avg before/after | ledger exact |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in results:
        print(
            f"| {r['workers']} | {r['threads_per_job']} | {r['jobs']} | {r['releases_done_s']} | {r['drained_s']} | "
            f"{r['throughput_per_min']} | {r.get('speedup_vs_1', '-')} | {r['p50_s']} | {r['p95_s']} | "
            f"{r['worker_cpu_s']} | {r['load_before']} / {r['load_after']} | {'yes' if r['ledger_exact'] else 'NO'} |"
        )
    return 0 if all(r["ledger_exact"] and not r["failed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
