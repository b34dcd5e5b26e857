"""The API of a release's tables (docs/api.md, "Tables"): the list and each table as JSON or CSV, for whoever
may download the release's synthetic CSV. A draw of more rows has no tables of its own: it answers with its
original release's (``release`` names it)."""

from __future__ import annotations

from django.http import JsonResponse

from dpportal.accounts.access import release_for_viewer
from dpportal.releases import tables as release_tables
from dpportal.releases.models import Release
from dpportal.releases.tables.views import table_csv_response

from .auth import ApiError, api_view

FORMATS = ("json", "csv")


def _data(release: Release) -> dict:
    if release.status != Release.DONE:
        raise ApiError("the release is not finished", 404)
    data = release_tables.load(release)
    if data is None:
        raise ApiError(
            f"release {release.origin().pk} ({release.mechanism}) has no tables: they come with baseline, mst, aim "
            "and crosstabs releases, whose mechanisms measure noisy marginals",
            404,
        )
    return data


def _url(release: Release, index: int | None = None) -> str:
    base = f"/api/releases/{release.origin().pk}/tables/"
    return base if index is None else f"{base}{index}/"


@api_view("GET")
def tables(request, pk):
    """GET /api/releases/{id}/tables/: each table's index, columns, number of cells and noise."""
    release = release_for_viewer(request.user, pk)
    data = _data(release)
    items = [
        {**s, "url": _url(release, s["index"]), "csv": _url(release, s["index"]) + "?format=csv"}
        for s in release_tables.summaries(data)
    ]
    facts = {k: v for k, v in data.items() if k != "tables"}
    return JsonResponse({"release": release.origin().pk, **facts, "tables": items})


@api_view("GET")
def table(request, pk, index):
    """GET /api/releases/{id}/tables/{k}/[?format=csv]: one table, every cell (the tables' JSON contract)."""
    release = release_for_viewer(request.user, pk)
    fmt = request.GET.get("format", "json")
    if fmt not in FORMATS:
        raise ApiError(f"format must be one of {', '.join(FORMATS)}, got format={fmt[:40]!r}")
    data = _data(release)
    t = release_tables.table(data, index)
    if t is None:
        raise ApiError(f"no table {index}: release {release.origin().pk} has {len(data['tables'])} (0 to n-1)", 404)
    if fmt == "csv":
        return table_csv_response(release, t)
    return JsonResponse({"release": release.origin().pk, **t})
