"""Planning releases: validate, then in ONE transaction create the Release row and have the ledger
reserve its cost; the job is queued only when that transaction commits. Any refusal leaves nothing
charged and nothing queued. Also: more rows from a finished release, and cancelling."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

import dpportal
from dpportal.ledger import services as ledger
from mechanisms.guidance import runtime

from ..models import Release
from .estimates import check_time_limit, queue_for, run_seconds
from .parsing import ReleaseRequest, ReleaseRequestError, check_request, parse_rows
from .queueing import enqueue
from .settlement import close_ledger


def plan_release(dataset, user, req: ReleaseRequest, *, confirmed: str = "", checked=None) -> Release:
    """Validate, reserve the budget and queue. Raises ReleaseRequestError (nothing charged/queued).
    ``confirmed``: the warnings the steward confirmed, kept on the reservation's ledger entry.
    ``checked``: what :func:`check_request` returned for this request, when the caller ran it already
    (the mechanism is then built once)."""
    req, mech = checked if checked is not None else check_request(dataset, req)
    epsilon, delta = req.epsilon, req.delta
    schema = mech.release_schema  # the confirmed schema validate() built the mechanism on (parsed once)
    seconds = run_seconds(
        req.mechanism, dataset.n_rows, schema, mech.params, epsilon=mech.epsilon, delta=mech.delta, rows=req.rows
    )
    check_time_limit(seconds)
    try:
        with transaction.atomic():
            lock_raw_file(dataset)
            release = Release.objects.create(
                dataset=dataset,
                created_by=user,
                mechanism=req.mechanism,
                params=_jsonable(mech.params),
                epsilon=epsilon,
                delta=delta,
                rows=req.rows,
                schema=schema.to_dict(),
                schema_fingerprint=schema.fingerprint(),
                software_version=dpportal.__version__,
                stage="queued",
                estimate_seconds=seconds,
                queue=queue_for(seconds),
            )
            ledger.reserve(dataset=dataset, release=release, user=user, epsilon=epsilon, delta=delta, note=confirmed)
            transaction.on_commit(lambda: enqueue(release.pk))
    except ledger.BudgetExceeded as exc:
        raise ReleaseRequestError(str(exc)) from None
    except ledger.LedgerError as exc:
        raise ReleaseRequestError(str(exc)) from None
    return release


def lock_raw_file(dataset) -> None:
    """Inside the reserving transaction, before anything else: lock the dataset row (the lock
    ``delete_raw`` takes too) and check that the raw file is still there. A check before the
    transaction left a window where a job was charged for a file deleted meanwhile."""
    from dpportal.datasets.models import Dataset

    if not Dataset.objects.filter(pk=dataset.pk, raw_deleted_at__isnull=True).update(raw_deleted_at=None):
        raise ReleaseRequestError("the raw data of this dataset was deleted: no new releases can be made")


def draw_more(release: Release, user, rows) -> Release:
    """More rows from a finished release's private summary: post-processing, no privacy cost."""
    origin = release.origin()
    if origin.status != Release.DONE or not origin.summary_file:
        raise ReleaseRequestError("more rows can be drawn only from a finished release")
    rows = parse_rows(rows)
    with transaction.atomic():
        draw = Release.objects.create(
            dataset=origin.dataset,
            created_by=user,
            parent=origin,
            mechanism=origin.mechanism,
            params=origin.params,
            epsilon=origin.epsilon,
            delta=origin.delta,
            rows=rows,
            schema=origin.schema,
            schema_fingerprint=origin.schema_fingerprint,
            software_version=dpportal.__version__,
            stage="queued",
            queue=Release.QUEUE_FAST,
            estimate_seconds=runtime.estimate_draw(rows, len(origin.public_schema().kept)).seconds,
        )
        ledger.record_draw(draw, user=user)
        transaction.on_commit(lambda: enqueue(draw.pk))
    return draw


def cancel(release: Release) -> Release:
    """The steward cancels a queued or running release; returns the release as it now stands.

    Queued: cancelled at once and refunded (the job never touched data; the worker's claim, a
    conditional UPDATE on ``queued``, can no longer succeed). Running: the request is recorded and the
    worker stops at its next progress point (``worker.Progress``), then the ledger closes the job as
    for a failure: spent if data was touched, refunded otherwise. Anything else: refused."""
    now = timezone.now()
    with transaction.atomic():
        if Release.objects.filter(pk=release.pk, status=Release.QUEUED).update(
            status=Release.CANCELLED,
            cancel_requested_at=now,
            finished_at=now,
            stage="cancelled before it started",
            error="cancelled by the steward before it started",
        ):
            close_ledger(Release.objects.get(pk=release.pk), reason="cancelled by the steward before it started")
            return Release.objects.get(pk=release.pk)
    if Release.objects.filter(pk=release.pk, status=Release.RUNNING, cancel_requested_at__isnull=True).update(
        cancel_requested_at=now, stage="cancel requested: stopping at the next progress point"
    ):
        return Release.objects.get(pk=release.pk)
    current = Release.objects.get(pk=release.pk)
    if current.status == Release.RUNNING:
        return current  # already requested: cancelling twice is harmless
    raise ReleaseRequestError(
        f"release {release.pk} is {current.status}: only a queued or running release can be cancelled"
    )


def _jsonable(params: dict) -> dict:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in params.items()}
