"""Job kinds: what the worker runs for a claimed release row, chosen in ONE place from the row's stored
``mechanism``. A synthesis release (or a draw of more rows) is the default; a private bounds and
category estimate for the schema page is stored as ``mechanism=BOUNDS_MECHANISM`` and makes no table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from django.dispatch import Signal

from ..models import Release
from . import dp_bounds, worker


@dataclass(frozen=True)
class JobKind:
    run: Callable[[int], None]  # runs a claimed job to completion, every failure recorded on the row
    makes_table: bool  # a synthetic table: evaluated, risk-reported, shown on the dashboards


SYNTHESIS = JobKind(run=worker.execute_synthesis, makes_table=True)
KINDS = {dp_bounds.BOUNDS_MECHANISM: JobKind(run=dp_bounds.execute_bounds, makes_table=False)}
TABLELESS = tuple(name for name, kind in KINDS.items() if not kind.makes_table)  # stored mechanism values


def kind_of(mechanism: str) -> JobKind:
    return KINDS.get(mechanism, SYNTHESIS)


def execute(release_id: int) -> None:
    """Run a claimed release to completion. Every failure is recorded on the row, never raised."""
    mechanism = Release.objects.filter(pk=release_id).values_list("mechanism", flat=True).get()
    kind_of(mechanism).run(release_id)


# Sent with ``release=`` after a job that made a synthetic table is done: the dashboards app connects
# its utility evaluation and privacy risk report here (releases never import the dashboards).
table_made = Signal()


def queue_evaluation(release_id: int) -> None:
    """After a release is done: tell the receivers of :data:`table_made` (the dashboards queue its
    utility evaluation and then its privacy risk report on the evaluation queue; they never hold the
    worker that ran the release). A job that made no table has nothing to evaluate."""
    release = Release.objects.filter(pk=release_id, status=Release.DONE).exclude(mechanism__in=TABLELESS).first()
    if release is not None:
        table_made.send(sender=Release, release=release)
