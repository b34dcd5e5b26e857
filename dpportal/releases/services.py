"""Planning and running releases. Views and the API call these; the Celery task is a thin wrapper
around :func:`execute`.

Planning validates everything that needs no private data (mechanism, schema kinds, epsilon, delta,
parameters, rows), then in ONE transaction creates the Release row and has the ledger reserve its
cost; the job is queued only when that transaction commits. Any refusal leaves nothing charged and
nothing queued.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

import dpportal
from dpportal.ledger import services as ledger
from mechanisms import registry, resources
from mechanisms.guidance import runtime
from mechanisms.accounting import canonical, check_epsilon, exact
from mechanisms.base import load_summary, save_summary
from mechanisms.io import write_synthetic_csv
from mechanisms.noise import Noise
from mechanisms.rules import sample_conforming
from mechanisms.runner import Release as RunnerRelease
from mechanisms.runner import build, run

from .models import Release

log = logging.getLogger(__name__)

PROGRESS_WRITE_INTERVAL = 0.5  # seconds between progress writes to the database (keeps the DB quiet)
# Overall progress bands: loading, fitting (mechanism's own progress), sampling, writing files
BAND_FIT = (0.05, 0.80)
BAND_SAMPLE = 0.85
BAND_WRITE = 0.95


class ReleaseRequestError(ValueError):
    """A refused release request; the message names the problem. Nothing was charged or queued."""


class Cancelled(Exception):
    """Raised inside a running job (by its progress callback) once the steward asked to cancel it."""

    def __init__(self, release_id: int):
        super().__init__(f"cancelled by the steward (release {release_id})")


@dataclass(frozen=True)
class ReleaseRequest:
    mechanism: str
    epsilon: str
    delta: str
    params: dict
    rows: int


def _text(value, name: str) -> str:
    if value is None:
        return "0" if name == "delta" else ""
    if isinstance(value, bool):
        raise ReleaseRequestError(f"{name} must be a number, got {name}={value!r}")
    return str(value).strip()  # not truncated: exact() refuses more than MAX_AMOUNT_CHARS characters


def _canonical(value: str, name: str) -> str:
    """The amount's one stored form ('+5' -> '5'); a refusal names the field."""
    try:
        return canonical(value)
    except ValueError as exc:  # name the field: "epsilon: expected a finite number, got 'nan'"
        raise ReleaseRequestError(f"{name}: {exc}") from None


def parse_rows(value) -> int:
    limit = settings.DPPORTAL_MAX_SYNTHETIC_ROWS
    try:
        if isinstance(value, bool):
            raise ValueError
        rows = int(str(value).strip()) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        raise ReleaseRequestError(f"rows must be a whole number, got rows={value!r}") from None
    if not 1 <= rows <= limit:
        raise ReleaseRequestError(f"rows must be between 1 and {limit:,}, got rows={rows}")
    return rows


def validate(dataset, req: ReleaseRequest):
    """Everything checkable without private data. Returns (mechanism object, cleaned params)."""
    schema = dataset.confirmed_schema()
    if schema is None:
        raise ReleaseRequestError("confirm the dataset's schema before planning a release")
    if not dataset.has_raw:
        raise ReleaseRequestError("the raw data of this dataset was deleted: no new releases can be made")
    if not isinstance(req.mechanism, str) or req.mechanism not in registry.names():
        raise ReleaseRequestError(f"unknown mechanism {req.mechanism!r}; available: {registry.names()}")
    if req.mechanism not in registry.supporting(schema):
        cls = registry.get(req.mechanism)
        bad = sorted(schema.kinds - cls.supported_kinds)
        raise ReleaseRequestError(f"mechanism {req.mechanism!r} does not support the schema's column kind(s) "
                                  f"{bad}; choose one of {registry.supporting(schema)}")
    if not isinstance(req.params, dict):
        raise ReleaseRequestError(f"params must be an object of name: value, got {type(req.params).__name__}")
    try:
        mech = build(req.mechanism, schema, epsilon=req.epsilon, delta=req.delta or "0", params=req.params,
                     n=dataset.n_rows, memory_limit=settings.DPPORTAL_MAX_JOB_MEMORY_MB * 2**20)
    except ValueError as exc:
        raise ReleaseRequestError(str(exc).splitlines()[0]) from None
    return mech


