"""Privacy risk reports of releases, run on the evaluation queue after the release is done.

The worker calls :func:`risk_report_finished_release` after the release is settled: its privacy cost
is spent and its synthetic table written, so nothing here can fail or delay the release or a draw.
The report attacks refits of the same mechanism on the RAW table (:mod:`mechanisms.risk`):
it is steward-only, like the utility dashboard. An empirical lower bound above the claimed epsilon
is logged as an error and flagged on the release page: it would mean an implementation error.
"""

from __future__ import annotations

import logging

import pandas as pd
from django.conf import settings
from django.utils import timezone

from dpportal import jobs
from dpportal.releases.models import Release
from mechanisms import registry
from mechanisms.noise import Noise

from .models import RiskReport

log = logging.getLogger(__name__)

READ_MAX_ROWS = 200_000  # raw rows read; larger tables are sampled while streaming (the report uses fewer)
READ_CHUNK_ROWS = 100_000
STRANDED_ADVICE = "Compute the risk report again from the release's dashboard page."


def wanted(release: Release) -> bool:
    """Only original releases of a synthesis mechanism get a report (a draw shares its origin's)."""
    return release.parent_id is None and release.mechanism in registry.names()


def cancel(release: Release) -> RiskReport | None:
    """Stop a pending or running report (a running one stops at its next progress point)."""
    rr = RiskReport.objects.filter(release=release).first()
    if rr is None or rr.is_finished:
        return rr
    now = timezone.now()
    RiskReport.objects.filter(pk=rr.pk, status=RiskReport.PENDING).update(
        status=RiskReport.CANCELLED, stage="cancelled", finished_at=now, cancel_requested_at=now
    )
    RiskReport.objects.filter(pk=rr.pk, status=RiskReport.RUNNING).update(cancel_requested_at=now)
    rr.refresh_from_db()
    return rr


def risk_report_finished_release(release_id: int) -> None:
    """Worker hook: never raises an ``Exception`` (the release stays done whatever happens here)."""
    try:
        release = Release.objects.select_related("dataset").get(pk=release_id)
        if release.status != Release.DONE or not wanted(release):
            return
        rr = RiskReport.objects.filter(release=release).first()
        if rr is not None and rr.status == RiskReport.CANCELLED:
            return
        compute(release)
    except Exception:  # noqa: BLE001 - informative only; log and move on
        log.exception("release %s: risk report could not be recorded", release_id)


def compute(
    release: Release, prepared: pd.DataFrame | None = None, *, runs: int | None = None, noise: Noise | None = None
) -> RiskReport:
    """Compute and store the report (``prepared``: the table when the caller holds it; ``noise``: a
    seeded Noise in tests only, the worker always uses fresh secure noise)."""
    from mechanisms import resources, risk  # scipy & co.: loaded by the worker only

    rr, _ = RiskReport.objects.get_or_create(release=release)
    RiskReport.objects.filter(pk=rr.pk).update(
        status=RiskReport.RUNNING,
        progress=0.0,
        stage="loading",
        error="",
        results=None,
        guarantee_failed=False,
        started_at=timezone.now(),
        finished_at=None,
    )
    write = jobs.Progress(RiskReport, rr.pk, deadline_seconds=settings.CELERY_TASK_SOFT_TIME_LIMIT)
    noise = noise if noise is not None else Noise.secure_backend()
    try:
        schema = release.public_schema()
        if prepared is None:
            prepared, reason = _prepared_frame(release, schema, noise)
            if prepared is None:
                _finish(
                    rr,
                    RiskReport.NOT_COMPUTABLE,
                    results=risk.not_computable(
                        reason, claimed_epsilon=float(release.epsilon), mechanism=release.mechanism
                    ),
                    error=reason,
                )
                return _reload(rr)
        seconds = (
            (release.finished_at - release.started_at).total_seconds()
            if release.finished_at and release.started_at
            else None
        )
        resources.limit_threads(resources.threads_per_job())  # the refits share the cores as releases do
        budget = (
            max(settings.DPPORTAL_RISK_TIME_FACTOR * seconds, settings.DPPORTAL_RISK_MIN_SECONDS)
            if seconds is not None
            else None
        )
        results = risk.risk_report(
            schema,
            prepared,
            release.mechanism,
            epsilon=float(release.epsilon),
            delta=float(release.delta or 0),
            params=release.params or {},
            runs=runs or settings.DPPORTAL_RISK_RUNS,
            noise=noise,
            progress=write,
            release_seconds=seconds,
            time_budget=budget,
        )
        if results["status"] != "done":
            _finish(rr, RiskReport.NOT_COMPUTABLE, results=results, error=results.get("reason", ""))
            return _reload(rr)
        if results["guarantee_failed"]:
            log.error(
                "release %s: the risk report's attacks prove epsilon >= %s, above the claimed %s: "
                "the release's guarantee does not hold",
                release.pk,
                results["epsilon_lower_bound"],
                release.epsilon,
            )
        _finish(rr, RiskReport.DONE, results=results, guarantee_failed=bool(results["guarantee_failed"]))
    except jobs.Cancelled:
        _finish(rr, RiskReport.CANCELLED)
    except Exception as exc:  # noqa: BLE001 - recorded and shown as "risk report failed"
        log.exception("release %s: risk report failed", release.pk)
        _finish(
            rr, RiskReport.FAILED, error=(str(exc).splitlines() or [type(exc).__name__])[0][:500] or type(exc).__name__
        )
    return _reload(rr)


