"""The Celery task: thin. Takes a primary key, claims the row, hands off to services.execute."""

from __future__ import annotations

import logging

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from . import services
from .models import Release

log = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_release(self, release_id: int) -> None:
    if services.claim(release_id):
        services.execute(release_id)
        return
    # Not queued any more: a duplicate delivery of a running/finished job does nothing, except
    # that a REDELIVERED message for a job still marked running means its worker died mid-job.
    row = Release.objects.filter(pk=release_id).values("status", "started_at").first()
    status = row and row["status"]
    if status == Release.RUNNING and _worker_lost(self.request, row["started_at"]):
        if services.fail_abandoned(release_id):
            log.warning("release %s: worker lost mid-job, marked failed", release_id)
        return
    log.info("release %s: nothing to do (status %s)", release_id, status)


def _worker_lost(request, started_at) -> bool:
    """Redis marks redelivered messages; on any broker, a job running longer than the hard time
    limit cannot still be alive (the limit kills it)."""
    if (request.delivery_info or {}).get("redelivered"):
        return True
    limit = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    return started_at is not None and timezone.now() - started_at > limit