def check_request(dataset, req: ReleaseRequest):
    """Everything plan_release checks before reserving: returns (cleaned request, mechanism object) or
    raises ReleaseRequestError naming the problem. Callers that ask for confirmations run it first, so
    a bad value is named before any confirmation is asked for."""
    epsilon, delta = _text(req.epsilon, "epsilon"), _text(req.delta, "delta") or "0"
    epsilon, delta = _canonical(epsilon, "epsilon"), _canonical(delta, "delta")
    req = ReleaseRequest(req.mechanism, epsilon, delta, req.params, parse_rows(req.rows))
    return req, validate(dataset, req)


def plan_release(dataset, user, req: ReleaseRequest, *, confirmed: str = "") -> Release:
    """Validate, reserve the budget and queue. Raises ReleaseRequestError (nothing charged/queued).
    ``confirmed``: the warnings the steward confirmed, kept on the reservation's ledger entry."""
    req, mech = check_request(dataset, req)
    epsilon, delta = req.epsilon, req.delta
    schema = mech.schema  # the confirmed schema validate() built the mechanism on (parsed once)
    seconds = _estimate_seconds(req.mechanism, dataset.n_rows, schema, mech.params,
                                epsilon=mech.epsilon, delta=mech.delta)
    check_time_limit(seconds)
    try:
        with transaction.atomic():
            _lock_raw_file(dataset)
            release = Release.objects.create(
                dataset=dataset, created_by=user, mechanism=req.mechanism, params=_jsonable(mech.params),
                epsilon=epsilon, delta=delta, rows=req.rows, schema=schema.to_dict(),
                schema_fingerprint=schema.fingerprint(), software_version=dpportal.__version__,
                stage="queued", estimate_seconds=seconds, queue=queue_for(seconds))
            ledger.reserve(dataset=dataset, release=release, user=user, epsilon=epsilon, delta=delta,
                           note=confirmed)
            transaction.on_commit(lambda: _enqueue(release.pk))
    except ledger.BudgetExceeded as exc:
        raise ReleaseRequestError(str(exc)) from None
    except ledger.LedgerError as exc:
        raise ReleaseRequestError(str(exc)) from None
    return release


def _lock_raw_file(dataset) -> None:
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
            dataset=origin.dataset, created_by=user, parent=origin, mechanism=origin.mechanism,
            params=origin.params, epsilon=origin.epsilon, delta=origin.delta, rows=rows, schema=origin.schema,
            schema_fingerprint=origin.schema_fingerprint, software_version=dpportal.__version__,
            stage="queued", queue=Release.QUEUE_FAST,
            estimate_seconds=runtime.estimate_draw(rows, len(origin.public_schema().kept)).seconds)
        ledger.record_draw(draw, user=user)
        transaction.on_commit(lambda: _enqueue(draw.pk))
    return draw


def cancel(release: Release) -> Release:
    """The steward cancels a queued or running release; returns the release as it now stands.

    Queued: cancelled at once and refunded (the job never touched data; the worker's claim, a
    conditional UPDATE on ``queued``, can no longer succeed). Running: the request is recorded and the
    worker stops at its next progress point (:class:`_Progress`), then the ledger closes the job as
    for a failure: spent if data was touched, refunded otherwise. Anything else: refused."""
    now = timezone.now()
    with transaction.atomic():
        if Release.objects.filter(pk=release.pk, status=Release.QUEUED).update(
                status=Release.CANCELLED, cancel_requested_at=now, finished_at=now,
                stage="cancelled before it started", error="cancelled by the steward before it started"):
            _close_ledger(Release.objects.get(pk=release.pk), reason="cancelled by the steward before it started")
            return Release.objects.get(pk=release.pk)
    if Release.objects.filter(pk=release.pk, status=Release.RUNNING, cancel_requested_at__isnull=True).update(
            cancel_requested_at=now, stage="cancel requested: stopping at the next progress point"):
        return Release.objects.get(pk=release.pk)
    current = Release.objects.get(pk=release.pk)
    if current.status == Release.RUNNING:
        return current  # already requested: cancelling twice is harmless
    raise ReleaseRequestError(f"release {release.pk} is {current.status}: only a queued or running release "
                              "can be cancelled")