def _prepared_frame(release: Release, schema, noise: Noise) -> tuple[pd.DataFrame | None, str]:
    dataset = release.dataset
    if not dataset.has_raw:
        return None, "the raw data of this dataset was deleted: there is nothing to attack the release with"
    source = dataset.source(schema)
    n = int(dataset.n_rows or 0)
    if n <= READ_MAX_ROWS:
        return source.frame(), ""
    keep = READ_MAX_ROWS / n  # Bernoulli sampling while streaming: memory stays bounded
    rng = noise.private_rng
    parts = [ch[rng.random(len(ch)) < keep] for ch in source.chunks(READ_CHUNK_ROWS)]
    return pd.concat(parts, ignore_index=True), ""


def _finish(rr: RiskReport, status: str, *, results=None, error: str = "", guarantee_failed: bool = False) -> None:
    jobs.finish(
        RiskReport,
        rr.pk,
        status,
        progress=1.0,
        error=error or "",
        results=results,
        guarantee_failed=guarantee_failed,
    )


_reload = jobs.reload


def fail_stranded(report_id: int, now=None) -> bool:
    """A running report whose worker vanished (no heartbeat): failed (the sweep, ``dpportal.jobs``)."""
    return jobs.fail_stranded(RiskReport, report_id, now, advice=STRANDED_ADVICE)


def report_of(release: Release) -> RiskReport | None:
    return RiskReport.objects.filter(release=release).first()


def api_dict(release: Release) -> dict:
    """GET /api/releases/{id}/risk/: the stored report in the API's shape (steward-only)."""
    rr = report_of(release)
    base = {
        "release": release.pk,
        "claimed_epsilon": float(release.epsilon),
        "claimed_delta": float(release.delta or 0),
        "attacks": [],
        "control": [],
    }
    if rr is None:
        if not wanted(release):
            return {
                **base,
                "status": "not computable",
                "progress": 0.0,
                "reason": "a draw shares its original release's report"
                if release.parent_id
                else "not a synthesis release",
            }
        if release.status != Release.DONE:
            return {**base, "status": "waiting for the release", "progress": 0.0}
        return {
            **base,
            "status": "not requested",
            "progress": 0.0,
            "reason": "no risk report yet (a release made before reports existed): compute it from the "
            "release's dashboard page",
        }
    results = rr.results or {}
    out = {**base, "status": rr.status, "progress": round(rr.progress * 100, 1), "stage": rr.stage}
    if rr.status in (RiskReport.NOT_COMPUTABLE, RiskReport.FAILED):
        out["reason"] = rr.error or results.get("reason", "")
    if rr.status == RiskReport.DONE:
        keys = ("name", "title", "sees", "auc", "tpr_at_fpr", "epsilon_lower_bound", "advantage")
        out["attacks"] = [{k: a.get(k) for k in keys} for a in results.get("attacks", [])]
        out["control"] = [
            {**{k: a.get(k) for k in keys}, "release": a.get("release")} for a in results.get("control", [])
        ]
        for k in (
            "confidence",
            "epsilon_lower_bound",
            "guarantee_failed",
            "control_auc",
            "control_detected",
            "empirical_advantage",
            "theoretical_advantage",
            "implementation_check",
            "implementation_check_bound",
            "summary",
            "attribute_inference",
            "linkability",
            "singling_out",
            "runs",
            "target_pairs",
            "rows_used",
            "seconds",
            "release_seconds",
            "time_ratio",
        ):
            if k in results:
                out[k] = results[k]
    return out
