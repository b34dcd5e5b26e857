"""A risk report whose worker is SIGKILLed mid-refit, with real workers on the embedded filesystem
broker: killing the pool process leaves the worker up, killing the whole worker needs the supervisor to
restart it. Either way the report must end failed, with the reason, within the bound, and never run
twice."""

from __future__ import annotations

import os
import signal
import tempfile
import time

import pytest

from tests.dpportal.ledger.test_crash import Scene
from tests.dpportal.ledger.test_stranded import BOUND, FAST_SWEEP, kill_group, start_worker

pytestmark = [pytest.mark.services, pytest.mark.slow]
# BOUND: seconds from the kill to a settled report, 60 with the test's short intervals (FAST_SWEEP),
# 120 with the shipped defaults (STRANDED_DEFAULT_TIMING=1: heartbeat 10 s, stale 60 s, sweep 30 s)


def _failed(scene: Scene, release: int):
    state = scene.driver("risk-state", str(release))
    return state if state["status"] == "failed" else None


@pytest.mark.parametrize("what", ["pool process", "whole worker"])
def test_a_risk_report_killed_mid_refit_is_failed_not_left_running(what):
    with tempfile.TemporaryDirectory(prefix="dpportal-risk-kill-") as tmp:
        scene = Scene(tmp, None)
        scene.env.update(FAST_SWEEP)
        workers = []
        try:
            release = scene.driver("setup-risk")["release"]
            workers.append(start_worker(scene, "worker.log"))
            pid = scene.wait("the report's first refit", scene.fit_calls, 90)[0]
            assert scene.driver("risk-state", str(release))["stage"] == "refit 1/32"
            if what == "pool process":
                os.kill(pid, signal.SIGKILL)  # the worker's main process stays up
            else:
                kill_group(workers[0])
                workers.append(start_worker(scene, "worker2.log"))  # the supervisor (run.sh) restarts it
            killed_at = time.monotonic()
            state = scene.wait("the report to be failed", lambda: _failed(scene, release), BOUND)
            elapsed = time.monotonic() - killed_at
            print(f"risk report settled {elapsed:.1f} s after SIGKILL of the {what}")
            assert "no heartbeat" in state["error"] and "again" in state["error"], state
            time.sleep(2)
            assert len(scene.fit_calls()) == 1  # never sent again
        finally:
            for w in workers:
                kill_group(w)
            scene.close()
