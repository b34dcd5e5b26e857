"""Private bounds and category discovery for the schema page: a job charged like any release
(reserve, run, settle), run before the schema is confirmed, reading only the chosen columns' raw
cells (mechanisms/bounds.py, mechanisms/categories.py). Its rows hold ``mechanism=BOUNDS_MECHANISM``."""

from __future__ import annotations

import hashlib
import json
import logging

from django.db import transaction

import dpportal
from dpportal.ledger import services as ledger
from mechanisms.accounting import exact
from mechanisms.noise import Noise

from ..models import Release
from . import planning, worker
from .parsing import ReleaseRequestError, canonical_amount, field_text
from .queueing import enqueue
from .settlement import finish

log = logging.getLogger(__name__)

BOUNDS_MECHANISM = "dp-bounds"
DEFAULT_BOUNDS_EPSILON = "0.1"
BOUNDS_CHUNK_ROWS = 100_000


def plan_bounds(dataset, user, *, columns, epsilon, delta=None) -> Release:
    """Validate, reserve ``epsilon`` (and ``delta``) and queue a private estimate of ``columns``: bounds of
    the numeric ones, the categories of the categorical ones (by their kind on the schema page; these need
    a delta, default DEFAULT_DISCOVERY_DELTA). Raises ReleaseRequestError (nothing charged or queued)."""
    typed = field_text(epsilon, "epsilon") or DEFAULT_BOUNDS_EPSILON
    epsilon = canonical_amount(typed, "epsilon")
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
    categorical = [
        c for c in columns if working is not None and c in working.names and working.column(c).kind == "categorical"
    ]
    delta = _discovery_delta(delta, categorical)
    # which missing markers are labels of a column (a code "NA" beside the file's "?") is chosen from the
    # discovery's noisy counts (mechanisms.categories, labels="auto"), never from the drafted schema
    marker_labels = "auto"
    # what the job may know: the columns and the missing markers (no bounds: that is what it estimates)
    snapshot = {"bounds_request": True, "columns": [{"name": c} for c in columns], "missing_markers": markers}
    try:
        with transaction.atomic():
            planning.lock_raw_file(dataset)
            release = Release.objects.create(
                dataset=dataset,
                created_by=user,
                mechanism=BOUNDS_MECHANISM,
                params={"columns": columns, "categorical": categorical, "marker_labels": marker_labels},
                epsilon=epsilon,
                delta=delta,
                rows=0,
                schema=snapshot,
                schema_fingerprint=hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest(),
                software_version=dpportal.__version__,
                stage="queued",
                title="private bounds for the schema",
            )
            ledger.reserve(dataset=dataset, release=release, user=user, epsilon=epsilon, delta=delta)
            transaction.on_commit(lambda: enqueue(release.pk))
    except ledger.LedgerError as exc:
        raise ReleaseRequestError(str(exc)) from None
    return release


DEFAULT_DISCOVERY_DELTA = "0.000001"


def _discovery_delta(delta, categorical: list[str]) -> str:
    """The delta of a discovery (categorical columns), "0" for bounds alone (pure epsilon-DP)."""
    typed = field_text(delta, "delta")
    if not categorical:
        if typed and exact(canonical_amount(typed, "delta")) != 0:
            raise ReleaseRequestError(
                "delta: bounds of numeric columns are pure epsilon-DP and take no delta; "
                "choose categorical columns to discover categories with a delta"
            )
        return "0"
    value = canonical_amount(typed or DEFAULT_DISCOVERY_DELTA, "delta")
    if not 0 < exact(value) < 1:
        raise ReleaseRequestError(f"delta: discovering categories needs a delta in (0, 1), got {typed!r}")
    return value