def _jsonable(params: dict) -> dict:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in params.items()}


def _estimate_seconds(mechanism: str, n: int, schema, params: dict, *, epsilon=None, delta=None) -> float | None:
    """The run-time estimate, or None (then the synthesis queue) if it cannot be computed: an estimate
    is a guide and never refuses a request that validation accepted."""
    try:
        return runtime.estimate(mechanism, n=n, schema=schema, params=params, epsilon=epsilon, delta=delta).seconds
    except (ValueError, TypeError, ArithmeticError):
        log.warning("no run-time estimate for %s", mechanism, exc_info=True)
        return None


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
            "drive the time (see the estimate). Nothing was charged.")


def queue_for(estimate_seconds: float | None) -> str:
    """Releases predicted to finish within DPPORTAL_FAST_JOB_SECONDS go to the fast queue (beside draws),
    the rest to the synthesis queue: a short job never waits behind a long fit."""
    if estimate_seconds is not None and estimate_seconds <= settings.DPPORTAL_FAST_JOB_SECONDS:
        return Release.QUEUE_FAST
    return Release.QUEUE_SYNTHESIS


def _enqueue(release_id: int) -> None:
    """Send the job to the queue recorded on its row (queue_for / draws: fast)."""
    from .tasks import run_release

    queue = Release.objects.filter(pk=release_id).values_list("queue", flat=True).first() or Release.QUEUE_SYNTHESIS
    run_release.apply_async(args=[release_id], queue=queue)


def queue_evaluation(release_id: int) -> None:
    """After a release is done: its utility evaluation and then its privacy risk report go to the
    evaluation queue (steward-only, informative; they never hold the worker that ran the release)."""
    from dpportal.dashboards.risk import request_risk_report
    from dpportal.dashboards.services import request_reevaluation

    release = Release.objects.filter(pk=release_id, status=Release.DONE).exclude(mechanism=BOUNDS_MECHANISM).first()
    if release is not None:  # a bounds estimate has no table to evaluate
        request_reevaluation(release)
        request_risk_report(release)


# --------------------------------------------------------------------------------------------------
# The worker side
# --------------------------------------------------------------------------------------------------

def claim(release_id: int) -> bool:
    """Atomically move a queued release to running; False if another delivery got it first."""
    return Release.objects.filter(pk=release_id, status=Release.QUEUED).update(
        status=Release.RUNNING, started_at=timezone.now(), stage="starting", progress=0.01) == 1


def fail_abandoned(release_id: int) -> bool:
    """A redelivered message for a release still marked running: its worker died mid-job (acks_late
    + reject_on_worker_lost redeliver it). Mark it failed, never run it twice; the budget is spent
    if the job had touched data, refunded otherwise."""
    changed = Release.objects.filter(pk=release_id, status=Release.RUNNING).update(
        status=Release.FAILED, finished_at=timezone.now(), stage="failed",
        error="the worker running this job stopped unexpectedly (killed or lost)")
    if changed:
        _close_ledger(Release.objects.get(pk=release_id))
    return changed == 1


def _raise_if_cancelled(release_id: int) -> None:
    if Release.objects.filter(pk=release_id, cancel_requested_at__isnull=False).exists():
        raise Cancelled(release_id)


