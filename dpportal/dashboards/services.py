"""Utility evaluation of releases, run by the worker after a release is done.

The worker calls ONE function, :func:`evaluate_finished_release`, after the release is settled: the
privacy cost is already spent and the synthetic table already written, so whatever happens here
never fails the release. Results are NOT private (computed from the raw data): steward-only.
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import pandas as pd
from django.conf import settings
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from dpportal import jobs
from dpportal.releases.models import Release
from mechanisms.schema import Schema

from .models import DashboardConfig, Evaluation

log = logging.getLogger(__name__)

EVAL_MAX_REAL_ROWS = 200_000  # real rows read for evaluation; larger tables are sampled while streaming
EVAL_CHUNK_ROWS = 100_000
STRANDED_ADVICE = "Evaluate the release again from its dashboard page."
MAX_GUESSED_TARGET_LEVELS = 20  # a guessed TSTR target must be a categorical column with few levels
FAST = True  # the worker uses the fast TSTR settings (fewer rows and trees)

ProgressFn = Callable[[float, str], None]


def evaluate_finished_release(release_id: int, synthetic: pd.DataFrame | None = None) -> None:
    """Worker hook: evaluate a DONE release; never raises an ``Exception`` (the release stays done)."""
    try:
        release = Release.objects.select_related("dataset").get(pk=release_id)
        if release.status != Release.DONE:
            return
        evaluate_release(release, synthetic_frame=synthetic)
    except Exception:  # noqa: BLE001 - evaluation is informative only; log and move on
        log.exception("release %s: evaluation could not be recorded", release_id)


def evaluate_release(
    release: Release,
    real_source_frame: pd.DataFrame | None = None,
    synthetic_frame: pd.DataFrame | None = None,
    progress: ProgressFn | None = None,
) -> Evaluation:
    """Compare the release's synthetic table with the real table; store the JSON results.

    ``real_source_frame`` / ``synthetic_frame`` may be passed when the caller holds them (prepared or
    raw string frames); otherwise they are read from private storage. Failures are recorded on the
    :class:`Evaluation` row (status "failed"), never raised.
    """
    from mechanisms.evaluation import tables, utility  # scikit-learn & co.: the worker only, not web processes

    ev, _ = Evaluation.objects.get_or_create(release=release)
    Evaluation.objects.filter(pk=ev.pk).update(
        status=Evaluation.RUNNING, progress=0.0, stage="loading", error="", started_at=timezone.now(), finished_at=None
    )
    write = jobs.Progress(Evaluation, ev.pk, extra=progress, deadline_seconds=settings.CELERY_TASK_SOFT_TIME_LIMIT)
    try:
        schema = release.public_schema()
        target, source = release_target(release, schema)
        real, real_note = (
            _real_frame(release, schema)
            if real_source_frame is None
            else (tables.prepare_table(schema, real_source_frame, synthetic=False), None)
        )
        if real is None:
            _finish(ev, Evaluation.SKIPPED, error=real_note)
            return _reload(ev)
        syn = _synthetic_frame(release, schema, synthetic_frame)
        write(0.05, "evaluating", force=True)
        results = utility.evaluate(
            schema,
            real,
            syn,
            target=target or None,
            seed=release.pk,
            fast=FAST,
            progress=lambda f, s: write(0.05 + 0.9 * f, s),
        )
        results["real_rows"] = real_note or {"rows_used": len(real), "rows_total": len(real), "fraction": 1.0}
        write(0.96, "checking the downloaded file", force=True)
        _add_file_checks(results, release, schema, real_source_frame, synthetic_frame, target=target or None)
        write(1.0, "done", force=True)
        results["target_source"] = source
        _finish(ev, Evaluation.DONE, results=results, target=target or "")
    except Exception as exc:  # noqa: BLE001 - recorded and shown as "evaluation failed"
        log.exception("release %s: evaluation failed", release.pk)
        _finish(
            ev, Evaluation.FAILED, error=(str(exc).splitlines() or [type(exc).__name__])[0][:500] or type(exc).__name__
        )
    return _reload(ev)


def _add_file_checks(
    results: dict,
    release: Release,
    schema: Schema,
    real_raw: pd.DataFrame | None,
    synthetic: pd.DataFrame | None,
    *,
    target: str | None = None,
) -> None:
    """The statistician's checks of the file an analyst downloads (mechanisms.evaluation.fidelity), and the
    headline quality score from them and from the TSTR models (``results["ml"]``) trained on the file to
    predict ``target``; the score on the internal cells stays as ``quality_cells``."""
    from mechanisms.evaluation import fidelity
    from mechanisms.io import export_frame
    from mechanisms.source import read_raw_csv

    dataset = release.dataset
    if real_raw is None:
        real_raw = read_raw_csv(
            dataset.raw_path(), nrows=EVAL_MAX_REAL_ROWS, encoding=dataset.encoding, sep=dataset.delimiter
        )
    if synthetic is None:
        synthetic = read_raw_csv(release.output_path(), skipinitialspace=False)
    else:
        synthetic = export_frame(synthetic, schema)
    reference, floor = fidelity.split_reference(real_raw.astype(str), len(synthetic), seed=release.pk)
    checks = fidelity.report(
        schema,
        reference,
        synthetic.astype(str),
        floor,
        real_labels=real_raw.astype(str),
        seed=release.pk,
        target=target if target in {c.name for c in schema.kept} else None,
    )
    results["file_checks"] = checks
    results["quality_cells"] = results.get("quality")
    results["quality"] = fidelity.quality(checks, ml=results.get("ml"))
    file_readings = fidelity.readings(checks, results["quality"])
    names = {r["metric"] for r in file_readings}
    results["readings"] = file_readings + [r for r in results.get("readings", []) if r["metric"] not in names]


def target_for(dataset, schema: Schema) -> str | None:
    """The steward's TSTR target if set (and still in the schema), else a guess from the PUBLIC
    schema: the last kept categorical column with 2..20 categories."""
    configured = configured_target(dataset)
    if configured and configured in schema.names:
        return configured
    for c in reversed(schema.kept):
        if c.kind == "categorical" and 2 <= len(c.categories) <= MAX_GUESSED_TARGET_LEVELS:
            return c.name
    return None


def release_target(release: Release, schema: Schema) -> tuple[str | None, str]:
    """The TSTR target of a release's evaluation and where it comes from: the column the release was made
    for (its ``target`` parameter: AIM's workload=target, DP-MERF's labelled mode), else the steward's
    dashboard target, else the guess from the public schema."""
    made_for = (release.params or {}).get("target")
    if made_for and made_for in target_choices(schema):
        return made_for, "the release's target"
    target = target_for(release.dataset, schema)
    if configured_target(release.dataset) and target == configured_target(release.dataset):
        return target, "steward"
    return target, "guessed (last categorical column)" if target else "none"


def target_choices(schema: Schema) -> list[str]:
    return [c.name for c in schema.kept if c.kind in ("categorical", "integer")]


def set_target(dataset, target: str) -> None:
    schema = dataset.confirmed_schema()
    if target and (schema is None or target not in target_choices(schema)):
        raise ValueError(f"target must be a categorical or integer column of the schema, got target={target!r}")
    DashboardConfig.objects.update_or_create(dataset=dataset, defaults={"target": target})


def configured_target(dataset) -> str:
    cfg = DashboardConfig.objects.filter(dataset=dataset).values_list("target", flat=True).first()
    return cfg or ""


def _real_frame(release: Release, schema: Schema) -> tuple[pd.DataFrame | None, dict | str | None]:
    dataset = release.dataset
    if not dataset.has_raw:
        return None, "the raw data of this dataset was deleted: nothing to compare with"
    source = dataset.source(schema)
    n = max(int(dataset.n_rows), 1)
    if n <= EVAL_MAX_REAL_ROWS:
        frame = source.frame()
        return frame, {"rows_used": len(frame), "rows_total": len(frame), "fraction": 1.0}
    keep = EVAL_MAX_REAL_ROWS / n  # Bernoulli sampling while streaming: memory stays bounded
    rng = np.random.default_rng(release.pk)
    parts = [ch[rng.random(len(ch)) < keep] for ch in source.chunks(EVAL_CHUNK_ROWS)]
    frame = pd.concat(parts, ignore_index=True)
    return frame, {"rows_used": len(frame), "rows_total": n, "fraction": round(len(frame) / n, 6)}


def _synthetic_frame(release: Release, schema: Schema, frame: pd.DataFrame | None) -> pd.DataFrame:
    from mechanisms.evaluation import tables

    if frame is None:
        return tables.load_prepared(schema, str(release.output_path()), synthetic=True)
    return tables.prepare_table(schema, frame, synthetic=True)


def _finish(ev: Evaluation, status: str, *, results=None, error: str = "", target: str = "") -> None:
    jobs.finish(Evaluation, ev.pk, status, progress=1.0, error=error or "", results=results, target=target)


_reload = jobs.reload


def fail_stranded(evaluation_id: int, now=None) -> bool:
    """A running evaluation whose worker vanished (no heartbeat): failed (the sweep, ``dpportal.jobs``)."""
    return jobs.fail_stranded(Evaluation, evaluation_id, now, advice=STRANDED_ADVICE)


# --------------------------------------------------------------------------------------------------
# Quality at a glance: one score per release, steward-only (it compares with raw data)
# --------------------------------------------------------------------------------------------------


def quality_of(release: Release) -> dict | None:
    """The release's quality score and its two parts from its finished evaluation, else None
    (no evaluation yet, or one stored before the score existed: re-evaluate to get it)."""
    found = (
        Evaluation.objects.filter(release=release, status=Evaluation.DONE)
        .annotate(quality=KeyTransform("quality", "results"))
        .values_list("quality", flat=True)
    )
    return quality_from_results({"quality": found[0]} if found else None)


# Keys of the quality dict that evaluations stored before the pair, label and model checks lack.
QUALITY_CHECKS = ("worst_pair", "label_gap", "models", "models_near_chance", "warnings")


def quality_from_results(results: dict | None) -> dict | None:
    """The quality dict of evaluation results, or None; on results stored before the pair, label and model
    checks, those keys are None and ``far_off`` is the worst column's."""
    q = (results or {}).get("quality")
    if not q or q.get("score") is None:
        return None
    return {**dict.fromkeys(QUALITY_CHECKS), "worst_column_far_off": bool(q.get("far_off")), **q}


