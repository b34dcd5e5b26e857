"""The API path against a LIVE server with a REAL Celery worker: on the embedded filesystem broker
and on a real Redis server started by the test."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

import pytest

from tests.data import SMALL_CSV, SMALL_SCHEMA
from tests.live import Stack, free_port, manage, wait_for_port

pytestmark = pytest.mark.django_db(transaction=False)  # the stack has its own database


@pytest.fixture(scope="module")
def template_db(tmp_path_factory):
    """Migrate once; each stack starts from a copy."""
    d = tmp_path_factory.mktemp("template")
    from tests.live import base_env

    env = base_env(d)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "create_steward", "live-steward", "--password", "live-pass-2468")
    return d / "db.sqlite3"


def api_walkthrough(stack: Stack) -> None:
    status, data = stack.json(
        "POST", "/api/auth/token/", json_body={"username": "live-steward", "password": "live-pass-2468"}
    )
    assert status == 201, data
    token = data["token"]
    status, ds = stack.json(
        "POST",
        "/api/datasets/",
        token=token,
        fields={"name": "people"},
        files={"file": ("people.csv", SMALL_CSV.encode())},
    )
    assert status == 201, ds
    assert ds["schema_draft"]["draft"] is True and ds["rows"] == 6
    status, data = stack.json("PUT", f"/api/datasets/{ds['id']}/schema/", token=token, json_body=SMALL_SCHEMA)
    assert status == 200 and data["schema_confirmed"], data
    status, data = stack.json(
        "PUT", f"/api/datasets/{ds['id']}/budget/", token=token, json_body={"epsilon": "1", "delta": "0"}
    )
    assert status == 200 and data["epsilon"]["remaining"] == "1", data
    status, data = stack.json(
        "POST",
        f"/api/datasets/{ds['id']}/releases/",
        token=token,
        json_body={"mechanism": "baseline", "epsilon": "2", "rows": 10},
    )
    assert status == 400 and "over budget" in data["error"]
    status, rel = stack.json(
        "POST",
        f"/api/datasets/{ds['id']}/releases/",
        token=token,
        json_body={"mechanism": "baseline", "epsilon": "0.5", "params": {}, "rows": 25},
    )
    assert status == 201, rel
    done = stack.wait_release(rel["id"], token)
    assert done["status"] == "done", (done, stack.logs())
    assert done["privacy"]["guarantee"] == "pure" and done["progress"] == 100.0
    status, body, headers = stack.call("GET", f"/api/releases/{rel['id']}/synthetic.csv", token=token)
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert len(list(csv.DictReader(io.StringIO(body.decode())))) == 25
    status, manifest = stack.json("GET", f"/api/releases/{rel['id']}/manifest.json", token=token)
    assert status == 200 and manifest["epsilon"] == "0.5" and manifest["rows"] == 25
    status, ledger = stack.json("GET", f"/api/datasets/{ds['id']}/ledger/", token=token)
    assert status == 200 and ledger["budget"]["epsilon"]["spent"] == "0.5", ledger["budget"]
    status, data = stack.json("GET", "/api/datasets/", token="not-a-token")
    assert status == 401


@pytest.mark.slow
def test_the_api_path_on_a_live_server_with_a_worker_on_the_filesystem_broker(tmp_path, template_db):
    stack = Stack(tmp_path / "fs", template_db=template_db).start()
    try:
        api_walkthrough(stack)
    finally:
        stack.stop()


@pytest.mark.services
def test_the_api_path_with_a_real_redis_broker(tmp_path, template_db):
    redis = shutil.which("redis-server")
    assert redis, "redis-server is missing: run scripts/ensure-system-packages.sh (make test does)"
    port = free_port()
    server = subprocess.Popen(
        [redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    stack = None
    try:
        wait_for_port(port, server)
        stack = Stack(tmp_path / "redis", broker_url=f"redis://127.0.0.1:{port}/0", template_db=template_db).start()
        api_walkthrough(stack)
        banner = next(stack.data_dir.glob("worker-*.log")).read_text()
        assert f"Connected to redis://:**@127.0.0.1:{port}/0" in banner  # the worker really used this Redis
    finally:
        if stack is not None:
            stack.stop()
        server.terminate()
        server.wait(timeout=10)
