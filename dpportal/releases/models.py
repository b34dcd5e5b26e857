"""A release: one mechanism run on a dataset (charged to its budget), or a free draw of more rows
from an earlier release's private summary (``parent`` set, no privacy cost)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models

from mechanisms.schema import Schema


class ReleaseQuerySet(models.QuerySet):
    def for_analysts(self) -> "ReleaseQuerySet":
        """What a granted analyst may see: finished, not withdrawn (nor drawn from a withdrawn release)."""
        return self.filter(
            status=Release.DONE, withdrawn_at__isnull=True, parent__withdrawn_at__isnull=True, output_file__gt=""
        )  # private bounds estimates (no table) are the steward's


class Release(models.Model):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"  # by the steward: refunded if it never touched data, else spent (ledger rules)
    STATUSES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed"), (CANCELLED, "cancelled")]
    QUEUE_SYNTHESIS = "synthesis"  # Celery queues (settings.CELERY_TASK_QUEUES)
    QUEUE_FAST = "fast"

    dataset = models.ForeignKey("datasets.Dataset", on_delete=models.PROTECT, related_name="releases")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="draws")

    mechanism = models.CharField(max_length=64)
    params = models.JSONField(default=dict)
    epsilon = models.CharField(max_length=40)  # exactly as requested (the ledger parses it exactly)
    delta = models.CharField(max_length=40, default="0")
    rows = models.PositiveIntegerField()
    schema = models.JSONField()  # snapshot of the confirmed public schema used
    schema_fingerprint = models.CharField(max_length=64)
    software_version = models.CharField(max_length=32, blank=True)

    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED, db_index=True)
    data_touched = models.BooleanField(default=False)  # set right BEFORE the mechanism reads data
    progress = models.FloatField(default=0.0)  # 0..1
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)  # steward-only (may depend on data)
    report = models.JSONField(null=True, blank=True)  # privacy report (public facts)

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # written by the running job (sweeper.py)
    # Set by the steward on a RUNNING job; the worker stops at its next progress point (services.cancel).
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    queue = models.CharField(max_length=32, default=QUEUE_SYNTHESIS)  # the Celery queue it was sent to
    estimate_seconds = models.FloatField(null=True, blank=True)  # mechanisms.guidance.runtime, from public inputs

    output_file = models.CharField(max_length=500, blank=True)  # synthetic CSV, relative to DATA_DIR
    summary_file = models.CharField(max_length=500, blank=True)  # private summary npz

    # The steward's labels: a name analysts see, a steward-only note; withdrawing removes the
    # release from analysts (copies already downloaded stay out there; the cost stays spent); hiding
    # removes it from the steward's own lists (the ledger still shows it).
    title = models.CharField(max_length=120, blank=True)
    note = models.TextField(blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    hidden = models.BooleanField(default=False)

    objects = ReleaseQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"release {self.pk} ({self.mechanism}, {self.status})"

    @property
    def label(self) -> str:
        """'release 12' or 'release 12 · census for the model team'."""
        return f"release {self.pk}" + (f" · {self.title}" if self.title else "")

    @property
    def is_withdrawn(self) -> bool:
        return self.withdrawn_at is not None or (self.parent is not None and self.parent.withdrawn_at is not None)

    @property
    def is_draw(self) -> bool:
        return self.parent_id is not None

    @property
    def is_finished(self) -> bool:
        return self.status in (self.DONE, self.FAILED, self.CANCELLED)

    @property
    def can_cancel(self) -> bool:
        return self.status in (self.QUEUED, self.RUNNING) and self.cancel_requested_at is None

    @property
    def cancel_note(self) -> str:
        """What cancelling does to the budget now (the release page shows it beside the button and
        updates it as the job moves on)."""
        if self.is_draw:
            return "A draw of more rows reserves no budget: cancelling it costs and refunds nothing."
        if self.status == self.QUEUED:
            return "Not started: cancelling refunds its reserved budget."
        if self.status != self.RUNNING:
            return ""
        if self.data_touched:
            return "Running, and it has read the private data: it stops within seconds, but its budget stays spent."
        return (
            "Running: it stops within seconds; its reserved budget is refunded only if it has not read the "
            "private data by then."
        )

    def public_schema(self) -> Schema:
        return Schema.from_stored(self.schema)

    def output_path(self) -> Path:
        """The synthetic table on this machine (fetched from the object store when missing: dpportal/storage.py)."""
        from dpportal import storage

        return storage.local_path(self.output_file)

    def summary_path(self) -> Path:
        from dpportal import storage

        return storage.local_path(self.summary_file)

    def storage_dir(self) -> Path:
        return Path(settings.RELEASE_DIR) / str(self.pk)

    def origin(self) -> "Release":
        """The charged release whose private summary this one samples from."""
        return self.parent if self.parent_id else self
