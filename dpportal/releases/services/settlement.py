"""Settlement: a job's final state and the ledger's verdict on its reservation, in ONE transaction, so
whoever sees a release done sees it spent. Used by the worker, cancelling, and the sweep of stranded
jobs (``releases/sweeper.py``)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from dpportal import jobs
from dpportal.ledger import services as ledger

from ..models import Release

ABANDONED_ERROR = "the worker running this job stopped unexpectedly (killed or lost)"


def finish(release_id: int, *, status: str, **fields) -> None:
    """Final state (``dpportal.jobs.finish``: ``status`` and the other fields given) and ledger settlement in
    ONE transaction."""
    with transaction.atomic():
        jobs.finish(Release, release_id, status, **fields)
        close_ledger(Release.objects.get(pk=release_id))


def close_ledger(release: Release, reason: str = "") -> None:
    """Finished: spent. Failed or cancelled: refunded only if it never touched data (the ledger
    decides). Draws of more rows are post-processing and were never charged."""
    if release.is_draw:
        return
    if release.status == Release.DONE:
        ledger.settle(release)
    elif release.status == Release.CANCELLED:
        ledger.close_failed(release, reason=reason or "cancelled by the steward")
    else:
        ledger.close_failed(release, reason="job failed")


def fail_running(release_id: int, error: str = ABANDONED_ERROR, *conditions, **only) -> bool:
    """One conditional UPDATE to failed (still running, and the Q ``conditions`` and ``only`` hold) and the
    ledger's settlement, atomically: spent if the job had touched data, refunded otherwise. False if the row was
    no longer running (another delivery or sweeper settled it first)."""
    with transaction.atomic():
        changed = Release.objects.filter(*conditions, pk=release_id, status=Release.RUNNING, **only).update(
            status=Release.FAILED, finished_at=timezone.now(), stage="failed", error=error
        )
        if changed:
            close_ledger(Release.objects.get(pk=release_id))
    return changed == 1