class _Progress:
    def __init__(self, release_id: int):
        self.release_id = release_id
        self.last = 0.0

    def __call__(self, fraction: float, stage: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_WRITE_INTERVAL:
            return
        self.last = now
        if not Release.objects.filter(pk=self.release_id, status=Release.RUNNING,
                                      cancel_requested_at__isnull=True).update(
                progress=round(min(max(fraction, 0.0), 1.0), 4), stage=stage[:200]):
            _raise_if_cancelled(self.release_id)

    def fit(self, fraction: float, stage: str) -> None:
        lo, hi = BAND_FIT
        self(lo + (hi - lo) * fraction, stage)


def execute(release_id: int) -> None:
    """Run a claimed release to completion. Every failure is recorded on the row, never raised."""
    if Release.objects.filter(pk=release_id, mechanism=BOUNDS_MECHANISM).exists():
        return execute_bounds(release_id)  # a private bounds estimate for the schema page
    release = Release.objects.select_related("dataset", "parent").get(pk=release_id)
    progress = _Progress(release_id)
    workdir = release.storage_dir()
    tmpdir = workdir.with_name(f"{workdir.name}.tmp")
    try:
        shutil.rmtree(tmpdir, ignore_errors=True)
        tmpdir.mkdir(parents=True)
        if release.is_draw:
            result = _draw(release, progress)
        else:
            result = _fit_and_sample(release, progress)
        progress(BAND_WRITE, "writing the synthetic table", force=True)
        write_synthetic_csv(result.synthetic, tmpdir / "synthetic.csv", result.mechanism.schema)
        if not release.is_draw:
            with open(tmpdir / "summary.npz", "wb") as fh:
                save_summary(result.mechanism.summary(), fh)
        shutil.rmtree(workdir, ignore_errors=True)
        os.replace(tmpdir, workdir)  # outputs appear all at once, never half-written
        rel = workdir.relative_to(settings.DATA_DIR)
        report = release.parent.report if release.is_draw else _report(result)
        _finish(release_id, status=Release.DONE, progress=1.0, stage="done", report=report,
                output_file=str(rel / "synthetic.csv"),
                summary_file=release.parent.summary_file if release.is_draw else str(rel / "summary.npz"))
    except BaseException as exc:  # noqa: BLE001 - record every failure, including time limits
        shutil.rmtree(tmpdir, ignore_errors=True)
        if isinstance(exc, Cancelled):
            log.info("release %s cancelled by the steward", release_id)
        else:
            log.exception("release %s failed", release_id)
        message = failure_text(exc)
        if isinstance(exc, Cancelled):
            _finish(release_id, status=Release.CANCELLED, stage="cancelled", error=message)
        else:
            _finish(release_id, status=Release.FAILED, stage="failed", error=message)
        if not isinstance(exc, Exception):
            raise


def failure_text(exc: BaseException) -> str:
    """One line for the steward. A shutdown is named as such: billiard ends a pool process on a
    cold shutdown (second Ctrl-C) with SystemExit(-(256 - signal)), whose text was a bare '-241'."""
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):
        code = getattr(exc, "code", None)
        how = ""
        if isinstance(code, int) and -255 <= code < 0:
            import signal

            try:
                how = f" by {signal.Signals(256 + code).name}"
            except ValueError:
                how = f" (exit code {code})"
        return (f"the worker was shut down{how} while this job ran ({type(exc).__name__}); "
                "submit the release again")
    if isinstance(exc, MemoryError):
        return (f"the job needed more memory than the limit of {settings.DPPORTAL_JOB_MEMORY_LIMIT_MB:,} MiB per "
                "job (DPPORTAL_JOB_MEMORY_LIMIT_MB) and was stopped: ask for fewer rows or smaller parameters, "
                "or exclude or coarsen columns")
    return (str(exc).splitlines() or [type(exc).__name__])[0][:500] or type(exc).__name__


def _finish(release_id: int, **fields) -> None:
    """Final state and ledger settlement in ONE transaction: whoever sees 'done' sees it spent."""
    with transaction.atomic():
        Release.objects.filter(pk=release_id).update(finished_at=timezone.now(), **fields)
        _close_ledger(Release.objects.get(pk=release_id))


def _close_ledger(release: Release, reason: str = "") -> None:
    """Finished: spent. Failed or cancelled: refunded only if it never touched data (the ledger
    decides). Draws of more rows are post-processing and were never charged."""
    if release.is_draw:
        return
    if release.status == Release.DONE:
        ledger.settle(release)
    elif release.status == Release.CANCELLED:
        ledger.close_failed(release, reason=reason or "cancelled by the steward")
    else:
        ledger.close_failed(release, reason="job failed")


