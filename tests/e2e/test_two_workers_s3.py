"""Several machines sharing nothing but PostgreSQL, Redis and the object store: the web server
(``dpportal.serve``) and two Celery workers, each with its own DATA_DIR, against a throwaway PostgreSQL,
a real Redis and moto's S3 server on loopback. Two releases requested together run one on each worker
(each fetches the raw file from the bucket), a draw runs on a host without the summary, a cancel is
settled, and the web host serves the synthetic tables it never wrote."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tests.data import SMALL_CSV, SMALL_SCHEMA
from tests.live import ROOT, free_port, multipart, wait_for_port
from tests.s3server import CREDENTIALS, keys, make_bucket, moto_server

pytestmark = [pytest.mark.services, pytest.mark.slow]
NAME = {"name": "people"}
WORKER_ARGS = ("--loglevel=INFO", "--concurrency=1", "--prefetch-multiplier=1", "--without-gossip", "--without-mingle")


def call(url, method, path, token=None, json_body=None, files=None, fields=None):
    headers = {"Accept": "application/json"}
    data = None
    if token:
        headers["Authorization"] = f"Token {token}"
    if json_body is not None:
        data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
    elif files is not None:
        data, headers["Content-Type"] = multipart(fields or {}, files)
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait(url, token, rid, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = json.loads(call(url, "GET", f"/api/releases/{rid}/", token)[1])
        if data.get("finished"):
            return data
        time.sleep(0.3)
    raise TimeoutError(f"release {rid} not finished: {data}")


def test_two_workers_without_shared_disk_complete_releases_draws_and_cancels(tmp_path, postgres_url):
    import psycopg

    redis = shutil.which("redis-server")
    assert redis, "redis-server is missing: run scripts/ensure-system-packages.sh (make test does)"
    db = "dpportal_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    redis_port = free_port()
    procs = [
        subprocess.Popen(
            [redis, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
    ]
    with moto_server(tmp_path) as endpoint:
        try:
            wait_for_port(redis_port, procs[0])
            bucket = "dpportal-" + uuid.uuid4().hex[:8]
            client = make_bucket(endpoint, bucket)
            shared = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
            shared.update(
                CREDENTIALS,
                DATABASE_URL=postgres_url.rsplit("/", 1)[0] + "/" + db,
                CELERY_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
                DJANGO_SECRET_KEY="two-workers-" + uuid.uuid4().hex,
                DJANGO_SETTINGS_MODULE="dpportal.settings",
                PYTHONPATH=str(ROOT),
                PYTHONUNBUFFERED="1",
                DPPORTAL_S3_BUCKET=bucket,
                DPPORTAL_S3_ENDPOINT_URL=endpoint,
                DPPORTAL_S3_SSE="AES256",
                DPPORTAL_RISK_REPORT="0",
            )

            def host(name):
                return {**shared, "DPPORTAL_DATA_DIR": str(tmp_path / name)}

            web = host("web")
            script = (
                "from dpportal.accounts.models import Profile, make_user; "
                "make_user('steward', 'steward-Pw-1234', role=Profile.STEWARD)"
            )
            for args in (["migrate", "--noinput", "-v0"], ["shell", "-c", script]):
                out = subprocess.run(
                    [sys.executable, "manage.py", *args], cwd=ROOT, env=web, capture_output=True, text=True
                )
                assert out.returncode == 0, out.stderr[-2000:]
            port = free_port()
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "dpportal.serve", "--listen", f"127.0.0.1:{port}"],
                    cwd=ROOT,
                    env=web,
                    stdout=open(tmp_path / "web.log", "w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            for name in ("w1", "w2"):
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "celery", "-A", "dpportal", "worker", "-n", f"{name}@%h", *WORKER_ARGS],
                        cwd=ROOT,
                        env=host(name),
                        stdout=open(tmp_path / f"{name}.log", "w"),
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            wait_for_port(port, procs[1])
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 90
            while not all("ready." in (tmp_path / f"{n}.log").read_text() for n in ("w1", "w2")):
                assert time.monotonic() < deadline, (tmp_path / "w1.log").read_text()[-2000:]
                time.sleep(0.5)

            status, body = call(
                url, "POST", "/api/auth/token/", json_body={"username": "steward", "password": "steward-Pw-1234"}
            )
            token = json.loads(body)["token"]
            status, body = call(
                url, "POST", "/api/datasets/", token, files={"file": ("people.csv", SMALL_CSV.encode())}, fields=NAME
            )
            assert status == 201, body
            ds = json.loads(body)
            assert call(url, "PUT", f"/api/datasets/{ds['id']}/schema/", token, json_body=SMALL_SCHEMA)[0] == 200
            budget = {"epsilon": "3", "delta": "1e-5"}
            assert call(url, "PUT", f"/api/datasets/{ds['id']}/budget/", token, json_body=budget)[0] == 200
            raw_key = f"uploads/{next((tmp_path / 'web' / 'uploads').glob('*.csv')).name}"
            assert raw_key in keys(client, bucket)

            request = {"mechanism": "dpmerf", "epsilon": "0.5", "delta": "1e-6", "params": {"epochs": 20}}
            ids = []
            for _ in range(2):  # requested together: one on each worker
                status, body = call(url, "POST", f"/api/datasets/{ds['id']}/releases/", token, json_body=request)
                assert status == 201, body
                ids.append(json.loads(body)["id"])
            done = [wait(url, token, rid) for rid in ids]
            assert [d["status"] for d in done] == ["done", "done"], done
            # the host that fitted a release logs its memory plan; another may fetch its output for an evaluation
            fitted = {n: (tmp_path / f"{n}.log").read_text() for n in ("w1", "w2")}
            ran_on = {rid: [n for n in ("w1", "w2") if f"release {rid}: dpmerf on " in fitted[n]] for rid in ids}
            print(f"releases by host: {ran_on}")
            assert sorted(sum(ran_on.values(), [])) == ["w1", "w2"], ran_on  # each worker ran one
            for n in ("w1", "w2"):  # each fetched the raw file from the bucket (no shared disk)
                assert (tmp_path / n / raw_key).read_bytes() == (tmp_path / "web" / raw_key).read_bytes()

            status, body = call(url, "POST", f"/api/releases/{ids[0]}/draws/", token, json_body={"rows": 15})
            assert status == 201, body
            draw = wait(url, token, json.loads(body)["id"])
            assert draw["status"] == "done", draw

            slow = dict(request, params={"epochs": 100000})
            status, body = call(url, "POST", f"/api/datasets/{ds['id']}/releases/", token, json_body=slow)
            assert status == 201, body
            long_id = json.loads(body)["id"]
            deadline = time.monotonic() + 60
            while json.loads(call(url, "GET", f"/api/releases/{long_id}/", token)[1])["status"] != "running":
                assert time.monotonic() < deadline
                time.sleep(0.3)
            assert call(url, "POST", f"/api/releases/{long_id}/cancel/", token, json_body={})[0] in (200, 202)
            assert wait(url, token, long_id)["status"] == "cancelled"

            for rid in ids + [draw["id"]]:  # the web host serves tables written elsewhere
                status, body = call(url, "GET", f"/api/releases/{rid}/synthetic.csv", token)
                assert status == 200 and len(list(csv.DictReader(io.StringIO(body.decode())))) in (6, 15)
            assert not list((tmp_path / "web" / "releases").glob("*/summary.npz"))  # never needed there
            objects = keys(client, bucket)
            assert all(f"releases/{rid}/synthetic.csv" in objects for rid in ids + [draw["id"]])
        finally:
            for p in reversed(procs):
                if p.poll() is None:
                    (os.killpg(p.pid, signal.SIGTERM) if p.pid != procs[0].pid else p.terminate())
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
