"""A big table through the JSON API: the web process's memory during upload and schema check, and an MST
release's time and worker peak memory against its memory plan.

    python -m benchmarks.system.big_upload --rows 1000000            # builds the table (big_table.py)
    python -m benchmarks.system.big_upload --csv t.csv --schema t.schema.json
    python -m benchmarks.system.big_upload --csv t.csv --inspect-only   # the upload's checks in this process

Starts, on a loopback port and a temporary DPPORTAL_DATA_DIR, the web server as ``make run`` does
(waitress, ``python -m dpportal.serve``, embedded SQLite and filesystem broker) and one Celery worker on the
synthesis and evaluation queues (concurrency 1, every core for the job). Then, through the API: uploads the
CSV (streamed from disk by the client), confirms the schema (a file over DPPORTAL_SCHEMA_CHECK_INLINE_CELLS is
checked on the worker: the PUT answers 202 and the client polls /schema/check/), sets a budget and asks for an
MST release (epsilon 1, delta 1e-6, ``--release-rows`` rows). Memory is each process's
resident high-water mark (VmHWM): the web server's after the upload and after the schema check, and the
largest of the worker's processes after the schema check and after the release. The job's memory plan
(``planned_memory_bytes``, what the release's plan check compares with DPPORTAL_MAX_JOB_MEMORY_MB) is printed
beside it.
Writes benchmarks/out/big_upload-<rows>.json; removes its temporary folder.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.system.scale import Api, free_port, stop, wait_port

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out"
PASSWORD = secrets.token_urlsafe(16)


def hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree(pid: int) -> list[int]:
    """pid and its descendants (Celery's pool processes)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for child in Path(f"/proc/{p}/task").glob("*/children"):
            todo += [int(c) for c in child.read_text().split()]
    return out


def upload(url: str, token: str, csv: Path) -> tuple[int, dict, float]:
    """POST the file as multipart, streamed from disk (the client holds 1 MiB at a time)."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{csv.name}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def body():
        yield head
        with open(csv, "rb") as fh:
            yield from iter(lambda: fh.read(2**20), b"")
        yield tail

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=3600)
    t0 = time.time()
    conn.request(
        "POST",
        "/api/datasets/",
        body=body(),
        headers={
            "Authorization": f"Token {token}",
            "Accept": "application/json",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(len(head) + csv.stat().st_size + len(tail)),
        },
    )
    resp = conn.getresponse()
    data = json.loads(resp.read() or b"{}")
    return resp.status, data, time.time() - t0


def put_json(url: str, token: str, path: str, body: dict) -> tuple[int, dict]:
    """PUT (a small file's schema check reads every record before it answers)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=3600)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json", "Content-Type": "application/json"}
    conn.request("PUT", path, body=json.dumps(body).encode(), headers=headers)
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read() or b"{}")


def inspect_only(csv: Path) -> int:
    """The web process's work on an upload once the file is on disk (``inspect_csv``, then the draft), in this
    process: CPU and wall seconds, and the peak memory over the idle process's."""

    tmp = Path(tempfile.mkdtemp(prefix="dpportal-inspect-"))
    os.environ.update(DPPORTAL_DATA_DIR=str(tmp), DJANGO_SECRET_KEY=os.urandom(32).hex())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    import django

    django.setup()
    from dpportal.datasets import upload

    idle = hwm_mib(os.getpid())
    cpu, wall = time.process_time(), time.time()
    info = upload.inspect_csv(csv, upload.Limits.from_settings())
    upload.draft_for(csv, info, ["", "?"])
    out = {
        "rows": info.n_rows,
        "columns": len(info.header),
        "sample_rows": len(info.sample),
        "cpu_s": round(time.process_time() - cpu, 1),
        "wall_s": round(time.time() - wall, 1),
        "idle_mib": round(idle),
        "peak_mib": round(hwm_mib(os.getpid())),
        "load_avg_1min": round(os.getloadavg()[0], 1),
    }
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the table built (without --csv)")
    p.add_argument("--csv", type=Path)
    p.add_argument("--schema", type=Path)
    p.add_argument("--release-rows", type=int, default=100_000)
    p.add_argument("--inspect-only", action="store_true", help="time the upload's checks and draft in-process")
    a = p.parse_args(argv)
    if a.inspect_only:
        return inspect_only(a.csv)
    from mechanisms.resources import available_cores
    from mechanisms.schema import Schema

    tmp = Path(tempfile.mkdtemp(prefix="dpportal-big-"))
    if a.csv is None:
        from benchmarks.system.big_table import write

        t0 = time.time()
        a.csv = write(a.rows, tmp / "table.csv")
        print(f"built {a.csv} ({a.csv.stat().st_size / 2**20:,.0f} MiB) in {time.time() - t0:.0f} s", flush=True)
    schema_path = a.schema or a.csv.with_suffix(".schema.json")
    schema = json.loads(schema_path.read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(
        DPPORTAL_DATA_DIR=str(tmp / "data"),
        DJANGO_SECRET_KEY=os.urandom(32).hex(),  # a throwaway key per run
        DJANGO_SETTINGS_MODULE="dpportal.settings",
        PYTHONPATH=str(ROOT),
        DPPORTAL_THREADS_PER_JOB=str(available_cores()),
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run(manage + ["migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(manage + ["create_steward", "bench", "--password", PASSWORD], cwd=ROOT, env=env, check=True)
    port = free_port()
    logs = tmp / "data"
    web = subprocess.Popen(
        [sys.executable, "-m", "dpportal.serve", "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(logs / "web.log").open("w"),
        start_new_session=True,
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "dpportal", "worker", "-Q", "synthesis,evaluation", "-n", "big@%h"]
        + ["--concurrency=1", "--prefetch-multiplier=1", "--loglevel=WARNING"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(logs / "worker.log").open("w"),
        start_new_session=True,
    )
    result: dict = {"cores": available_cores(), "file_mib": round(a.csv.stat().st_size / 2**20)}
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}"
        api = Api(url)
        status, tok = api("POST", "/api/auth/token/", {"username": "bench", "password": PASSWORD})
        assert status == 201, tok
        api.token = tok["token"]
        result["web_idle_mib"] = round(hwm_mib(web.pid))
        status, ds, took = upload(url, api.token, a.csv)
        assert status == 201, ds
        result.update(rows=ds["rows"], columns=len(ds["columns"]), upload_s=round(took, 1))
        result["web_after_upload_mib"] = round(hwm_mib(web.pid))
        print(json.dumps(result), flush=True)
        t0 = time.time()
        status, out = put_json(url, api.token, f"/api/datasets/{ds['id']}/schema/", schema)
        assert status in (200, 202), out
        result["schema_check_on"] = "worker" if status == 202 else "web"
        while status == 202:
            time.sleep(1)
            _, out = api("GET", f"/api/datasets/{ds['id']}/schema/check/")
            if out["finished"]:
                assert out["status"] == "done", out
                break
        result["schema_check_s"] = round(time.time() - t0, 1)
        result["worker_after_schema_check_mib"] = round(max(hwm_mib(pid) for pid in tree(worker.pid)))
        result["web_after_schema_check_mib"] = round(hwm_mib(web.pid))
        assert api("PUT", f"/api/datasets/{ds['id']}/budget/", {"epsilon": "10", "delta": "1e-5"})[0] == 200
        body = {"mechanism": "mst", "epsilon": "1", "delta": "1e-6", "rows": a.release_rows}
        from mechanisms.runner import build

        planned = build("mst", Schema.from_dict(schema), epsilon=1, delta=1e-6).planned_memory_bytes(ds["rows"])
        result["mst_planned_mib"] = round(planned / 2**20)
        print(json.dumps(result), flush=True)
        t0 = time.time()
        status, rel = api("POST", f"/api/datasets/{ds['id']}/releases/", body)
        assert status == 201, rel
        while True:
            _, r = api("GET", f"/api/releases/{rel['id']}/")
            if r["finished"]:
                break
            time.sleep(2)
        result["mst_status"] = r["status"] if r["status"] == "done" else f"{r['status']}: {r.get('error')}"
        result["mst_release_s"] = round(time.time() - t0, 1)
        result["worker_peak_mib"] = round(max(hwm_mib(pid) for pid in tree(worker.pid)))
        result["load_avg_1min_after"] = round(os.getloadavg()[0], 1)
    finally:
        stop(worker)
        stop(web)
        shutil.rmtree(tmp, ignore_errors=True)  # the uploaded copies (and the table built here)
    print(json.dumps(result), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"big_upload-{result.get('rows', a.rows)}.json").write_text(json.dumps(result, indent=2))
    return 0 if result.get("mst_status") == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
