"""Run-time and memory estimates, queues and waits: from public inputs and the releases' rows only,
never from private data."""

from __future__ import annotations

import dataclasses
import logging
import math

from django.conf import settings
from django.utils import timezone

from mechanisms import registry
from mechanisms.guidance import runtime
from mechanisms.accounting import check_epsilon
from mechanisms.rules import draw_plan

from ..models import Release
from .parsing import ReleaseRequest, ReleaseRequestError, field_text, form_params, parse_rows, validate

log = logging.getLogger(__name__)


def run_seconds(
    mechanism: str, n: int, schema, params: dict, *, epsilon=None, delta=None, rows: int | None = None
) -> float | None:
    """The run-time estimate, or None (then the synthesis queue) if it cannot be computed: an estimate
    is a guide and never refuses a request that validation accepted. With the requested ``rows``, the
    rejection rounds the schema's rules may need are counted (:func:`rejection_seconds`)."""
    try:
        seconds = runtime.estimate(mechanism, n=n, schema=schema, params=params, epsilon=epsilon, delta=delta).seconds
        return seconds + rejection_seconds(mechanism, schema, rows)
    except (ValueError, TypeError, ArithmeticError):
        log.warning("no run-time estimate for %s", mechanism, exc_info=True)
        return None


def rejection_seconds(mechanism: str, schema, rows) -> float:
    """Seconds of the candidate rows that generating ``rows`` rows under the schema's rules draws beyond
    the rows themselves (:func:`mechanisms.rules.draw_plan`, from the schema and the rules alone)."""
    if not rows or not schema.rules or mechanism not in registry.names():
        return 0.0
    return draw_plan(schema, int(rows), rules_in_model=registry.get(mechanism).rules_in_model).extra_seconds


def _with_rejection(est: runtime.Estimate, schema, rows) -> runtime.Estimate:
    extra = rejection_seconds(est.mechanism, schema, rows)
    if not extra:
        return est
    return dataclasses.replace(
        est,
        seconds=est.seconds + extra,
        low=None if est.low is None else est.low + extra,
        high=None if est.high is None else est.high + extra,
    )


def over_time_limit(estimate_seconds: float | None) -> bool:
    return estimate_seconds is not None and estimate_seconds > settings.CELERY_TASK_TIME_LIMIT


def check_time_limit(estimate_seconds: float | None) -> None:
    """Refuse a release whose estimate exceeds the task time limit: the worker would stop it after it read
    the data, and its budget would be spent for nothing."""
    if over_time_limit(estimate_seconds):
        limit = settings.CELERY_TASK_TIME_LIMIT
        raise ReleaseRequestError(
            f"this release is estimated to take {runtime.describe_seconds(estimate_seconds)}, more than the "
            f"time limit of {runtime.describe_seconds(limit)} per job (DPPORTAL_TASK_TIME_LIMIT={limit}): it would "
            "be stopped after reading the data and its budget spent. Lower the rows or the parameters that "
            "drive the time (see the estimate). Nothing was charged."
        )


def queue_for(estimate_seconds: float | None) -> str:
    """Releases predicted to finish within DPPORTAL_FAST_JOB_SECONDS go to the fast queue (beside draws),
    the rest to the synthesis queue: a short job never waits behind a long fit."""
    if estimate_seconds is not None and estimate_seconds <= settings.DPPORTAL_FAST_JOB_SECONDS:
        return Release.QUEUE_FAST
    return Release.QUEUE_SYNTHESIS


def estimate_request(dataset, req: ReleaseRequest) -> dict:
    """The run-time estimate of a release request, validated like a real one but nothing charged or
    queued (API: POST .../releases/estimate/)."""
    mech = validate(
        dataset,
        ReleaseRequest(
            req.mechanism,
            field_text(req.epsilon, "epsilon"),
            field_text(req.delta, "delta") or "0",
            req.params,
            parse_rows(req.rows),
        ),
    )
    est = runtime.estimate(
        req.mechanism,
        n=dataset.n_rows,
        schema=dataset.confirmed_schema(),
        params=mech.params,
        epsilon=mech.epsilon,
        delta=mech.delta,
    )
    return _with_wait(_with_rejection(est, mech.release_schema, parse_rows(req.rows)))


