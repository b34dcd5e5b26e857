"""The Celery app. Broker settings come from Django settings (``CELERY_*``)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init

from dpportal.private import restrict_umask

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
restrict_umask()  # release files, summaries, reports: private to the service user (dpportal/private.py)

app = Celery("dpportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _size_threads(**_kwargs) -> None:
    """Each pool process gets its share of the cores (mechanisms.resources) before any job runs, so
    XLA's flags are set before JAX is first imported, and its memory limit (DPPORTAL_JOB_MEMORY_LIMIT_MB)."""
    from django.conf import settings

    from mechanisms.resources import limit_memory, limit_threads, threads_per_job

    limit_threads(threads_per_job())
    limit_memory(settings.DPPORTAL_JOB_MEMORY_LIMIT_MB)
