"""Stranded jobs: a release left "running" by a worker that vanished is failed and settled.

When the pool process running a job dies, Celery's parent process sends the task again and the next
delivery marks the release failed (tasks.py). When the WHOLE worker dies (SIGKILL of the parent,
the machine's OOM killer, a power cut), nothing does: the embedded filesystem broker forgets the
unacknowledged message, and Redis hands it back only after its visibility timeout (more than an
hour). Before this module such a release stayed "running" forever, its reservation open and its
raw file undeletable.

The running job writes a heartbeat on its row every ``HEARTBEAT_SECONDS`` from a daemon thread
(:func:`heartbeat`). :func:`sweep` fails every running release whose last sign of life (heartbeat,
else start) is older than ``STALE_SECONDS`` and settles it by the ledger's rules in the same
transaction: spent if the job had touched data, refunded otherwise. Each failure is one
conditional UPDATE (running -> failed), so any number of sweepers (every worker runs one) agree.

Who sweeps: a loop process that every worker starts when it is ready (:func:`spawn_loop`, connected
to ``worker_ready`` in apps.py; one loop per data directory), at once and then every
``SWEEP_SECONDS``; and ``manage.py sweep_releases`` (for cron, or by hand). A release is therefore
settled at most STALE + SWEEP seconds after its worker died, as long as one worker is up (restart dead
workers with a process supervisor).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from .models import Release
from .services import settlement

log = logging.getLogger(__name__)

STRANDED_ERROR = (
    "the worker running this job stopped without a trace (killed, out of memory, or the machine "
    "restarted): no heartbeat for {seconds} s. {ledger}"
)
SPENT = "It had read the private data, so its budget is spent."
REFUNDED = "It had not read the private data, so its reservation was refunded."


def heartbeat_seconds() -> float:
    return float(getattr(settings, "DPPORTAL_HEARTBEAT_SECONDS", 10))


def stale_seconds() -> float:
    return float(getattr(settings, "DPPORTAL_STALE_SECONDS", 120))


def beat(release_id: int) -> None:
    Release.objects.filter(pk=release_id, status=Release.RUNNING).update(heartbeat_at=timezone.now())


@contextlib.contextmanager
def heartbeat(release_id: int):
    """While the body runs, write the release's heartbeat every HEARTBEAT_SECONDS (own DB connection)."""
    stop = threading.Event()

    def loop() -> None:
        try:
            while not stop.wait(heartbeat_seconds()):
                try:
                    beat(release_id)
                except Exception:  # noqa: BLE001 - a missed beat is retried; never kill the job
                    log.warning("release %s: heartbeat not written", release_id, exc_info=True)
        finally:
            connection.close()  # this thread's connection

    beat(release_id)
    thread = threading.Thread(target=loop, name=f"heartbeat-{release_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _stale_q(now=None) -> Q:
    cutoff = (now or timezone.now()) - timedelta(seconds=stale_seconds())
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)


def stranded(now=None):
    return Release.objects.filter(_stale_q(now), status=Release.RUNNING)


def sweep(now=None) -> list[int]:
    """Fail and settle every stranded release; returns their ids."""
    failed = []
    for pk in list(stranded(now).values_list("pk", flat=True)):
        if fail_stranded(pk, now):
            failed.append(pk)
            log.warning("release %s: its worker vanished; marked failed and settled", pk)
    return failed


def fail_stranded(release_id: int, now=None) -> bool:
    """One conditional UPDATE (still running AND still stale, data flag as read) and the ledger
    settlement, atomically."""
    row = stranded(now).filter(pk=release_id).values("data_touched").first()
    if row is None:
        return False
    error = STRANDED_ERROR.format(seconds=int(stale_seconds()), ledger=SPENT if row["data_touched"] else REFUNDED)
    return settlement.fail_running(release_id, error, _stale_q(now), data_touched=row["data_touched"])


def sweep_once() -> list[int]:
    """One sweep that never raises (the next one retries, e.g. while the database restarts) and
    holds no database connection while the loop sleeps."""
    from dpportal.accounts.throttle import forget_old

    from .leftovers import sweep_files

    failed = []
    try:
        failed = sweep()
        sweep_files()
        forget_old()
    except Exception:  # noqa: BLE001
        log.warning("sweeping stranded releases or leftover files failed", exc_info=True)
    finally:
        connection.close()
    return failed


def spawn_loop() -> subprocess.Popen:
    """Start ``manage.py sweep_releases --loop`` beside this worker (a worker calls it when ready).

    A separate process, not a thread or database work in the worker's own process: the prefork
    parent forks pool processes at any time, and a thread holding a lock (or an open database
    connection) at that moment is inherited by the new process. The loop sweeps at once and then
    every SWEEP_SECONDS, holds a file lock so that one loop runs per data directory, and ends when
    the worker that started it is gone."""
    return subprocess.Popen(
        [
            sys.executable,
            str(Path(settings.BASE_DIR) / "manage.py"),
            "sweep_releases",
            "--loop",
            "--parent",
            str(os.getpid()),
        ],
        stdin=subprocess.DEVNULL,
        close_fds=True,
    )


def run_loop(parent: int | None = None) -> None:
    """The body of ``sweep_releases --loop``: one loop per data directory (an exclusive file lock)."""
    import fcntl

    lock_path = Path(settings.DATA_DIR) / "sweeper.lock"
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # another worker's loop sweeps this data directory
        interval = float(getattr(settings, "DPPORTAL_SWEEP_SECONDS", 30))
        while parent is None or _alive(parent):
            sweep_once()
            time.sleep(interval)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return os.getppid() == pid  # reparented: the worker is gone even if its pid was reused
