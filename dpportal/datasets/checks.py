"""Confirming a schema against the stored file: inline for a small file, a worker job for a big one.

Confirming reads every record (``services.check_fits``): about 1.6 million cells a second on one core,
so 10M x 42 takes minutes, longer than a web request may last behind nginx (``proxy_read_timeout`` in
deploy/nginx.conf). A file of at most ``DPPORTAL_SCHEMA_CHECK_INLINE_CELLS`` cells (rows x columns) is
checked in the request, as before, and the answer is the confirmed schema or the problem; a bigger one
gets a :class:`~dpportal.datasets.models.SchemaCheck` row, checked by ``tasks.check_schema_task`` on the
evaluation queue (steward-only reads of the raw file, like utility evaluations), and the page or the API
follows its progress until it is done (the schema is then confirmed) or failed (``error`` names the
problem). The web page and the API use the same rule, so the same file gets the same kind of answer.

The schema's columns are compared with the file's header in the request whatever the size (no record
read), so a schema naming the wrong columns is refused at once. A new confirmation replaces a check still
pending or running (it is cancelled at its next chunk and never confirms). A worker that dies mid-check
leaves a running row without heartbeats: the sweep fails it (``dpportal.jobs``) and the steward confirms
again; the confirmed schema is untouched until a check passes.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dpportal import jobs
from mechanisms.schema import Schema
from mechanisms.source import cells_bytes

from . import services
from .models import Dataset, SchemaCheck

log = logging.getLogger(__name__)

INLINE_CELLS = 2_000_000  # default of DPPORTAL_SCHEMA_CHECK_INLINE_CELLS: about a second in the request
WORKER_CHUNK_CELLS = 8_000_000  # cells of text a worker holds per chunk (~80 bytes a cell: ~640 MB)
WORKER_CHUNK_ROWS = 200_000
STRANDED_ADVICE = "The schema was not confirmed: confirm it again."


def inline_cells() -> int:
    return int(getattr(settings, "DPPORTAL_SCHEMA_CHECK_INLINE_CELLS", INLINE_CELLS))


def checked_inline(dataset: Dataset) -> bool:
    """Whether confirming ``dataset``'s schema reads the file in the request (small file, or no file left)."""
    return not dataset.has_raw or dataset.n_rows * max(1, len(dataset.header)) <= inline_cells()


def active(dataset: Dataset):
    return SchemaCheck.objects.filter(dataset=dataset, status__in=(SchemaCheck.PENDING, SchemaCheck.RUNNING))


def latest(dataset: Dataset) -> SchemaCheck | None:
    return SchemaCheck.objects.filter(dataset=dataset).first()


def _supersede(dataset: Dataset, by: str) -> None:
    now = timezone.now()
    active(dataset).filter(cancel_requested_at__isnull=True).update(cancel_requested_at=now)
    SchemaCheck.objects.filter(dataset=dataset, status=SchemaCheck.PENDING).update(
        status=SchemaCheck.CANCELLED, stage="cancelled", finished_at=now, error=f"replaced by {by}"
    )


def request_confirmation(dataset: Dataset, schema: Schema, user=None) -> SchemaCheck | None:
    """Confirm ``schema`` for ``dataset``: checked here and confirmed (returns None) when the file is small,
    else queued as a worker check (returns its row). Raises ``services.SchemaRejected`` naming the problem
    when the schema is refused here (invalid, or columns that are not the file's)."""
    schema = schema.confirmed()
    services.check_names(dataset, schema)
    services.refuse_date_problems(schema)
    if checked_inline(dataset):
        _supersede(dataset, "a schema confirmed since")
        services.confirm_schema(dataset, schema)
        return None
    with transaction.atomic():
        _supersede(dataset, "a newer schema check")
        check = SchemaCheck.objects.create(
            dataset=dataset, requested_by=user, schema=schema.to_dict(), stage="queued: waiting for a worker"
        )
        transaction.on_commit(lambda: _queue(check.pk))
    return check


CHECK_SCHEMA = "dpportal.datasets.tasks.check_schema_task"  # sent by name: tasks.py imports this module