def _mark_data_touched(release_id: int) -> None:
    """Conditional on the job still being ours (ledger engineer's fix): if another delivery already
    declared it abandoned (failed, possibly refunded), this worker must not read the data at all.
    The two UPDATEs of the row are serialized, so either the flag is set first (the ledger then
    charges, never refunds) or the job is failed first (and nothing is read)."""
    _raise_if_cancelled(release_id)  # a cancel requested before the data is read: nothing read, refunded
    if not Release.objects.filter(pk=release_id, status=Release.RUNNING,
                                  cancel_requested_at__isnull=True).update(data_touched=True, stage="reading data"):
        _raise_if_cancelled(release_id)
        raise RuntimeError(f"release {release_id} is no longer running here; its data was not read")


def _fit_and_sample(release: Release, progress: _Progress) -> RunnerRelease:
    schema = release.public_schema()
    progress(0.02, "preparing", force=True)
    resources.limit_threads(resources.threads_per_job())  # concurrency x threads <= cores
    mech = build(release.mechanism, schema, epsilon=release.epsilon, delta=release.delta,
                 params=release.params, noise=Noise.secure_backend(), progress=progress.fit)
    source = release.dataset.source(schema)
    result = run(mech, source, release.rows, on_data_access=lambda: _mark_data_touched(release.pk))
    progress(BAND_SAMPLE, "synthetic rows drawn", force=True)
    return result


def _draw(release: Release, progress: _Progress) -> RunnerRelease:
    origin = release.parent
    progress(0.1, "loading the private summary", force=True)
    cls = registry.get(origin.mechanism)
    with open(origin.summary_path(), "rb") as fh:
        summary = load_summary(fh)
    mech = cls.from_summary(origin.public_schema(), summary, epsilon=float(exact(origin.epsilon)),
                            delta=float(exact(origin.delta)), params=origin.params, noise=Noise.secure_backend())
    progress(0.3, "drawing rows", force=True)
    t0 = time.perf_counter()
    synthetic = sample_conforming(mech.sample, mech.schema, release.rows)  # the public rules hold
    return RunnerRelease(mech, synthetic, 0.0, time.perf_counter() - t0)


def _report(result: RunnerRelease) -> dict:
    report = result.report()
    report["seconds_fit"] = round(result.seconds_fit, 3)
    report["seconds_sample"] = round(result.seconds_sample, 3)
    return report


def estimate_request(dataset, req: ReleaseRequest) -> dict:
    """The run-time estimate of a release request, validated like a real one but nothing charged or
    queued (API: POST .../releases/estimate/)."""
    mech = validate(dataset, ReleaseRequest(req.mechanism, _text(req.epsilon, "epsilon"),
                                            _text(req.delta, "delta") or "0", req.params, parse_rows(req.rows)))
    est = runtime.estimate(req.mechanism, n=dataset.n_rows, schema=dataset.confirmed_schema(), params=mech.params,
                           epsilon=mech.epsilon, delta=mech.delta)
    return _with_wait(est)


def _with_wait(est: runtime.Estimate) -> dict:
    """The estimate as shown (a range where the time follows the data's path), its queue and the wait
    there for the jobs ahead."""
    queue = queue_for(est.seconds)
    ahead, wait = queue_wait(queue)
    return {**est.to_dict(), "queue": queue, "jobs_ahead": ahead, "wait_seconds": round(wait, 1),
            "wait_text": _wait_text(ahead, wait), **_limit_dict(est.seconds)}


def _limit_dict(seconds: float | None) -> dict:
    return {"time_limit_seconds": settings.CELERY_TASK_TIME_LIMIT, "over_time_limit": over_time_limit(seconds)}


