"""Stored utility evaluations (steward-only: computed from the RAW data, not privacy-protected).

One :class:`Evaluation` per release, filled by the worker after the release is done (see
:func:`dpportal.dashboards.services.evaluate_release`). Its results never enter a download, the
manifest or the API for analysts.
"""

from __future__ import annotations

from django.db import models


class Evaluation(models.Model):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    STATUSES = [(PENDING, "pending"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed"), (SKIPPED, "skipped")]

    release = models.OneToOneField("releases.Release", on_delete=models.CASCADE, related_name="evaluation")
    status = models.CharField(max_length=16, choices=STATUSES, default=PENDING)
    progress = models.FloatField(default=0.0)  # 0..1
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    target = models.CharField(max_length=200, blank=True)  # TSTR target column used ("" = none)
    results = models.JSONField(null=True, blank=True)  # mechanisms.evaluation.utility.evaluate output
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # written while it runs (dpportal/jobs.py)

    def __str__(self) -> str:
        return f"evaluation of release {self.release_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.DONE, self.FAILED, self.SKIPPED)


class DashboardConfig(models.Model):
    """Per-dataset evaluation settings chosen by the steward (the TSTR target column)."""

    dataset = models.OneToOneField("datasets.Dataset", on_delete=models.CASCADE, related_name="dashboard_config")
    target = models.CharField(max_length=200, blank=True)  # "" = guess from the schema

    def __str__(self) -> str:
        return f"dashboard settings of dataset {self.dataset_id}"


class RiskReport(models.Model):
    """The privacy risk report of a release (steward-only: the attacks read the RAW data).

    Filled on the evaluation queue after the release is done (:mod:`dpportal.dashboards.risk`);
    ``results`` is :func:`mechanisms.risk.risk_report`'s output, including a "not computable" report
    with its reason."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    NOT_COMPUTABLE = "not computable"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STATUSES = [
        (PENDING, "pending"),
        (RUNNING, "running"),
        (DONE, "done"),
        (NOT_COMPUTABLE, "not computable"),
        (FAILED, "failed"),
        (CANCELLED, "cancelled"),
    ]

    release = models.OneToOneField("releases.Release", on_delete=models.CASCADE, related_name="risk_report")
    status = models.CharField(max_length=20, choices=STATUSES, default=PENDING)
    progress = models.FloatField(default=0.0)  # 0..1
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)  # why it failed or is not computable
    results = models.JSONField(null=True, blank=True)
    guarantee_failed = models.BooleanField(default=False)  # an empirical lower bound above the claimed epsilon
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # written while it runs (dpportal/jobs.py)

    def __str__(self) -> str:
        return f"risk report of release {self.release_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.DONE, self.NOT_COMPUTABLE, self.FAILED, self.CANCELLED)
