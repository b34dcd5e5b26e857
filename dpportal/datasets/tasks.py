"""The schema check's Celery task (``checks.run`` does the work). Its row's heartbeat is written while it
runs; a task whose process dies is not sent again (``reject_on_worker_lost=False``: a check that killed its
worker would kill the next one too): the sweep fails the row once its heartbeat is stale."""

from __future__ import annotations

from celery import shared_task

from dpportal import jobs

from . import checks
from .models import SchemaCheck


@shared_task(ignore_result=True, acks_late=True, reject_on_worker_lost=False)
def check_schema_task(check_id: int) -> None:
    with jobs.heartbeat(SchemaCheck, pk=check_id):
        checks.run(check_id)