def form_estimate(name: str, schema, n_rows: int, values) -> dict:
    """The release form's run-time estimate from its raw values (defaults where empty); reads no data.
    Returns the estimate or {"error": message} while the values are not valid yet."""
    from dpportal.releases.forms import PARAM_PREFIX

    params = {spec.name: values.get(PARAM_PREFIX + spec.name) for spec in registry.get(name).params
              if values.get(PARAM_PREFIX + spec.name) not in (None, "")}
    budget = {}
    for key in ("epsilon", "delta"):  # optional here: the estimate of AIM grows with the budget
        try:
            value = float(values.get(key) or "nan")
            budget[key] = value if math.isfinite(value) and value >= 0 else None
        except (TypeError, ValueError):
            budget[key] = None
    try:
        est = runtime.estimate(name, n=int(n_rows), schema=schema, params=params, **budget)
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
            total += _remaining(max((now - r.started_at).total_seconds(), 0.0), r.progress, r.estimate_seconds)
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
            out["remaining_seconds"] = round(_remaining(elapsed, release.progress, est), 1)
    out["timing_text"] = _timing_text(release, out)
    return out


def _remaining(elapsed: float, progress: float, estimate: float | None) -> float:
    """From the progress rate once it means something (10 %), otherwise from the estimate."""
    if progress >= 0.1 or estimate is None:
        return elapsed * (1 - progress) / max(progress, 0.01)
    return max(estimate - elapsed, 0.0)


def _timing_text(release: Release, t: dict) -> str:
    est = _estimate_text(release)
    if release.status == Release.QUEUED:
        running = f", {t['running_in_queue']} running" if t["running_in_queue"] else ""
        wait = _wait_text(t["jobs_ahead"], t["wait_seconds"])
        return (f"position {t['queue_position']} in the {release.queue} queue{running} · {wait}"
                + (f" · then runs {est} (estimate)" if est else ""))
    if release.status == Release.RUNNING and "elapsed_seconds" in t:
        left = runtime.describe_seconds(t["remaining_seconds"]).replace("about ", "")
        return f"elapsed {runtime.describe_seconds(t['elapsed_seconds']).replace('about ', '')} · about {left} left"
    if "elapsed_seconds" in t:
        return f"took {t['elapsed_seconds']:.1f} s" + (f" (estimated {est})" if est else "")
    return f"estimated {est}" if est else ""


def memory_estimate(cls, schema, n_rows: int, values) -> dict:
    """Memory a bounded-memory mechanism (PrivHP) will use, from the form's raw values; reads no data.

    Returns {"bytes": int, "mib": float} or {"error": message} when the values are not valid yet.
    """
    from dpportal.releases.forms import PARAM_PREFIX

    params = {}
    for spec in cls.params:
        raw = values.get(PARAM_PREFIX + spec.name)
        if raw not in (None, ""):
            params[spec.name] = raw
    try:
        epsilon = check_epsilon(values.get("epsilon") or "1")
        size = int(cls.memory_estimate(schema, int(n_rows), params, epsilon=epsilon))
        parts = _memory_parts(cls, schema, int(n_rows), params, epsilon)
    except (ValueError, TypeError, ArithmeticError) as exc:  # a GET link may carry anything
        return {"error": str(exc)}
    return {"bytes": size, "mib": round(size / 2**20, 2), "parts": parts}


def _memory_parts(cls, schema, n_rows: int, params: dict, epsilon: float) -> list[dict]:
    """The estimate by part, largest first, so a fixed part (the chunk being read) is visible."""
    rows = [{"part": p["part"], "what": p["what"], "mib": round(p["bytes"] / 2**20, 2), "chunk_rows": p["chunk_rows"]}
            for p in cls.memory_parts(schema, n_rows, epsilon, params)]
    return sorted(rows, key=lambda r: -r["mib"])


# --------------------------------------------------------------------------------------------------
# The steward's labels: name, note, withdraw from analysts, hide. No privacy effect: the
# cost stays spent and the ledger keeps the release whatever is done here.
# --------------------------------------------------------------------------------------------------

TITLE_MAX = 120
NOTE_MAX = 2000


def _label_text(value, name: str, limit: int, *, multiline: bool) -> str:
    text = "" if value is None else str(value).strip()
    if len(text) > limit:
        raise ReleaseRequestError(f"{name} must be at most {limit} characters, got {len(text)}")
    allowed = "\n\r\t" if multiline else ""
    bad = next((ch for ch in text if (ord(ch) < 32 and ch not in allowed) or ord(ch) == 127), None)
    if bad is not None:
        raise ReleaseRequestError(f"{name} must not contain control characters, got {bad!r}")
    return text