def execute_bounds(release_id: int) -> None:
    release = Release.objects.select_related("dataset").get(pk=release_id)
    columns = list(release.params["columns"])
    try:
        progress = worker.Progress(release_id)
        progress(0.05, "estimating bounds", force=True)
        epsilon = float(exact(release.epsilon))
        worker.mark_data_touched(release.pk)
        report = _estimate_public_metadata(release, columns, epsilon)
        report["mechanism"] = BOUNDS_MECHANISM
        finish(release_id, status=Release.DONE, progress=1.0, stage="done", report=report)
    except BaseException as exc:  # noqa: BLE001 - recorded on the row; the ledger settles or refunds
        log.exception("bounds estimate %s failed", release_id)
        message = worker.failure_text(exc)
        finish(release_id, status=Release.FAILED, stage="failed", error=message)
        if not isinstance(exc, Exception):
            raise


def _estimate_public_metadata(release: Release, columns: list[str], epsilon: float) -> dict:
    """Bounds of the numeric columns and categories of the categorical ones, epsilon split evenly over
    all chosen columns (basic composition), the delta spent on the categorical ones."""
    from mechanisms import bounds, categories
    from mechanisms.accounting import PrivacyCost
    from mechanisms.source import read_raw_csv

    dataset, noise, markers = release.dataset, Noise.secure_backend(), release.schema["missing_markers"]
    categorical = [c for c in release.params.get("categorical", []) if c in columns]
    numeric = [c for c in columns if c not in categorical]
    chunks = lambda cols: read_raw_csv(
        dataset.raw_path(),
        chunksize=BOUNDS_CHUNK_ROWS,  # noqa: E731
        usecols=cols,
        **dataset.read_kw(),
    )
    parts = []
    if numeric:
        share = epsilon * len(numeric) / len(columns)
        parts.append(
            bounds.privacy_cost(
                share,
                bounds.estimate_bounds(
                    chunks(numeric), numeric, epsilon=share, noise=noise, markers=markers, n=dataset.n_rows
                ),
            )
        )
    if categorical:
        share, delta = epsilon * len(categorical) / len(columns), float(exact(release.delta))
        found = categories.discover_categories(
            chunks(categorical),
            categorical,
            epsilon=share,
            delta=delta,
            noise=noise,
            markers=markers,
            labels=release.params.get("marker_labels"),
        )
        parts.append(categories.privacy_cost(share, delta, found))
    if len(parts) == 1:
        return parts[0].to_dict()
    bounds_part, categories_part = parts[0].details, parts[1].details
    return PrivacyCost(
        epsilon=epsilon,
        delta=parts[1].delta,
        guarantee="approximate",
        caveats=parts[0].caveats + parts[1].caveats,
        details={
            "method": "bounds and category discovery, epsilon split evenly over the columns (basic composition)",
            "bounds": bounds_part["bounds"],
            "categories": categories_part["categories"],
            "bounds_estimate": {k: v for k, v in bounds_part.items() if k != "bounds"},
            "category_discovery": {k: v for k, v in categories_part.items() if k != "categories"},
        },
        events=parts[0].events + parts[1].events,
    ).to_dict()


def latest_categories(dataset) -> dict:
    """Column -> {"categories", "release", "epsilon"} from the dataset's finished discoveries (the latest per
    column). DP outputs: safe to publish in the schema."""
    out = {}
    for r in dataset.releases.filter(mechanism=BOUNDS_MECHANISM, status=Release.DONE).order_by("created_at"):
        for name, found in (((r.report or {}).get("details") or {}).get("categories") or {}).items():
            kept = {k: found[k] for k in ("categories", "missing", "too_many") if k in found}
            out[name] = {**kept, "release": r.pk, "epsilon": r.epsilon}
    return out


def latest_bounds(dataset) -> dict:
    """Column -> {"lower", "upper", "release", "epsilon"} from the dataset's finished bounds estimates
    (the latest per column). These are DP outputs: safe to publish in the schema."""
    out = {}
    for r in dataset.releases.filter(mechanism=BOUNDS_MECHANISM, status=Release.DONE).order_by("created_at"):
        for name, b in (((r.report or {}).get("details") or {}).get("bounds") or {}).items():
            out[name] = {**b, "release": r.pk, "epsilon": r.epsilon}
    return out
