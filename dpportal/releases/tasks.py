"""The Celery task: thin. Takes a primary key, claims the row, hands off to ``services.jobs.execute``.
Its registered name is ``services.queueing.RUN_RELEASE``: the planners send it by name."""

from __future__ import annotations

import logging

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from . import sweeper
from .models import Release
from .services import jobs, worker

log = logging.getLogger(__name__)


# Worker loss (tested by tests/dpportal/ledger/test_crash.py): when the pool process
# running a job dies (SIGKILL, OOM), Celery 5.7's retry_on_worker_lost makes the worker's parent send
# the task again with retries + 1 (reject_on_worker_lost stays the fallback if that send fails).
# The retry count is what tells the next delivery "your previous worker died" on EVERY broker:
# kombu's virtual transports (the embedded filesystem broker) requeue without setting
# delivery_info["redelivered"]. max_retries=None: a retry never re-runs a started job (its claim fails),
# it only marks the release failed, so there is no loop to bound.
@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    retry_on_worker_lost=True,
    default_retry_delay=0,
    max_retries=None,
)
def run_release(self, release_id: int) -> None:
    if worker.claim(release_id):
        with sweeper.heartbeat(release_id):  # a vanished worker's job is failed by sweeper.sweep
            jobs.execute(release_id)
        jobs.queue_evaluation(release_id)  # on the evaluation queue: this worker is free at once
        return
    # Not queued any more: a duplicate delivery of a running/finished job does nothing, except
    # that a REDELIVERED message for a job still marked running means its worker died mid-job.
    row = Release.objects.filter(pk=release_id).values("status", "started_at").first()
    status = row and row["status"]
    if status == Release.RUNNING and _worker_lost(self.request, row["started_at"]):
        if worker.fail_abandoned(release_id):
            log.warning("release %s: worker lost mid-job, marked failed", release_id)
        return
    log.info("release %s: nothing to do (status %s)", release_id, status)


def _worker_lost(request, started_at) -> bool:
    """Redis marks redelivered messages; a retry sent because the pool process died carries
    retries > 0 (any broker); a job running longer than the hard time limit cannot still be alive
    (the limit kills it)."""
    if (request.retries or 0) > 0 or (request.delivery_info or {}).get("redelivered"):
        return True
    limit = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    return started_at is not None and timezone.now() - started_at > limit