def _with_wait(est: runtime.Estimate) -> dict:
    """The estimate as shown (a range where the time follows the data's path), its queue and the wait
    there for the jobs ahead."""
    queue = queue_for(est.seconds)
    ahead, wait = queue_wait(queue)
    return {
        **est.to_dict(),
        "queue": queue,
        "jobs_ahead": ahead,
        "wait_seconds": round(wait, 1),
        "wait_text": _wait_text(ahead, wait),
        **_limit_dict(est.seconds),
    }


def _limit_dict(seconds: float | None) -> dict:
    return {"time_limit_seconds": settings.CELERY_TASK_TIME_LIMIT, "over_time_limit": over_time_limit(seconds)}


def form_estimate(name: str, schema, n_rows: int, values) -> dict:
    """The release form's run-time estimate from its raw values (defaults where empty); reads no data.
    Returns the estimate or {"error": message} while the values are not valid yet."""
    params = form_params(registry.get(name).params, values)
    budget = {}
    for key in ("epsilon", "delta"):  # optional here: the estimate of AIM grows with the budget
        try:
            value = float(values.get(key) or "nan")
            budget[key] = value if math.isfinite(value) and value >= 0 else None
        except (TypeError, ValueError):
            budget[key] = None
    try:
        est = runtime.estimate(name, n=int(n_rows), schema=schema, params=params, **budget)
        rows = str(values.get("rows") or "").strip()
        est = _with_rejection(est, schema, int(rows) if rows.isdigit() and len(rows) < 10 else None)
    except (ValueError, TypeError) as exc:
        return {"error": str(exc)}
    return _with_wait(est)


def queue_wait(queue: str, before: int | None = None) -> tuple[int, float]:
    """Jobs ahead on ``queue`` (running, and queued before release ``before``; all queued ones when
    None) and the seconds until a worker is free for the next one: the sum of their remaining estimates
    shared among the queue's worker processes (DPPORTAL_WORKER_CONCURRENCY)."""
    same = Release.objects.filter(queue=queue)
    queued = same.filter(status=Release.QUEUED)
    if before is not None:
        queued = queued.filter(pk__lt=before)
    now = timezone.now()
    total, count = 0.0, 0
    for r in list(same.filter(status=Release.RUNNING)) + list(queued):
        count += 1
        if r.status == Release.RUNNING and r.started_at is not None:
            elapsed = max((now - r.started_at).total_seconds(), 0.0)
            left = _remaining(elapsed, r.progress, r.estimate_seconds)
            total += left if left is not None else (_pace_remaining(elapsed, r.progress) or 0.0)
        else:
            total += r.estimate_seconds or 0.0
    return count, total / max(int(getattr(settings, "CELERY_WORKER_CONCURRENCY", 1) or 1), 1)


def _wait_text(ahead: int, wait: float) -> str:
    if not ahead:
        return "no job ahead: it starts at once"
    jobs = "1 job" if ahead == 1 else f"{ahead} jobs"
    return f"{jobs} ahead: it starts in {runtime.describe_seconds(wait)}"


def _estimate_text(release: Release) -> str:
    """The release's estimate as the form showed it: a range where the time follows the data's path."""
    est = release.estimate_seconds
    if est is None:
        return ""
    kept = sum(1 for c in (release.schema or {}).get("columns", ()) if c.get("kind") != "excluded")
    span = None if release.is_draw else runtime.time_range(release.mechanism, est, kept)
    return runtime.describe_range(span[0], span[1]) if span else runtime.describe_seconds(est)


