"""A real Celery worker (prefork, one pool process) for the crash test. The baseline mechanism's
fit first appends the pool process's pid to $CRASH_MARKER, then blocks, so the test can SIGKILL
that process mid-job, AFTER the job marked data as touched. A risk report's attacks block the same
way (after its first progress point). Counting the marker's lines tells whether a job ever ran twice."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")

import django  # noqa: E402

django.setup()

from mechanisms.synthesizers.baseline import Baseline  # noqa: E402

MARKER = os.environ["CRASH_MARKER"]
_original_fit = Baseline._fit


def blocking_fit(self, source):
    with open(MARKER, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(float(os.environ.get("CRASH_BLOCK_SECONDS", "120")))
    return _original_fit(self, source)


Baseline._fit = blocking_fit

import mechanisms.risk as _risk  # noqa: E402

_original_risk_report = _risk.risk_report


def blocking_risk_report(*args, progress=None, **kwargs):
    """The risk report's first refit, blocked like the fit: the test kills its worker here."""
    if progress is not None:
        progress(0.1, "refit 1/32", force=True)
    with open(MARKER, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(float(os.environ.get("CRASH_BLOCK_SECONDS", "120")))
    return _original_risk_report(*args, progress=progress, **kwargs)


_risk.risk_report = blocking_risk_report

from dpportal.celery import app  # noqa: E402

app.conf.worker_lost_wait = 1.0  # billiard waits 10 s by default before reporting the lost job

app.worker_main(
    [
        "worker",
        "--pool=prefork",
        "--concurrency=1",
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--hostname=crash@%h",
    ]
)
