"""Ledger review pages: steward-only (everyone else gets 404, as for any dataset they cannot see)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

from dpportal.accounts.access import dataset_for_owner

from . import services

# sortable columns: query value -> model field (anything else falls back to the sequence number)
SORTS = {
    "seq": "seq",
    "time": "created_at",
    "kind": "kind",
    "user": "username",
    "release": "release_pk",
    "mechanism": "mechanism",
    "epsilon": "eps_units",
    "delta": "delta_units",
    "guarantee": "guarantee",
}


@login_required
def ledger_page(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    sort = request.GET.get("sort", "seq")
    sort = sort if sort in SORTS else "seq"
    descending = request.GET.get("dir") == "desc"
    order = ("-" if descending else "") + SORTS[sort]
    rows = services.entries(dataset).order_by(order, "seq")
    ctx = {
        "dataset": dataset,
        "entries": rows,
        "sort": sort,
        "descending": descending,
        "columns": [
            (key, label)
            for key, label in (
                ("seq", "#"),
                ("time", "When"),
                ("kind", "Entry"),
                ("user", "By"),
                ("release", "Release"),
                ("mechanism", "Mechanism"),
                ("epsilon", "ε"),
                ("delta", "δ"),
                ("guarantee", "Guarantee"),
            )
        ],
        "chain": services.verify_dataset(dataset.pk),
        "tighter": services.tighter_accounting(dataset),
    }
    return render(request, "ledger/ledger.html", ctx)


@login_required
def ledger_csv(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    response = HttpResponse(services.entries_csv(dataset), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="ledger-dataset-{dataset.pk}.csv"'
    return response


@login_required
def ledger_json(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    response = JsonResponse(services.entries_json(dataset), json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'attachment; filename="ledger-dataset-{dataset.pk}.json"'
    return response
