"""Jobs with REAL workers, one per queue as scripts/run.sh starts them, on the embedded
filesystem broker: while a long DP-MERF fit runs on the synthesis worker, a baseline release and a
draw are done within 10 s of submit (fast queue); a second fit waits with its queue position and is
cancelled (refunded); the running fit is cancelled and stops within 5 s (spent: it read the data);
afterwards nothing is left reserved."""

from __future__ import annotations

import time

import pytest

from tests.data import SMALL_CSV, SMALL_SCHEMA
from tests.live import Stack, manage

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=False)]  # the stack has its own database

GOAL_FAST_S = 10.0  # a draw or a baseline release while a fit runs
GOAL_CANCEL_S = 5.0  # a running fit stops after the cancel request
# DP-MERF reports progress PROGRESS_STEPS (200) times per fit: with 6,000 epochs, every 30 Adam steps
# (about a second here), which bounds how fast a cancel takes effect.
LONG_FIT = {"mechanism": "dpmerf", "epsilon": "1", "delta": "1e-6", "rows": 20, "params": {"epochs": 6000}}


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path / "stack")
    s.env.update(DPPORTAL_BROKER_POLLING_INTERVAL="0.05", DPPORTAL_FAST_JOB_SECONDS="5")
    manage(s.env, "create_steward", "jobs-steward", "--password", "jobs-pass-1357")
    s.start(worker=False)
    for queue in ("synthesis", "fast", "evaluation"):
        s.start_worker(queue)
    yield s
    s.stop()


def _until(stack, rid, token, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, data = stack.json("GET", f"/api/releases/{rid}/", token=token)
        if check(data):
            return data
        time.sleep(0.1)
    raise TimeoutError(f"release {rid} after {timeout} s: {data}\n{stack.logs()}")


def _submit(stack, ds, token, body) -> tuple[dict, float]:
    t0 = time.monotonic()
    status, rel = stack.json("POST", f"/api/datasets/{ds}/releases/", token=token, json_body=body)
    assert status == 201, rel
    return rel, t0


def test_short_jobs_pass_a_running_fit_and_cancel_stops_it(stack):
    _, data = stack.json(
        "POST", "/api/auth/token/", json_body={"username": "jobs-steward", "password": "jobs-pass-1357"}
    )
    token = data["token"]
    _, ds = stack.json(
        "POST",
        "/api/datasets/",
        token=token,
        fields={"name": "people"},
        files={"file": ("people.csv", SMALL_CSV.encode())},
    )
    ds = ds["id"]
    assert stack.json("PUT", f"/api/datasets/{ds}/schema/", token=token, json_body=SMALL_SCHEMA)[0] == 200
    assert (
        stack.json("PUT", f"/api/datasets/{ds}/budget/", token=token, json_body={"epsilon": "10", "delta": "1e-5"})[0]
        == 200
    )

    fit, _ = _submit(stack, ds, token, LONG_FIT)
    assert fit["queue"] == "synthesis" and fit["estimate_seconds"] > 5
    _until(stack, fit["id"], token, lambda r: r["data_touched"] and r["progress"] > 5.5, 240)  # training

    base, t0 = _submit(stack, ds, token, {"mechanism": "baseline", "epsilon": "0.5", "rows": 30})
    assert base["queue"] == "fast"
    done = _until(stack, base["id"], token, lambda r: r["finished"], 60)
    base_s = time.monotonic() - t0
    status, draw = stack.json("POST", f"/api/releases/{base['id']}/draws/", token=token, json_body={"rows": 40})
    t1 = time.monotonic()
    draw_done = _until(stack, draw["id"], token, lambda r: r["finished"], 60)
    draw_s = time.monotonic() - t1
    assert done["status"] == draw_done["status"] == "done", (done, draw_done)
    assert base_s < GOAL_FAST_S and draw_s < GOAL_FAST_S, (base_s, draw_s)
    assert stack.json("GET", f"/api/releases/{fit['id']}/", token=token)[1]["status"] == "running"  # still fitting

    waiting, _ = _submit(stack, ds, token, LONG_FIT)
    _, w = stack.json("GET", f"/api/releases/{waiting['id']}/", token=token)
    assert w["status"] == "queued" and w["queue_position"] == 1 and w["running_in_queue"] == 1, w
    status, w = stack.json("POST", f"/api/releases/{waiting['id']}/cancel/", token=token)
    assert status == 200 and w["status"] == "cancelled" and not w["data_touched"]

    _until(stack, fit["id"], token, lambda r: r["stage"].startswith("training generator"), 180)  # progress points
    status, running = stack.json("POST", f"/api/releases/{fit['id']}/cancel/", token=token)
    t2 = time.monotonic()
    assert status == 202 and running["cancel_requested"], running
    stopped = _until(stack, fit["id"], token, lambda r: r["finished"], 60)
    cancel_s = time.monotonic() - t2
    assert stopped["status"] == "cancelled" and stopped["data_touched"], stopped
    assert cancel_s < GOAL_CANCEL_S, cancel_s

    _, ledger = stack.json("GET", f"/api/datasets/{ds}/ledger/", token=token)
    eps = ledger["budget"]["epsilon"]
    assert eps["reserved"] == "0" and eps["spent"] == "1.5", eps  # baseline 0.5 + the cancelled fit's 1
    print(f"baseline {base_s:.1f} s, draw {draw_s:.1f} s, cancel {cancel_s:.1f} s after the request")