def label_release(release: Release, *, title, note) -> Release:
    release.title = _label_text(title, "name", TITLE_MAX, multiline=False)
    release.note = _label_text(note, "note", NOTE_MAX, multiline=True)
    release.save(update_fields=["title", "note"])
    return release


def set_withdrawn(release: Release, withdrawn: bool) -> Release:
    """Withdraw a release from analysts (or give it back). Copies already downloaded are not recalled."""
    release.withdrawn_at = timezone.now() if withdrawn else None
    release.save(update_fields=["withdrawn_at"])
    return release


def set_hidden(release: Release, hidden: bool) -> Release:
    release.hidden = bool(hidden)
    release.save(update_fields=["hidden"])
    return release


# --------------------------------------------------------------------------------------------------
# Private bounds for the schema page: charged like any release (reserve, run, settle), run
# before the schema is confirmed, reading only the chosen columns' raw cells (mechanisms/bounds.py).
# --------------------------------------------------------------------------------------------------

BOUNDS_MECHANISM = "dp-bounds"
DEFAULT_BOUNDS_EPSILON = "0.1"
BOUNDS_CHUNK_ROWS = 100_000


def plan_bounds(dataset, user, *, columns, epsilon, delta=None) -> Release:
    """Validate, reserve ``epsilon`` (and ``delta``) and queue a private estimate of ``columns``: bounds of
    the numeric ones, the categories of the categorical ones (by their kind on the schema page; these need
    a delta, default DEFAULT_DISCOVERY_DELTA). Raises ReleaseRequestError (nothing charged or queued)."""
    typed = _text(epsilon, "epsilon") or DEFAULT_BOUNDS_EPSILON
    epsilon = _canonical(typed, "epsilon")
    if exact(epsilon) <= 0:
        raise ReleaseRequestError(f"epsilon: expected a positive number, got {typed!r}")
    if not dataset.has_raw:
        raise ReleaseRequestError("the raw data of this dataset was deleted: nothing to estimate from")
    columns = list(dict.fromkeys(columns or []))
    unknown = [c for c in columns if c not in dataset.header]
    if unknown or not columns:
        raise ReleaseRequestError(f"choose columns of the file to estimate bounds for, got {unknown[:5] or 'none'}")
    working = dataset.working_schema()
    markers = list(working.missing_markers if working else dataset.missing_markers)
    categorical = [c for c in columns if working is not None and c in working.names
                   and working.column(c).kind == "categorical"]
    delta = _discovery_delta(delta, categorical)
    # what the job may know: the columns and the missing markers (no bounds: that is what it estimates)
    snapshot = {"bounds_request": True, "columns": [{"name": c} for c in columns], "missing_markers": markers}
    try:
        with transaction.atomic():
            _lock_raw_file(dataset)
            release = Release.objects.create(
                dataset=dataset, created_by=user, mechanism=BOUNDS_MECHANISM,
                params={"columns": columns, "categorical": categorical}, epsilon=epsilon, delta=delta, rows=0,
                schema=snapshot,
                schema_fingerprint=hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest(),
                software_version=dpportal.__version__, stage="queued", title="private bounds for the schema")
            ledger.reserve(dataset=dataset, release=release, user=user, epsilon=epsilon, delta=delta)
            transaction.on_commit(lambda: _enqueue(release.pk))
    except ledger.LedgerError as exc:
        raise ReleaseRequestError(str(exc)) from None
    return release


DEFAULT_DISCOVERY_DELTA = "0.000001"


def _discovery_delta(delta, categorical: list[str]) -> str:
    """The delta of a discovery (categorical columns), "0" for bounds alone (pure epsilon-DP)."""
    typed = _text(delta, "delta")
    if not categorical:
        if typed and exact(_canonical(typed, "delta")) != 0:
            raise ReleaseRequestError("delta: bounds of numeric columns are pure epsilon-DP and take no delta; "
                                      "choose categorical columns to discover categories with a delta")
        return "0"
    value = _canonical(typed or DEFAULT_DISCOVERY_DELTA, "delta")
    if not 0 < exact(value) < 1:
        raise ReleaseRequestError(f"delta: discovering categories needs a delta in (0, 1), got {typed!r}")
    return value