def with_digest(releases):
    """``releases`` (a queryset) with their evaluation and risk report selected but not their full results (a
    few hundred KB of JSON each on a 40-column table): only the parts a list of releases shows, read by the
    database, as ``r.ev_summary``, ``r.ev_quality`` and ``r.risk_bound``."""
    return (
        releases.select_related("evaluation", "risk_report")
        .defer("evaluation__results", "risk_report__results")
        .annotate(
            ev_summary=KeyTransform("summary", "evaluation__results"),
            ev_quality=KeyTransform("quality", "evaluation__results"),
            risk_bound=KeyTransform("epsilon_lower_bound", "risk_report__results"),
        )
    )


def mark_best_quality(releases) -> None:
    """Set ``r.quality`` (dict or None) and ``r.best_quality`` on each release (from a queryset with
    ``evaluation`` selected, or :func:`with_digest`'s); the best is the highest score among them."""
    best = None
    for r in releases:
        ev = getattr(r, "evaluation", None) if _has_evaluation(r) else None
        done = ev is not None and ev.status == Evaluation.DONE
        if hasattr(r, "ev_quality"):
            r.quality = quality_from_results({"quality": r.ev_quality} if done else None)
        else:
            r.quality = quality_from_results(ev.results if done else None)
        r.best_quality = False
        if r.quality and (best is None or r.quality["score"] > best.quality["score"]):
            best = r
    if best is not None and sum(1 for r in releases if r.quality) > 1:
        best.best_quality = True


def _has_evaluation(release: Release) -> bool:
    try:
        release.evaluation
    except Evaluation.DoesNotExist:
        return False
    return True
