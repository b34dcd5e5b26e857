"""Utility dashboards: steward-only (the dataset's owner); everyone else gets 404.

These pages show metrics computed from the RAW data: they are not privacy-protected, and every page
says so. Nothing here is reachable from a download, the manifest or an analyst's view.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models.fields.json import KeyTransform
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dpportal.accounts.access import dataset_for_owner, release_for_owner
from dpportal.releases.models import Release
from dpportal.releases.services.jobs import TABLELESS, kind_of

from . import charts, services, tasks
from .models import Evaluation

MAX_OVERLAYS = 60  # per-column charts drawn on one page (wider tables: the first 60, with a note)


def _evaluation(release: Release) -> Evaluation | None:
    """The release's evaluation (one whose worker died is failed by the sweep: releases/sweeper.py)."""
    return Evaluation.objects.filter(release=release).first()


def _cards(release: Release) -> list[tuple[str, str]]:
    report = release.report or {}
    seconds = (
        (release.finished_at - release.started_at).total_seconds()
        if release.finished_at and release.started_at
        else None
    )
    return [
        ("mechanism", release.mechanism),
        ("epsilon", release.epsilon),
        ("delta", release.delta),
        ("guarantee", report.get("guarantee", "n/a")),
        ("rows", f"{release.rows:,}"),
        ("time", f"{seconds:.1f} s" if seconds is not None else "n/a"),
    ]


def _release_charts(results: dict) -> dict:
    cols = results["columns"]
    corr = results["correlation"]
    out = {
        "overlays": [(f"col-{i}", charts.column_overlay(c)) for i, c in enumerate(cols[:MAX_OVERLAYS])],
        "overlays_cut": max(0, len(cols) - MAX_OVERLAYS),
        "heatmaps": [
            ("corr-real", charts.heatmap(corr["real"], corr["columns"], "Real", diverging=False)),
            ("corr-synthetic", charts.heatmap(corr["synthetic"], corr["columns"], "Synthetic", diverging=False)),
            (
                "corr-diff",
                charts.heatmap(corr["difference"], corr["columns"], "Difference (synthetic − real)", diverging=True),
            ),
        ],
        "tstr": ("tstr", charts.tstr_bars(results["ml"])) if results.get("ml") else None,
        "dcr": ("dcr", charts.dcr_histogram(results["privacy"])) if results.get("privacy") else None,
    }
    return out


@login_required
def release_dashboard(request, pk):
    release = release_for_owner(request.user, pk)
    ev = _evaluation(release)
    results = ev.results if ev is not None and ev.status == Evaluation.DONE else None
    ctx = {
        "release": release,
        "dataset": release.dataset,
        "cards": _cards(release),
        "evaluation": ev,
        "results": results,
        "charts": _release_charts(results) if results else None,
        "numeric": [c for c in results["columns"] if "real" in c] if results else [],
        "quality": services.quality_from_results(results),
        "risk": _risk(release),
    }
    return render(request, "dashboards/release.html", ctx)


def _risk(release: Release):
    """The release's risk report (one whose worker died is failed by the sweep: releases/sweeper.py)."""
    from .models import RiskReport

    return RiskReport.objects.filter(release=release).first()


@login_required
@require_POST
def release_risk(request, pk):
    """Queue (again) or cancel the release's privacy risk report."""
    from . import risk

    release = release_for_owner(request.user, pk)
    if release.status != Release.DONE or not risk.wanted(release):
        raise Http404("not available")
    if request.POST.get("action") == "cancel":
        risk.cancel(release)
        messages.success(request, f"Risk report of release {release.pk} cancelled.")
    else:
        tasks.request_risk_report(release)
        messages.success(request, f"Risk report of release {release.pk} queued.")
    return redirect("dpportal-release-dashboard", release.pk)


@login_required
def evaluation_status(request, pk):
    release = release_for_owner(request.user, pk)
    ev = _evaluation(release)
    if ev is None:
        return JsonResponse({"status": "none", "finished": release.is_finished, "progress": 0.0, "stage": ""})
    return JsonResponse(
        {"status": ev.status, "progress": round(ev.progress * 100, 1), "stage": ev.stage, "finished": ev.is_finished}
    )


@login_required
@require_POST
def release_reevaluate(request, pk):
    release = release_for_owner(request.user, pk)
    if release.status != Release.DONE or not kind_of(release.mechanism).makes_table:
        raise Http404("not available")
    tasks.request_reevaluation(release)
    messages.success(request, f"Evaluation of release {release.pk} queued.")
    return redirect("dpportal-release-dashboard", release.pk)


