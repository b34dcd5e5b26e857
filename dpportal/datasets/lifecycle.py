"""Raw-data lifecycle: the steward deletes the private file once it is no longer needed.

What remains: the dataset row (name, header, row count: public facts), the confirmed public
schema, every release, its synthetic CSV and private summary (more rows can still be drawn), and
the ledger. Deleting never frees budget: the ledger is not touched. What goes: the raw file and
the schema DRAFT (suggestions computed from the data: category values, observed ranges).
No new release can be planned afterwards (``releases.services.parsing.validate`` checks ``has_raw``).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from dpportal import storage

from .models import Dataset


class RawDeleteRefused(ValueError):
    """The raw file cannot be deleted now; the message says why."""


def delete_raw(dataset: Dataset) -> Dataset:
    """Delete ``dataset``'s raw file. Refused while a job that may still read it is queued or running."""
    from dpportal.releases.models import Release

    with transaction.atomic():
        # write FIRST: on SQLite a transaction that reads before its first write cannot wait for the
        # write lock ("database is locked" at once, a 500); on PostgreSQL this takes the row lock that
        # plan_release takes too, so a release is never planned against a file being deleted
        Dataset.objects.filter(pk=dataset.pk).update(raw_deleted_at=F("raw_deleted_at"))
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        if locked.raw_deleted_at is not None:
            raise RawDeleteRefused("the raw data of this dataset was already deleted")
        busy = list(
            locked.releases.filter(status__in=[Release.QUEUED, Release.RUNNING], parent__isnull=True).values_list(
                "pk", flat=True
            )
        )
        if busy:
            raise RawDeleteRefused(
                f"release(s) {busy} are still queued or running and read the raw data: "
                "wait until they finish, then delete"
            )
        checking = list(locked.schema_checks.filter(status__in=["pending", "running"]).values_list("pk", flat=True))
        if checking:
            raise RawDeleteRefused(
                f"a schema check ({checking[0]}) is still reading the raw data: wait until it finishes, then delete"
            )
        key = locked.file_path
        locked.raw_deleted_at = timezone.now()
        locked.file_path = ""
        locked.schema_draft = None
        locked.save(update_fields=["raw_deleted_at", "file_path", "schema_draft"])
    # the row says "deleted" before the file goes: a crash in between leaves an orphan file, never a
    # dataset that claims raw data it no longer has
    storage.delete(key)  # this machine's copy and the object store's
    dataset.refresh_from_db()
    return dataset
