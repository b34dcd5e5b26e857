"""Background job rows: one protocol for every job kind, whatever app stores it.

A job row has ``status`` (with a ``RUNNING`` value), ``progress`` (0..1), ``stage``, ``error``,
``started_at``, ``finished_at`` and ``heartbeat_at``; a cancellable one also ``cancel_requested_at``.
Releases, draws, private bounds and category discovery are Release rows (``releases.services.jobs``
dispatches on the stored mechanism); utility evaluations and risk reports have their own rows.

* :class:`Progress` -- the one progress callback: writes progress and stage at most every
  PROGRESS_WRITE_INTERVAL seconds while the row is still running, raises :class:`Cancelled` once a
  cancel was requested and :class:`OverTime` past its deadline (long loops stop between steps);
* :func:`finish` and :func:`reload` -- the final state in one UPDATE, and the row read again;
* :func:`heartbeat` -- while a job runs, a thread writes ``heartbeat_at`` every HEARTBEAT seconds;
* :func:`register` -- each app registers its job tables (in ``AppConfig.ready``) with how a
  stranded row is failed and settled; ``releases/sweeper.py`` sweeps every registered table, so a job
  whose process died is settled within STALE + SWEEP seconds.

A new job kind either is a Release row (one entry in ``releases.services.jobs.KINDS``: swept and
settled by the ledger's rules with the releases) or has its own table with the fields above and one
``register`` call; it then uses Progress, finish and heartbeat like the others.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db import connection
from django.db.models import Model, Q
from django.utils import timezone

log = logging.getLogger(__name__)

PROGRESS_WRITE_INTERVAL = 0.5  # seconds between progress writes (keeps the database quiet)


class Cancelled(Exception):
    """Raised inside a running job (by its progress callback) once a cancel was requested."""

    def __init__(self, what: str = "job", pk: int | None = None):
        super().__init__(f"cancelled by the steward ({what} {pk})" if pk is not None else "cancelled by the steward")


class OverTime(Exception):
    """Raised by a progress callback between two steps once the job's deadline has passed."""


def heartbeat_seconds() -> float:
    return float(getattr(settings, "DPPORTAL_HEARTBEAT_SECONDS", 10))


def stale_seconds() -> float:
    return float(getattr(settings, "DPPORTAL_STALE_SECONDS", 60))


def _cancellable(model: type[Model]) -> bool:
    return any(f.name == "cancel_requested_at" for f in model._meta.get_fields())


class Progress:
    """A running job's progress callback ``(fraction, stage)``.

    ``extra``: another callback told every step (a caller's own display); ``deadline_seconds``: from now,
    after which the next step raises OverTime (None: no deadline); ``interval``: seconds between writes
    (default PROGRESS_WRITE_INTERVAL)."""

    def __init__(
        self,
        model: type[Model],
        pk: int,
        *,
        extra: Callable[[float, str], None] | None = None,
        deadline_seconds: float | None = None,
        interval: float | None = None,
    ):
        self.model, self.pk, self.extra, self.interval = model, pk, extra, interval
        self.cancellable = _cancellable(model)
        self.deadline = None if deadline_seconds is None else time.monotonic() + deadline_seconds
        self.limit = deadline_seconds
        self.last = float("-inf")

    def __call__(self, fraction: float, stage: str, *, force: bool = False) -> None:
        if self.extra is not None:
            self.extra(fraction, stage)
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline:
            raise OverTime(f"stopped after its time limit of {self.limit:g} s, at: {stage}")
        interval = PROGRESS_WRITE_INTERVAL if self.interval is None else self.interval
        if not force and fraction < 1.0 and now - self.last < interval:
            return
        self.last = now
        rows = self.model.objects.filter(pk=self.pk, status=self.model.RUNNING)
        if self.cancellable:
            rows = rows.filter(cancel_requested_at__isnull=True)
        if not rows.update(progress=round(min(max(fraction, 0.0), 1.0), 4), stage=stage[:200]):
            self.raise_if_cancelled()

    def band(self, low: float, high: float) -> Callable[[float, str], None]:
        """The callback of one part of the job: its 0..1 mapped onto low..high."""
        return lambda fraction, stage: self(low + (high - low) * fraction, stage)

    def raise_if_cancelled(self) -> None:
        if self.cancellable and self.model.objects.filter(pk=self.pk, cancel_requested_at__isnull=False).exists():
            raise Cancelled(self.model._meta.verbose_name, self.pk)


def finish(model: type[Model], pk: int, status: str, **fields) -> int:
    """The final state in one UPDATE: ``status``, the stage named after it unless given, finished now."""
    fields.setdefault("stage", status)
    return model.objects.filter(pk=pk).update(status=status, finished_at=timezone.now(), **fields)


def reload(row: Model) -> Model:
    row.refresh_from_db()
    return row


# --------------------------------------------------------------------------------------------------
# Heartbeats and the tables the sweep settles
# --------------------------------------------------------------------------------------------------


def beat(model: type[Model], **lookup) -> None:
    model.objects.filter(status=model.RUNNING, **lookup).update(heartbeat_at=timezone.now())


@contextlib.contextmanager
def heartbeat(model: type[Model], **lookup):
    """While the body runs, write the running row's heartbeat every HEARTBEAT seconds (own connection)."""
    stop = threading.Event()
    name = f"heartbeat-{model._meta.model_name}-{'-'.join(map(str, lookup.values()))}"

    def loop() -> None:
        try:
            while not stop.wait(heartbeat_seconds()):
                try:
                    beat(model, **lookup)
                except Exception:  # noqa: BLE001 - a missed beat is retried; never kill the job
                    log.warning("%s: heartbeat not written", name, exc_info=True)
        finally:
            connection.close()  # this thread's connection

    beat(model, **lookup)
    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def stale(now=None) -> Q:
    """Running rows whose last sign of life (heartbeat, else start) is older than STALE seconds."""
    cutoff = (now or timezone.now()) - timedelta(seconds=stale_seconds())
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)


STRANDED = "the worker running this job stopped without a trace (killed, out of memory, or the machine restarted): "


def fail_stranded(model: type[Model], pk: int, now=None, *, advice: str = "") -> bool:
    """The default settlement of a stranded row: one conditional UPDATE (still running and still stale)."""
    error = f"{STRANDED}no heartbeat for {stale_seconds():g} s.{' ' + advice if advice else ''}"
    return (
        model.objects.filter(stale(now), pk=pk, status=model.RUNNING).update(
            status=model.FAILED, finished_at=timezone.now(), stage="failed", error=error
        )
        == 1
    )


@dataclass(frozen=True)
class JobTable:
    """A table of job rows the sweep settles: ``fail(pk, now)`` fails one stranded row (and settles
    whatever else it holds, e.g. a ledger reservation) and returns whether it changed it."""

    label: str
    model: type[Model]
    fail: Callable[[int, object], bool]

    def stranded(self, now=None) -> list[int]:
        return list(
            self.model.objects.filter(stale(now), status=self.model.RUNNING).order_by("pk").values_list("pk", flat=True)
        )


_TABLES: dict[str, JobTable] = {}


def register(table: JobTable) -> None:
    _TABLES[table.label] = table


def tables() -> list[JobTable]:
    return list(_TABLES.values())
