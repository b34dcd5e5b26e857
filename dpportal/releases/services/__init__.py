"""Releases: planning, running and describing them. Views and the API call these; the Celery task is a
thin wrapper around :func:`execute`. One module per concern:

* ``parsing`` -- a request read and checked without private data (:class:`ReleaseRequest`);
* ``planning`` -- validate, then in ONE transaction create the Release row and have the ledger reserve
  its cost; the job is queued only when that transaction commits. Any refusal leaves nothing charged
  and nothing queued. More rows from a finished release; cancelling;
* ``queueing`` -- sending a planned job to its queue by the task's name (planners never import tasks);
* ``jobs`` -- the one table of job kinds the worker dispatches on (:func:`execute`), and the signal a
  finished table sends (the dashboards queue its evaluation and risk report on it);
* ``worker`` -- a synthesis job: claim, fit, sample, write;
* ``settlement`` -- a job's final state and the ledger's verdict in one transaction;
* ``dp_bounds`` -- private bounds and category discovery for the schema page, charged like a release;
* ``estimates`` -- run-time and memory estimates, queues and waits;
* ``labels`` -- the steward's name, note, withdrawn and hidden flags (no privacy effect).

The names below are the API the views, the API and the tasks use. A test that patches a function
patches it in its own module (``services.worker.build``), where the callers look it up.
"""

from .dp_bounds import (
    BOUNDS_MECHANISM,
    DEFAULT_BOUNDS_EPSILON,
    DEFAULT_DISCOVERY_DELTA,
    latest_bounds,
    latest_categories,
    plan_bounds,
)
from .estimates import (
    check_time_limit,
    estimate_request,
    form_estimate,
    memory_estimate,
    over_time_limit,
    queue_for,
    queue_wait,
    timing,
)
from .jobs import execute, queue_evaluation
from .labels import NOTE_MAX, TITLE_MAX, label_release, set_hidden, set_withdrawn
from .parsing import ReleaseRequest, ReleaseRequestError, check_request, parse_rows, validate
from .planning import cancel, draw_more, plan_release
from .worker import Cancelled, claim, fail_abandoned, failure_text

__all__ = [
    "BOUNDS_MECHANISM",
    "DEFAULT_BOUNDS_EPSILON",
    "DEFAULT_DISCOVERY_DELTA",
    "latest_bounds",
    "latest_categories",
    "plan_bounds",
    "check_time_limit",
    "estimate_request",
    "form_estimate",
    "memory_estimate",
    "over_time_limit",
    "queue_for",
    "queue_wait",
    "timing",
    "execute",
    "queue_evaluation",
    "NOTE_MAX",
    "TITLE_MAX",
    "label_release",
    "set_hidden",
    "set_withdrawn",
    "ReleaseRequest",
    "ReleaseRequestError",
    "check_request",
    "parse_rows",
    "validate",
    "cancel",
    "draw_more",
    "plan_release",
    "Cancelled",
    "claim",
    "fail_abandoned",
    "failure_text",
]