def timing(release: Release) -> dict:
    """Queue position and wait while queued, elapsed and remaining while running, from the rows alone."""
    est = release.estimate_seconds
    out = {"queue": release.queue, "estimate_seconds": None if est is None else round(est, 1)}
    if release.status == Release.QUEUED:
        same = Release.objects.filter(queue=release.queue)
        out["queue_position"] = same.filter(status=Release.QUEUED, pk__lt=release.pk).count() + 1
        out["running_in_queue"] = same.filter(status=Release.RUNNING).count()
        out["jobs_ahead"], wait = queue_wait(release.queue, before=release.pk)
        out["wait_seconds"] = round(wait, 1)
    elif release.started_at is not None:
        end = release.finished_at or timezone.now()
        elapsed = max((end - release.started_at).total_seconds(), 0.0)
        out["elapsed_seconds"] = round(elapsed, 1)
        if release.status == Release.RUNNING:
            left = _remaining(elapsed, release.progress, est)
            pace = _pace_remaining(elapsed, release.progress)
            out["remaining_seconds"] = None if left is None else round(left, 1)
            out["over_estimate"] = est is not None and left is None
            out["pace_remaining_seconds"] = None if pace is None else round(pace, 1)
    out["timing_text"] = _timing_text(release, out)
    return out


def _remaining(elapsed: float, progress: float, estimate: float | None) -> float | None:
    """Seconds left while the job keeps within its estimate: the estimate counted down, so the time left
    never grows (a rate from the progress bar would: its steps are not equal in time, e.g. 30 s left
    became 90 s at 39 %). None past the estimate or without one (then :func:`_pace_remaining`)."""
    if estimate is not None and elapsed < estimate:
        return estimate - elapsed
    return None


def _pace_remaining(elapsed: float, progress: float) -> float | None:
    """Seconds left at the pace so far, once the progress means something (10 %); labelled as such."""
    return elapsed * (1 - progress) / progress if progress >= 0.1 else None


def _timing_text(release: Release, t: dict) -> str:
    est = _estimate_text(release)
    if release.status == Release.QUEUED:
        running = f", {t['running_in_queue']} running" if t["running_in_queue"] else ""
        wait = _wait_text(t["jobs_ahead"], t["wait_seconds"])
        return f"position {t['queue_position']} in the {release.queue} queue{running} · {wait}" + (
            f" · then runs {est} (estimate)" if est else ""
        )
    if release.status == Release.RUNNING and "elapsed_seconds" in t:
        elapsed = f"elapsed {_plain(t['elapsed_seconds'])}"
        if t["remaining_seconds"] is not None:
            return f"{elapsed} · about {_plain(t['remaining_seconds'])} left"
        pace = t["pace_remaining_seconds"]
        done = f"{release.progress:.0%} done"
        if t["over_estimate"]:
            more = f" · about {_plain(pace)} more at its pace so far" if pace is not None else ""
            return f"{elapsed} · longer than its estimate of {est} · {done}{more}"
        return f"{elapsed} · {done}" + (f" · about {_plain(pace)} left at its pace so far" if pace is not None else "")
    if "elapsed_seconds" in t:
        return f"took {t['elapsed_seconds']:.1f} s" + (f" (estimated {est})" if est else "")
    return f"estimated {est}" if est else ""


def _plain(seconds: float) -> str:
    return runtime.describe_seconds(seconds).replace("about ", "")


def memory_estimate(cls, schema, n_rows: int, values) -> dict:
    """Memory a bounded-memory mechanism (PrivHP) will use, from the form's raw values; reads no data.

    Returns {"bytes": int, "mib": float} or {"error": message} when the values are not valid yet.
    """
    params = form_params(cls.params, values)
    try:
        epsilon = check_epsilon(values.get("epsilon") or "1")
        size = int(cls.memory_estimate(schema, int(n_rows), params, epsilon=epsilon))
        parts = _memory_parts(cls, schema, int(n_rows), params, epsilon)
    except (ValueError, TypeError, ArithmeticError) as exc:  # a GET link may carry anything
        return {"error": str(exc)}
    return {"bytes": size, "mib": round(size / 2**20, 2), "parts": parts}


def _memory_parts(cls, schema, n_rows: int, params: dict, epsilon: float) -> list[dict]:
    """The estimate by part, largest first, so a fixed part (the chunk being read) is visible."""
    rows = [
        {"part": p["part"], "what": p["what"], "mib": round(p["bytes"] / 2**20, 2), "chunk_rows": p["chunk_rows"]}
        for p in cls.memory_parts(schema, n_rows, epsilon, params)
    ]
    return sorted(rows, key=lambda r: -r["mib"])