def _points(dataset) -> list[dict]:
    rows = (
        Evaluation.objects.filter(
            release__dataset=dataset,
            release__parent__isnull=True,
            release__status=Release.DONE,
            release__hidden=False,
            status=Evaluation.DONE,
        )
        .select_related("release")
        .defer("results")  # a few hundred KB each on a wide table: only the summary is drawn
        .annotate(summary=KeyTransform("summary", "results"))
        .order_by("release__created_at")
    )
    points = []
    for ev in rows:
        try:
            eps = float(ev.release.epsilon)
        except ValueError:
            continue
        points.append(
            {
                "id": ev.release_id,
                "mechanism": ev.release.mechanism,
                "epsilon": eps,
                "summary": ev.summary or {},
            }
        )
    return points


@login_required
def dataset_dashboard(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    points = _points(dataset)
    utility = [
        (f"util-{key}", charts.utility_vs_epsilon(points, key, title))
        for key, title in charts.UTILITY_METRICS
        if any(p["summary"].get(key) is not None for p in points)
    ]
    schema = dataset.confirmed_schema()
    releases = list(
        services.with_digest(
            dataset.releases.filter(parent__isnull=True, hidden=False).exclude(mechanism__in=TABLELESS)
        ).order_by("-created_at")
    )
    services.mark_best_quality(releases)
    done = [r.pk for r in releases if r.status == Release.DONE]  # compare defaults: never a cancelled release
    ctx = {
        "dataset": dataset,
        "utility": utility,
        "points": points,
        "releases": releases,
        "compare_a": done[0] if done else None,
        "compare_b": done[1] if len(done) > 1 else None,
        "target": services.target_for(dataset, schema) if schema else None,
        "target_configured": services.configured_target(dataset),
        "target_choices": services.target_choices(schema) if schema else [],
    }
    return render(request, "dashboards/dataset.html", ctx)


@login_required
@require_POST
def dataset_target(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    try:
        services.set_target(dataset, request.POST.get("target", "").strip())
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "TSTR target saved: re-evaluate a release to apply it.")
    return redirect("dpportal-dataset-dashboard", dataset.pk)


# Which way is better for each reading (by its metric name's start); the privacy-sanity readings are
# "lower is safer". Metrics not listed are shown without a mark.
HIGHER_IS_BETTER = ("Quality score", "TSTR")
LOWER_IS_BETTER = (
    "1-way TVD",
    "1-Wasserstein",
    "2-way TVD",
    "Suppressed",
    "Fabricated",
    "Association difference",
    "pMSE",
    "MMD",
    "Exact-match rate",
    "DCR share",
    "Worst pair",
    "Label relation gap",
)


def better_side(metric: str, a, b) -> str:
    """'a', 'b' or '' (a tie, a missing value, or a metric with no direction)."""
    if a is None or b is None or a == b:
        return ""
    if metric.startswith(HIGHER_IS_BETTER):
        return "a" if a > b else "b"
    if metric.startswith(LOWER_IS_BETTER):
        return "a" if a < b else "b"
    return ""


def compare_metrics(readings_a: list[dict], readings_b: list[dict]) -> list[dict]:
    """One row per metric of A (and B's metrics A lacks): both values, the better side, both readings."""
    by_b = {r["metric"]: r for r in readings_b}
    names = [r["metric"] for r in readings_a] + [m for m in by_b if m not in {r["metric"] for r in readings_a}]
    by_a = {r["metric"]: r for r in readings_a}
    rows = []
    for name in names:
        a, b = by_a.get(name, {}), by_b.get(name, {})
        rows.append(
            {
                "metric": name,
                "a": a.get("value"),
                "b": b.get("value"),
                "reading_a": a.get("reading", ""),
                "reading_b": b.get("reading", ""),
                "better": better_side(name, a.get("value"), b.get("value")),
            }
        )
    return rows


@login_required
def release_compare(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    picked = []
    for key in ("a", "b"):
        try:
            rid = int(request.GET.get(key, ""))
        except ValueError:
            raise Http404("choose two releases") from None
        release = release_for_owner(request.user, rid)
        if release.dataset_id != dataset.pk:
            raise Http404("not found")
        picked.append(release)
    a, b = picked
    ea, eb = _evaluation(a), _evaluation(b)
    ra = ea.results if ea and ea.status == Evaluation.DONE else None
    rb = eb.results if eb and eb.status == Evaluation.DONE else None
    overlays, metrics = [], []
    if ra and rb:
        by_b = {c["name"]: c for c in rb["columns"]}
        overlays = [
            (
                f"cmp-{i}",
                charts.column_overlay(c, [(f"release {b.pk}", by_b[c["name"]])], synthetic_name=f"release {a.pk}"),
            )
            for i, c in enumerate(ra["columns"])
            if c["name"] in by_b
        ]
        metrics = compare_metrics(ra["readings"], rb["readings"])
    ctx = {
        "dataset": dataset,
        "a": a,
        "b": b,
        "ra": ra,
        "rb": rb,
        "cards": list(zip(_cards(a), _cards(b))),
        "overlays": overlays,
        "metrics": metrics,
    }
    return render(request, "dashboards/compare.html", ctx)