def execute_bounds(release_id: int) -> None:
    release = Release.objects.select_related("dataset").get(pk=release_id)
    columns = list(release.params["columns"])
    try:
        progress = _Progress(release_id)
        progress(0.05, "estimating bounds", force=True)
        epsilon = float(exact(release.epsilon))
        _mark_data_touched(release.pk)
        report = _estimate_public_metadata(release, columns, epsilon)
        report["mechanism"] = BOUNDS_MECHANISM
        _finish(release_id, status=Release.DONE, progress=1.0, stage="done", report=report)
    except BaseException as exc:  # noqa: BLE001 - recorded on the row; the ledger settles or refunds
        log.exception("bounds estimate %s failed", release_id)
        message = failure_text(exc)
        _finish(release_id, status=Release.FAILED, stage="failed", error=message)
        if not isinstance(exc, Exception):
            raise


def _estimate_public_metadata(release: Release, columns: list[str], epsilon: float) -> dict:
    """Bounds of the numeric columns and categories of the categorical ones, epsilon split evenly over
    all chosen columns (basic composition), the delta spent on the categorical ones."""
    from mechanisms import bounds, categories
    from mechanisms.accounting import PrivacyCost
    from mechanisms.schema import read_raw_csv

    dataset, noise, markers = release.dataset, Noise.secure_backend(), release.schema["missing_markers"]
    categorical = [c for c in release.params.get("categorical", []) if c in columns]
    numeric = [c for c in columns if c not in categorical]
    chunks = lambda cols: read_raw_csv(dataset.raw_path(), chunksize=BOUNDS_CHUNK_ROWS,  # noqa: E731
                                       usecols=cols, **dataset.read_kw())
    parts = []
    if numeric:
        share = epsilon * len(numeric) / len(columns)
        parts.append(bounds.privacy_cost(share, bounds.estimate_bounds(chunks(numeric), numeric, epsilon=share,
                                                                        noise=noise, markers=markers, n=dataset.n_rows)))
    if categorical:
        share, delta = epsilon * len(categorical) / len(columns), float(exact(release.delta))
        found = categories.discover_categories(chunks(categorical), categorical, epsilon=share, delta=delta,
                                               noise=noise, markers=markers)
        parts.append(categories.privacy_cost(share, delta, found))
    if len(parts) == 1:
        return parts[0].to_dict()
    bounds_part, categories_part = parts[0].details, parts[1].details
    return PrivacyCost(epsilon=epsilon, delta=parts[1].delta, guarantee="approximate",
                       caveats=parts[0].caveats + parts[1].caveats,
                       details={"method": "bounds and category discovery, epsilon split evenly over the columns "
                                          "(basic composition)",
                                "bounds": bounds_part["bounds"], "categories": categories_part["categories"],
                                "bounds_estimate": {k: v for k, v in bounds_part.items() if k != "bounds"},
                                "category_discovery": {k: v for k, v in categories_part.items()
                                                       if k != "categories"}}).to_dict()


def latest_categories(dataset) -> dict:
    """Column -> {"categories", "release", "epsilon"} from the dataset's finished discoveries (the latest per
    column). DP outputs: safe to publish in the schema."""
    out = {}
    for r in dataset.releases.filter(mechanism=BOUNDS_MECHANISM, status=Release.DONE).order_by("created_at"):
        for name, found in (((r.report or {}).get("details") or {}).get("categories") or {}).items():
            out[name] = {"categories": found["categories"], "release": r.pk, "epsilon": r.epsilon}
    return out


def latest_bounds(dataset) -> dict:
    """Column -> {"lower", "upper", "release", "epsilon"} from the dataset's finished bounds estimates
    (the latest per column). These are DP outputs: safe to publish in the schema."""
    out = {}
    for r in dataset.releases.filter(mechanism=BOUNDS_MECHANISM, status=Release.DONE).order_by("created_at"):
        for name, b in (((r.report or {}).get("details") or {}).get("bounds") or {}).items():
            out[name] = {**b, "release": r.pk, "epsilon": r.epsilon}
    return out
