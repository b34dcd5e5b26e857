"""Stranded jobs: a job left "running" by a process that vanished is failed and settled, whatever its
kind (a release, a draw, a private bounds estimate, a category discovery, a utility evaluation, a risk
report: every table registered with ``dpportal.jobs.register``).

When the pool process running a release dies, Celery's parent process sends the task again and the
next delivery marks the release failed (tasks.py). When the WHOLE worker dies (SIGKILL of the parent,
the machine's OOM killer, a power cut), nothing does: the embedded filesystem broker forgets the
unacknowledged message, and Redis hands it back only after its visibility timeout (more than an hour).
The evaluation queue's tasks are never sent again (dashboards/tasks.py).

A running job writes a heartbeat on its row every HEARTBEAT seconds from a daemon thread
(``dpportal.jobs.heartbeat``). :func:`sweep_jobs` fails every running row whose last sign of life
(heartbeat, else start) is older than STALE seconds; a release is settled by the ledger's rules in the
same transaction: spent if the job had touched data, refunded otherwise. Each failure is one conditional
UPDATE (running -> failed), so any number of sweepers agree.

Who sweeps: a loop process beside every worker (:func:`spawn_loop`, connected to ``worker_ready`` in
apps.py). One loop per data directory sweeps (an exclusive file lock), at once and then every SWEEP
seconds; the others wait for the lock, so when the worker whose loop sweeps dies, another worker's loop
takes over within SWEEP seconds. A worker's thread restarts its loop if the loop dies and reaps it (no
zombie processes). ``manage.py sweep_releases`` sweeps once (for cron, or by hand). A job is therefore
settled at most STALE + SWEEP seconds after its process died, as long as one worker is up.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

from dpportal import jobs

from .models import Release
from .services import settlement

log = logging.getLogger(__name__)

STRANDED_ERROR = (
    "the worker running this job stopped without a trace (killed, out of memory, or the machine "
    "restarted): no heartbeat for {seconds} s. {ledger}"
)
SPENT = "It had read the private data, so its budget is spent."
REFUNDED = "It had not read the private data, so its reservation was refunded."


heartbeat_seconds = jobs.heartbeat_seconds
stale_seconds = jobs.stale_seconds


def beat(release_id: int) -> None:
    jobs.beat(Release, pk=release_id)


def heartbeat(release_id: int):
    """While the body runs, write the release's heartbeat every HEARTBEAT seconds (own DB connection)."""
    return jobs.heartbeat(Release, pk=release_id)


def stranded(now=None):
    return Release.objects.filter(jobs.stale(now), status=Release.RUNNING)


def fail_stranded(release_id: int, now=None) -> bool:
    """One conditional UPDATE (still running AND still stale, data flag as read) and the ledger
    settlement, atomically."""
    row = stranded(now).filter(pk=release_id).values("data_touched").first()
    if row is None:
        return False
    error = STRANDED_ERROR.format(seconds=int(stale_seconds()), ledger=SPENT if row["data_touched"] else REFUNDED)
    return settlement.fail_running(release_id, error, jobs.stale(now), data_touched=row["data_touched"])


RELEASES = jobs.JobTable("release", Release, fail_stranded)  # registered in apps.py


def sweep_jobs(now=None) -> dict[str, list[int]]:
    """Fail and settle every stranded job of every registered table; returns their ids by table."""
    failed = {}
    for table in jobs.tables():
        failed[table.label] = [pk for pk in table.stranded(now) if table.fail(pk, now)]
        for pk in failed[table.label]:
            log.warning("%s %s: its worker vanished; marked failed and settled", table.label, pk)
    return failed


def sweep(now=None) -> list[int]:
    """Fail and settle every stranded release (every kind stored as a release row); returns their ids."""
    return [pk for pk in RELEASES.stranded(now) if fail_stranded(pk, now)]


def sweep_once() -> dict[str, list[int]]:
    """One sweep that never raises (the next one retries, e.g. while the database restarts) and
    holds no database connection while the loop sleeps."""
    from dpportal.accounts.throttle import forget_old

    from .leftovers import sweep_files

    failed = {}
    try:
        failed = sweep_jobs()
        sweep_files()
        forget_old()
    except Exception:  # noqa: BLE001
        log.warning("sweeping stranded jobs or leftover files failed", exc_info=True)
    finally:
        connection.close()
    return failed


def sweep_seconds() -> float:
    return float(getattr(settings, "DPPORTAL_SWEEP_SECONDS", 30))


def spawn_loop(stop: threading.Event | None = None) -> threading.Thread:
    """Start ``manage.py sweep_releases --loop`` beside this worker (a worker calls it when ready), and a
    daemon thread that waits for it: the loop is reaped when it ends (no zombie) and started again if it
    died while this worker lives.

    The loop is a separate process, not database work in the worker's own process: the prefork parent
    forks pool processes at any time, and a thread holding a lock or an open database connection at
    that moment is inherited by the new process. The supervising thread holds neither: it waits in
    ``waitpid``. The loop ends when the worker that started it is gone; ``stop`` (tests) ends the thread."""
    stop = stop or threading.Event()
    command = [
        sys.executable,
        str(Path(settings.BASE_DIR) / "manage.py"),
        "sweep_releases",
        "--loop",
        "--parent",
        str(os.getpid()),
    ]

    def supervise() -> None:
        while not stop.is_set():
            code = subprocess.Popen(command, stdin=subprocess.DEVNULL, close_fds=True).wait()
            if not stop.wait(sweep_seconds()):
                log.warning("the sweep loop ended (exit code %s); starting it again", code)

    thread = threading.Thread(target=supervise, name="sweeper-supervisor", daemon=True)
    thread.start()
    return thread


def run_loop(parent: int | None = None) -> None:
    """The body of ``sweep_releases --loop``: one loop per data directory sweeps (an exclusive file lock);
    a loop that finds the lock taken waits for it, so it takes over when the sweeping loop ends. Returns
    when ``parent`` (the worker that started it) is gone."""
    import fcntl

    def parent_alive() -> bool:
        return parent is None or _alive(parent)

    lock_path = Path(settings.DATA_DIR) / "sweeper.lock"
    with open(lock_path, "a") as lock:
        while True:
            if not parent_alive():
                return
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                time.sleep(sweep_seconds())  # another worker's loop sweeps this data directory
        while parent_alive():
            sweep_once()
            time.sleep(sweep_seconds())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return os.getppid() == pid  # reparented: the worker is gone even if its pid was reused
