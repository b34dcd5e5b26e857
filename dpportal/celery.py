"""The Celery app. Broker settings come from Django settings (``CELERY_*``)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")

app = Celery("dpportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