def _queue(check_id: int) -> None:
    """Send the check to the evaluation queue; with DPPORTAL_TASKS_EAGER it runs here and now (debugging)."""
    if current_app.conf.task_always_eager:
        current_app.loader.import_default_modules()
        current_app.tasks[CHECK_SCHEMA].apply(args=[check_id])
        return
    current_app.send_task(CHECK_SCHEMA, args=[check_id], queue="evaluation")


def run(check_id: int) -> None:
    """The worker's part: claim the pending row, read every record, confirm the schema when it fits."""
    now = timezone.now()
    claimed = SchemaCheck.objects.filter(
        pk=check_id, status=SchemaCheck.PENDING, cancel_requested_at__isnull=True
    ).update(status=SchemaCheck.RUNNING, started_at=now, heartbeat_at=now, stage="reading the file")
    if not claimed:
        log.info("schema check %s: nothing to do (not pending)", check_id)
        return
    check = SchemaCheck.objects.select_related("dataset").get(pk=check_id)
    dataset = check.dataset
    progress = jobs.Progress(SchemaCheck, check_id)
    try:
        schema = Schema.from_dict(check.schema)
        rows = max(1, min(WORKER_CHUNK_ROWS, WORKER_CHUNK_CELLS // max(1, len(dataset.header))))
        log.info(
            "schema check %s: %s rows x %s columns in chunks of %s rows plans a peak of %.0f MiB",
            check_id,
            dataset.n_rows,
            len(dataset.header),
            rows,
            cells_bytes(schema, min(rows, dataset.n_rows), rows) / 2**20,
        )
        services.check_fits(dataset, schema, progress=progress, chunk_rows=rows)
    except services.SchemaRejected as exc:
        _end(check_id, SchemaCheck.FAILED, str(exc))
        return
    except jobs.Cancelled:
        _end(check_id, SchemaCheck.CANCELLED, "replaced by a newer schema check")
        return
    except Exception as exc:  # noqa: BLE001 - the row says what stopped it; never left running
        log.exception("schema check %s failed", check_id)
        _end(check_id, SchemaCheck.FAILED, f"the check stopped: {type(exc).__name__}: {exc}"[:2000])
        return
    with transaction.atomic():
        done = SchemaCheck.objects.filter(
            pk=check_id, status=SchemaCheck.RUNNING, cancel_requested_at__isnull=True
        ).update(status=SchemaCheck.DONE, progress=1.0, stage="done: schema confirmed", finished_at=timezone.now())
        if done:
            Dataset.objects.filter(pk=dataset.pk).update(schema=check.schema, schema_confirmed_at=timezone.now())
        else:
            _end(check_id, SchemaCheck.CANCELLED, "replaced by a newer schema check")


def _end(check_id: int, status: str, error: str) -> None:
    """The final state of a check still running (one the sweep failed meanwhile keeps its own)."""
    SchemaCheck.objects.filter(pk=check_id, status=SchemaCheck.RUNNING).update(
        status=status, stage=status, error=error, finished_at=timezone.now()
    )


def fail_stranded(check_id: int, now=None) -> bool:
    """A running check whose worker vanished (no heartbeat): failed by the sweep (``dpportal.jobs``)."""
    return jobs.fail_stranded(SchemaCheck, check_id, now, advice=STRANDED_ADVICE)


def check_dict(check: SchemaCheck | None, *, dataset: Dataset | None = None) -> dict:
    """A check's state for the page's poller and the API (progress in percent, as for releases); with no
    check (``dataset`` given), status "none": every confirmation of it so far was checked in the request."""
    if check is None:
        return {
            "id": None,
            "dataset": dataset.pk,
            "status": "none",
            "finished": True,
            "schema_confirmed": bool(dataset.schema),
            "url": f"/api/datasets/{dataset.pk}/schema/check/",
        }
    data = {
        "id": check.pk,
        "dataset": check.dataset_id,
        "status": check.status,
        "progress": round(check.progress * 100, 1),
        "stage": check.stage,
        "finished": check.is_finished,
        "schema_confirmed": check.status == SchemaCheck.DONE,
        "created_at": check.created_at.isoformat(),
        "started_at": check.started_at and check.started_at.isoformat(),
        "finished_at": check.finished_at and check.finished_at.isoformat(),
        "url": f"/api/datasets/{check.dataset_id}/schema/check/",
    }
    if check.status in (SchemaCheck.FAILED, SchemaCheck.CANCELLED):
        data["error"] = check.error
    return data
