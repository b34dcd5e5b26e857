"""Celery task: (re-)evaluate a finished release. Thin: a primary key in, the service does the work."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(ignore_result=True)
def evaluate_release_task(release_id: int) -> None:
    services.evaluate_finished_release(release_id)


@shared_task(ignore_result=True)
def risk_report_task(release_id: int) -> None:
    from . import risk

    risk.risk_report_finished_release(release_id)
