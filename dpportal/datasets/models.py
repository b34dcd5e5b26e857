"""A dataset: the steward's private uploaded table plus its PUBLIC schema.

``schema_draft`` holds SUGGESTIONS computed from the data (steward-only, never used by a
mechanism); ``schema`` is the confirmed public schema, the only one mechanisms see.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models

from mechanisms.schema import Schema

from mechanisms.source import TableSource


class Dataset(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="datasets")
    name = models.CharField(max_length=200)
    analysts = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="granted_datasets")
    created_at = models.DateTimeField(auto_now_add=True)

    # the raw file (private; relative to settings.DATA_DIR)
    original_filename = models.CharField(max_length=255, blank=True)
    file_path = models.CharField(max_length=500, blank=True)
    file_size = models.BigIntegerField(default=0)
    encoding = models.CharField(max_length=32, default="utf-8")
    delimiter = models.CharField(max_length=4, default=",")
    n_rows = models.IntegerField(default=0)
    header = models.JSONField(default=list)
    missing_markers = models.JSONField(default=list)
    raw_deleted_at = models.DateTimeField(null=True, blank=True)

    # schema: suggestions (from data, or imported) and the confirmed public schema
    schema_draft = models.JSONField(null=True, blank=True)
    draft_source = models.CharField(max_length=16, default="data")  # "data" | "import"
    schema = models.JSONField(null=True, blank=True)
    schema_confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def n_columns(self) -> int:
        return len(self.header)

    @property
    def has_raw(self) -> bool:
        return bool(self.file_path) and self.raw_deleted_at is None

    def raw_path(self) -> Path:
        """The raw file on this machine, fetched from the object store when only it holds the file."""
        from dpportal import storage

        return storage.local_path(self.file_path)

    def read_kw(self) -> dict:
        return {"encoding": self.encoding, "sep": self.delimiter}

    def confirmed_schema(self) -> Schema | None:
        return Schema.from_stored(self.schema) if self.schema else None

    def working_schema(self) -> Schema | None:
        """What the schema page edits: the confirmed schema, else the draft."""
        if self.schema:
            return Schema.from_stored(self.schema)
        if self.schema_draft:
            return Schema.from_stored(self.schema_draft)
        return None

    def source(self, schema: Schema) -> TableSource:
        """The private table for a worker (n is public: counted at upload)."""
        return TableSource(schema, path=self.raw_path(), n=self.n_rows, read_kw=self.read_kw())


class SchemaCheck(models.Model):
    """A steward's schema checked against the stored file on a worker (``dpportal.datasets.checks``): every
    record encoded as the mechanisms read it and every public rule counted. The schema becomes the
    dataset's confirmed schema only when the check passes; ``error`` names why it did not."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STATUSES = [
        (PENDING, "pending"),
        (RUNNING, "running"),
        (DONE, "done"),
        (FAILED, "failed"),
        (CANCELLED, "cancelled"),
    ]

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="schema_checks")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    schema = models.JSONField()  # the schema checked (confirmed on success)
    status = models.CharField(max_length=16, choices=STATUSES, default=PENDING)
    progress = models.FloatField(default=0.0)  # 0..1
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # written while it runs (dpportal/jobs.py)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)  # a newer check replaces this one

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"schema check {self.pk} of dataset {self.dataset_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.DONE, self.FAILED, self.CANCELLED)
