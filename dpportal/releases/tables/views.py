"""The pages of a release's tables: one page per table (a bar chart of the noisy counts with their 95%
intervals and of the estimates, the table, the noise), and the downloads (CSV, JSON, the whole tables.json).

Whoever may download the synthetic CSV may see them (``release_for_viewer``). A draw of more rows has no
tables of its own: its table pages lead to its original release's."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render

from dpportal.accounts.access import release_for_viewer
from dpportal.dashboards import charts

from .. import downloads
from .. import tables as release_tables

ERROR_BARS = "#1b2a41"
MAX_AXIS_LABEL = 40


def _table_of(request, pk, index, release=None):
    """The release (as its viewer may see it) and its table ``index``; 404 when it has none."""
    release = release or release_for_viewer(request.user, pk)
    data = release_tables.load(release)
    if data is None:
        raise Http404("this release has no tables")
    t = release_tables.table(data, index)
    if t is None:
        raise Http404(f"no table {index}: this release has {len(data.get('tables', []))}")
    return release, t


def figure(t: dict, cells: list[dict]) -> dict:
    """Bars of the noisy counts with their 95% intervals as error bars, and of the estimates beside them."""
    names = [" · ".join(str(v) for v in c["values"]) for c in cells]
    short = [n if len(n) <= MAX_AXIS_LABEL else n[: MAX_AXIS_LABEL - 1] + "…" for n in names]
    if len(set(short)) < len(short):  # cut labels that collide would merge their bars
        short = [f"{i + 1}. {s}" for i, s in enumerate(short)]

    noisy = [c.get("noisy") for c in cells]
    plus = [None if c.get("hi") is None or c.get("noisy") is None else c["hi"] - c["noisy"] for c in cells]
    minus = [None if c.get("lo") is None or c.get("noisy") is None else c["noisy"] - c["lo"] for c in cells]
    data = [
        {
            "type": "bar",
            "name": "noisy count (95% interval)",
            "x": short,
            "y": noisy,
            "customdata": [[n, c.get("lo"), c.get("hi")] for n, c in zip(names, cells)],
            "hovertemplate": "%{customdata[0]}<br>noisy %{y}, 95% interval [%{customdata[1]}, %{customdata[2]}]"
            "<extra></extra>",
            "marker": {"color": charts.SYNTHETIC},
            "error_y": {
                "type": "data",
                "symmetric": False,
                "array": plus,
                "arrayminus": minus,
                "color": ERROR_BARS,
                "thickness": 1.2,
            },
        },
        {
            "type": "bar",
            "name": "estimate",
            "x": short,
            "y": [c.get("estimate") for c in cells],
            "customdata": names,
            "hovertemplate": "%{customdata}<br>estimate %{y}<extra></extra>",
            "marker": {"color": charts.OTHER},
        },
    ]
    title = " × ".join(t["columns"]) + f": {release_tables.noise_text(t['noise'])}"
    layout = {
        **charts.BASE_LAYOUT,
        "title": {"text": title, "font": {"size": 14}, "x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top"},
        "barmode": "group",
        "xaxis": {**charts.CATEGORY_AXIS, "automargin": True},
        "yaxis": {"title": {"text": "count"}},
    }
    return {"data": data, "layout": layout}


def _page(request, n_cells: int) -> tuple[int, int, int]:
    pages = max(1, -(-n_cells // release_tables.PAGE_CELLS))
    try:
        page = int(request.GET.get("page", "1"))
    except ValueError:
        page = 1
    page = min(max(page, 1), pages)
    return page, pages, (page - 1) * release_tables.PAGE_CELLS


@login_required
def table_page(request, pk, index):
    release = release_for_viewer(request.user, pk)
    if release.is_draw:
        return redirect("dpportal-release-table", release.parent_id, index)
    release, t = _table_of(request, pk, index, release)
    page, pages, start = _page(request, len(t["cells"]))
    cells = t["cells"][start : start + release_tables.PAGE_CELLS]
    return render(
        request,
        "releases/table.html",
        {
            "release": release,
            "dataset": release.dataset,
            "table": t,
            "index": index,
            "cells": cells,
            "figure": figure(t, cells),
            "noise_text": release_tables.noise_text(t["noise"]),
            "noise_json": json.dumps(t["noise"], indent=1),
            "page": page,
            "pages": pages,
            "first": start + 1,
            "last": start + len(cells),
            "n_cells": len(t["cells"]),
            "previous_page": page - 1 if page > 1 else None,
            "next_page": page + 1 if page < pages else None,
        },
    )


def table_csv_response(release, t: dict) -> HttpResponse:
    name = release_tables.file_name(release, t["index"], "csv")
    return downloads.streamed_response(release_tables.csv_pieces(t), name)


def table_json_response(release, t: dict) -> HttpResponse:
    resp = HttpResponse(json.dumps(t, indent=1), content_type="application/json")
    resp["Content-Disposition"] = f'attachment; filename="{release_tables.file_name(release, t["index"], "json")}"'
    return resp


@login_required
def table_csv(request, pk, index):
    release, t = _table_of(request, pk, index)
    return table_csv_response(release, t)


@login_required
def table_json(request, pk, index):
    release, t = _table_of(request, pk, index)
    return table_json_response(release, t)


@login_required
def tables_file(request, pk):
    """Every table of the release: the tables.json file as the worker wrote it, sent from disk in blocks."""
    release = release_for_viewer(request.user, pk)
    p = release_tables.path(release)
    if p is None:
        raise Http404("this release has no tables")
    name = f"dpportal-release-{release.origin().pk}-tables.json"
    return downloads.file_response(p, name, "application/json")
