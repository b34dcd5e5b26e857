"""Stranded jobs with real workers: SIGKILL of the WHOLE worker (main process and pool)
mid-fit, on the embedded filesystem broker and on Redis. Nothing redelivers the message in time
(the filesystem broker forgets it; Redis waits for its visibility timeout, over an hour), so only
the sweeper can settle the release: a restarted worker sweeps at startup and periodically. The
release must end failed, spent (data was read), with its reservation closed and the chain intact,
within a bounded time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from .test_crash import HERE, ROOT, Scene, broker_url  # noqa: F401  (fixture)

pytestmark = [pytest.mark.services, pytest.mark.slow]
# Seconds from the kill to a settled release. The test uses short intervals; STRANDED_DEFAULT_TIMING=1
# runs it with the shipped defaults (heartbeat 10 s, stale 60 s, sweep 30 s) against the target
# of 2 minutes.
DEFAULT_TIMING = bool(os.environ.get("STRANDED_DEFAULT_TIMING"))
BOUND = 120 if DEFAULT_TIMING else 60
FAST_SWEEP = (
    {}
    if DEFAULT_TIMING
    else {"DPPORTAL_HEARTBEAT_SECONDS": "0.5", "DPPORTAL_STALE_SECONDS": "4", "DPPORTAL_SWEEP_SECONDS": "1"}
)


def start_worker(scene: Scene, log_name: str) -> subprocess.Popen:
    log = open(os.path.join(scene.tmp, log_name), "w")
    return subprocess.Popen(
        [sys.executable, str(HERE / "crash_worker.py")],
        cwd=ROOT,
        env=scene.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def test_sigkill_of_the_whole_worker_leaves_no_stranded_release(broker_url):  # noqa: F811
    with tempfile.TemporaryDirectory(prefix="dpportal-stranded-") as tmp:
        scene = Scene(tmp, broker_url)
        scene.env.update(FAST_SWEEP)
        workers = []
        try:
            release = scene.driver("setup")["release"]
            workers.append(start_worker(scene, "worker.log"))
            scene.wait("the job to enter fit", scene.fit_calls, 90)
            running = scene.driver("state", str(release))
            assert running["status"] == "running" and running["data_touched"] and running["ledger"] == ["reserve"]

            kill_group(workers[0])  # main process and pool process: no one is left to report the loss
            killed_at = time.monotonic()
            time.sleep(6)  # longer than the stale limit: without a sweeper the release stays running forever
            assert scene.driver("state", str(release))["status"] == "running"

            workers.append(start_worker(scene, "worker2.log"))  # the supervisor (run.sh) restarts the worker
            state = scene.wait("the stranded release to be failed and settled", lambda: scene.resolved(release), BOUND)
            elapsed = time.monotonic() - killed_at
            print(f"stranded release settled {elapsed:.1f} s after SIGKILL of the whole worker")
            assert elapsed < BOUND
            assert state["ledger"] == ["reserve", "spend"], state
            assert (state["budget"]["spent"], state["budget"]["reserved"]) == ("0.5", "0")
            assert "stopped without a trace" in state["error"] and "spent" in state["error"]
            assert state["chain_ok"] and state["output_file"] == ""
            assert len(scene.fit_calls()) == 1  # never run twice
        finally:
            for w in workers:
                kill_group(w)
            scene.close()


def test_a_cold_shutdown_names_itself_on_the_release():
    """A second Ctrl-C (cold shutdown) left the error text '-241' (billiard's
    SystemExit(-(256 - SIGTERM))). What run.sh does: TERM to the worker, then on the second Ctrl-C
    the terminal's INT reaches the whole group and run.sh sends QUIT. Embedded filesystem broker.
    NOT fixed: the worker's main process then often hangs (3 of 3 runs; its stack:
    billiard waiting for the pool's queue lock), so this test waits
    for the release, not for the worker's exit."""
    with tempfile.TemporaryDirectory(prefix="dpportal-cold-") as tmp:
        scene = Scene(tmp, None)
        worker = None
        try:
            release = scene.driver("setup")["release"]
            worker = start_worker(scene, "worker.log")
            scene.wait("the job to enter fit", scene.fit_calls, 90)
            os.kill(worker.pid, signal.SIGTERM)  # first Ctrl-C: warm shutdown waits for the job
            time.sleep(2)
            os.killpg(worker.pid, signal.SIGINT)  # second Ctrl-C
            os.kill(worker.pid, signal.SIGQUIT)
            state = scene.wait("the interrupted job to be failed and settled", lambda: scene.resolved(release), 60)
            assert state and state["ledger"] == ["reserve", "spend"], state
            assert state["error"].startswith("the worker was shut down by SIGTERM while this job ran"), state
            assert "-241" not in state["error"]
        finally:
            if worker is not None:
                kill_group(worker)
            scene.close()
