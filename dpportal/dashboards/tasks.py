"""Celery tasks of the evaluation queue and the entry points that queue them. Thin: a primary key in,
the service does the work (``services`` for the utility evaluation, ``risk`` for the risk report).

While a task runs, its row's heartbeat is written (``dpportal.jobs.heartbeat``). A task whose process
dies is not sent again (``reject_on_worker_lost=False``: a report that killed its worker, e.g. out of
memory, would kill the next one too); the sweep fails its row once the heartbeat is stale."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import transaction

from dpportal import jobs
from dpportal.releases.models import Release

from . import risk, services
from .models import Evaluation, RiskReport


@shared_task(ignore_result=True, acks_late=True, reject_on_worker_lost=False)
def evaluate_release_task(release_id: int) -> None:
    with jobs.heartbeat(Evaluation, release_id=release_id):
        services.evaluate_finished_release(release_id)


@shared_task(ignore_result=True, acks_late=True, reject_on_worker_lost=False)
def risk_report_task(release_id: int) -> None:
    with jobs.heartbeat(RiskReport, release_id=release_id):
        risk.risk_report_finished_release(release_id)


def request_reevaluation(release: Release) -> Evaluation:
    """Mark a release's evaluation pending and queue it (after the transaction commits)."""
    ev, _ = Evaluation.objects.get_or_create(release=release)
    Evaluation.objects.filter(pk=ev.pk).update(status=Evaluation.PENDING, progress=0.0, stage="queued", error="")
    transaction.on_commit(lambda: evaluate_release_task.delay(release.pk))
    ev.refresh_from_db()
    return ev


def request_risk_report(release: Release) -> RiskReport | None:
    """Mark the release's risk report pending and queue it on the evaluation queue (after commit)."""
    if not getattr(settings, "DPPORTAL_RISK_REPORT", True) or not risk.wanted(release):
        return None
    rr, _ = RiskReport.objects.get_or_create(release=release)
    RiskReport.objects.filter(pk=rr.pk).update(
        status=RiskReport.PENDING, progress=0.0, stage="queued", error="", cancel_requested_at=None
    )
    transaction.on_commit(lambda: risk_report_task.delay(release.pk))
    rr.refresh_from_db()
    return rr


def queue_reports(sender=None, *, release: Release, **kwargs) -> None:
    """Receiver of ``releases.services.jobs.table_made``: a finished table's utility evaluation, then its
    privacy risk report, on the evaluation queue."""
    request_reevaluation(release)
    request_risk_report(release)
