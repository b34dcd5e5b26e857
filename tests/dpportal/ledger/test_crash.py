"""Crash: a real Celery worker's pool process is SIGKILLed while a job is inside the mechanism's
fit (data touched, noise being drawn). The job must end ``failed``, its budget ``spent``, no output
exposed, and no delivery may run it a second time. A job that fails before reading data, on the
same worker, is refunded. SQLite file database; the embedded filesystem broker and a real Redis."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
pytestmark = [pytest.mark.services, pytest.mark.slow]


class Scene:
    def __init__(self, tmp: str, broker_url: str | None):
        self.tmp = tmp
        self.marker = os.path.join(tmp, "fit-calls")
        self.env = {
            **os.environ,
            "DPPORTAL_DATA_DIR": tmp,
            "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
            "CRASH_MARKER": self.marker,
            "DPPORTAL_BROKER_POLLING_INTERVAL": "0.05",
        }
        for name in ("DJANGO_SETTINGS_MODULE", "CELERY_BROKER_URL", "REDIS_URL"):
            self.env.pop(name, None)
        if broker_url:
            self.env["CELERY_BROKER_URL"] = broker_url
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "crash_driver.py")],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def driver(self, *args: str) -> dict:
        self.proc.stdin.write(" ".join(args) + "\n")
        line = self.proc.stdout.readline()
        assert line, f"driver died on {args}"
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def resolved(self, release: int):
        """The release's state once it failed AND its reservation was resolved (two transactions)."""
        s = self.driver("state", str(release))
        return s if s["status"] == "failed" and len(s["ledger"]) == 2 else None

    def fit_calls(self) -> list[int]:
        if not os.path.exists(self.marker):
            return []
        return [int(x) for x in Path(self.marker).read_text().split()]

    def wait(self, what, predicate, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.3)
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; worker log:\n{self.log()[-4000:]}")

    def log(self) -> str:
        path = os.path.join(self.tmp, "worker.log")
        return Path(path).read_text(errors="replace") if os.path.exists(path) else ""


@pytest.fixture(params=["filesystem", "redis"])
def broker_url(request, tmp_path):
    if request.param == "filesystem":
        yield None  # the embedded default
        return
    redis = shutil.which("redis-server")
    assert redis, "redis-server is missing: run scripts/ensure-system-packages.sh (make test does)"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "redis-server did not start"
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def scene(broker_url):
    with tempfile.TemporaryDirectory(prefix="dpportal-crash-") as tmp:
        s = Scene(tmp, broker_url)
        ids = s.driver("setup")  # release A is queued before the worker starts
        s.dataset, s.release = ids["dataset"], ids["release"]
        with open(os.path.join(tmp, "worker.log"), "w") as log:
            worker = subprocess.Popen(
                [sys.executable, str(HERE / "crash_worker.py")],
                cwd=ROOT,
                env=s.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            yield s
        finally:
            os.killpg(worker.pid, signal.SIGKILL)  # the group this fixture started: worker + its pool
            worker.wait(timeout=30)
            s.close()


def test_sigkill_mid_job_leaves_it_failed_and_spent_and_never_runs_it_twice(scene):
    pid = scene.wait("the job to enter the mechanism's fit", scene.fit_calls, 90)[0]
    running = scene.driver("state", str(scene.release))
    assert running["status"] == "running" and running["data_touched"]
    assert running["ledger"] == ["reserve"] and running["budget"]["reserved"] == "0.5"

    os.kill(pid, signal.SIGKILL)  # the pool process running the job dies mid-fit

    state = scene.wait("the killed job to be marked failed and settled", lambda: scene.resolved(scene.release), 60)
    assert state["ledger"] == ["reserve", "spend"], state  # noise was (being) drawn: spent, not refunded
    assert (state["budget"]["spent"], state["budget"]["reserved"]) == ("0.5", "0")
    assert state["output_file"] == "" and not state["release_dir_exists"]  # no partial output exposed
    assert state["chain_ok"]
    assert scene.fit_calls() == [pid]  # the redelivery did not run the job again

    # one more delivery of the same message, much later: still nothing runs, nothing is charged
    scene.driver("redeliver", str(scene.release))
    bad = scene.driver("plan-bad")["release"]  # queued behind it, so the redelivery is consumed first
    refunded = scene.wait("the unbuildable job to fail and be refunded", lambda: scene.resolved(bad), 60)
    assert scene.fit_calls() == [pid]
    assert scene.driver("state", str(scene.release))["ledger"] == ["reserve", "spend"]

    # a job that failed before reading any data is refunded
    assert not refunded["data_touched"] and refunded["ledger"] == ["reserve", "refund"], refunded
    assert (refunded["budget"]["spent"], refunded["budget"]["reserved"], refunded["budget"]["remaining"]) == (
        "0.5",
        "0",
        "0.5",
    )
    assert refunded["chain_ok"]
    if "CELERY_BROKER_URL" in scene.env:
        assert "Connected to redis://" in scene.log()  # the worker really used the Redis broker
