from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from dpportal.accounts.access import dataset_for_owner, dataset_for_viewer, require_steward, visible_datasets
from dpportal.accounts.models import Profile
from dpportal.ledger import services as ledger
from dpportal.releases import services as release_services
from dpportal.releases.models import Release
from mechanisms.dates import UNITS
from mechanisms.draft import natural_domain
from mechanisms.schema import KINDS, Schema

from . import checks, services
from .forms import BudgetForm, GrantForm, SchemaImportForm, UploadForm
from .upload import UploadError, parse_markers, store_upload


@login_required
def home(request):
    return redirect("dpportal-datasets")


@login_required
def dataset_list(request):
    datasets = list(visible_datasets(request.user))
    for d in datasets:
        d.is_owner = d.owner_id == request.user.pk
        d.budget_text = ledger.remaining_text(d) if d.is_owner else ""
    return render(request, "datasets/list.html", {"datasets": datasets})


@login_required
def dataset_upload(request):
    require_steward(request.user)
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            markers = parse_markers(
                form.cleaned_data["markers"], empty_is_missing=form.cleaned_data["empty_is_missing"]
            )
            dataset = store_upload(
                form.cleaned_data["file"], owner=request.user, name=form.cleaned_data["name"], markers=markers
            )
        except UploadError as exc:
            form.add_error("file", str(exc))
        else:
            messages.success(request, f"Uploaded {dataset.n_rows:,} rows. Review the schema suggestions next.")
            return redirect("dpportal-schema", dataset.pk)
    return render(request, "datasets/upload.html", {"form": form})


@login_required
def dataset_detail(request, pk):
    dataset = dataset_for_viewer(request.user, pk)
    owner = dataset.owner_id == request.user.pk
    releases = dataset.releases.all() if owner else dataset.releases.for_analysts()
    show_hidden = owner and request.GET.get("hidden") == "1"
    n_hidden = releases.filter(hidden=True).count() if owner else 0
    if owner and not show_hidden:
        releases = releases.filter(hidden=False)
    if owner:  # the quality column: the evaluations' scores, not their whole results
        from dpportal.dashboards.services import with_digest

        releases = with_digest(releases)
    releases = list(releases.select_related("parent"))
    ctx = {
        "dataset": dataset,
        "is_owner": owner,
        "releases": releases,
        "show_hidden": show_hidden,
        "n_hidden": n_hidden,
    }
    if owner:
        from dpportal.dashboards.services import mark_best_quality

        mark_best_quality(releases)
        ctx["budget"] = ledger.remaining(dataset)
        ctx["analysts"] = dataset.analysts.order_by("username")
        ctx["grant_form"] = GrantForm()
        ctx["dashboard_url"] = reverse("dpportal-dataset-dashboard", args=[dataset.pk])
        ctx["date_notes"] = services.date_format_notes(dataset.confirmed_schema())
    return render(request, "datasets/detail.html", ctx)


def _column_rows(dataset, schema, post=None):
    """Per column: the working values (posted, confirmed, or suggested), the suggestion, and whether
    the steward ticked it as reviewed (a confirmed schema counts as reviewed; excluded columns publish
    nothing and need no review)."""
    draft = dataset.schema_draft or {}
    suggested = {c["name"]: c for c in draft.get("columns", [])}
    current = {c.name: c.to_dict() for c in schema.columns} if schema else {}
    rows = []
    for i, name in enumerate(dataset.header):
        cur = dict(current.get(name) or suggested.get(name) or {"name": name, "kind": "excluded"})
        cur["special"] = services.special_text(cur.get("special", ()))
        ok = bool(dataset.schema) or cur.get("kind") == "excluded"
        if post is not None:
            cur = {f: post.get(f"col-{i}-{f}", "") for f in services.COLUMN_FIELDS if f != "categories"}
            cur["categories"] = [c for c in post.get(f"col-{i}-categories", "").splitlines() if c.strip()]
            ok = bool(post.get(f"col-{i}-ok")) or cur["kind"] == "excluded"
        rows.append(
            {
                "i": i,
                "name": name,
                "cur": cur,
                "suggested": suggested.get(name),
                "ok": ok,
                "rare": _still_listed((draft.get("rare_categories") or {}).get(name, []), cur),
            }
        )
    return rows


def _still_listed(rare: list[str], cur: dict) -> list[str]:
    """The rare categories (flagged at upload) that the column still publishes."""
    listed = set(cur.get("categories") or ()) if cur.get("kind") == "categorical" else set()
    return [c for c in rare if c in listed]


def _missing_output(dataset, schema, post) -> str:
    """The missing-value marker the exported file writes: posted, confirmed, or the draft's suggestion."""
    if post is not None:
        return post.get("missing_output", "")
    if schema is not None and schema.missing_output is not None:
        return schema.missing_output
    return (dataset.schema_draft or {}).get("missing_output") or ""


def _bound_note(name: str, sug: dict) -> str:
    """Where a suggested numeric range comes from, in words (a natural domain, or the data's extremes)."""
    if sug.get("kind") not in ("continuous", "integer") or sug.get("lower") is None or sug.get("granularity"):
        return ""
    lo, hi = sug["lower"], sug["upper"]
    natural = natural_domain(name, lo, hi, integer=sug["kind"] == "integer")
    note = (
        f"the natural range of {natural[2]}"
        if natural and (natural[0], natural[1]) == (lo, hi)
        else "the data's minimum and maximum, or where fewer than 10 rows lie beyond (a thin tail, top-coded)"
    )
    if hi in (sug.get("special") or ()):
        note += f"; {hi:g} looks like a top code (many rows at the maximum, far above the rest)"
    return note


@login_required
def dataset_schema(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    schema = dataset.working_schema()
    error = None
    check = checks.latest(dataset)
    if check is not None and check.status == check.FAILED and request.method != "POST":
        if dataset.schema_confirmed_at is None or check.created_at > dataset.schema_confirmed_at:
            schema = Schema.from_dict(check.schema)  # the values the steward sent, with the problem
            error = f"The schema was not confirmed: {check.error}"
    markers = schema.missing_markers if schema else dataset.missing_markers
    rows = _column_rows(dataset, schema, request.POST if request.method == "POST" else None)
    dp_bounds = release_services.latest_bounds(dataset)
    dp_categories = release_services.latest_categories(dataset)
    for r in rows:
        r["dp"] = dp_bounds.get(r["name"])
        r["dpcat"] = dp_categories.get(r["name"])
        cats = r["cur"].get("categories") or [] if r["cur"].get("kind") == "categorical" else []
        r["marker_labels"] = [c for c in cats if c and c in markers]  # a marker kept as a category: shown
        r["bound_note"] = _bound_note(r["name"], r["suggested"] or {}) if dataset.draft_source == "data" else ""
    bulk_note = None
    if request.method == "POST" and request.POST.get("bulk"):
        try:  # a bulk action edits the working values on the page; nothing is saved until "Confirm"
            bulk_note = services.apply_bulk(rows, request.POST, dp_bounds=dp_bounds, dp_categories=dp_categories)
        except services.SchemaRejected as exc:
            error = str(exc)
    elif request.method == "POST":
        try:
            if not request.POST.get("public_ack"):
                raise services.SchemaRejected(
                    "tick the box to confirm that every value on this page is public "
                    "knowledge (not learned from this private file)"
                )
            markers = parse_markers(
                request.POST.get("markers", ""), empty_is_missing=bool(request.POST.get("empty_is_missing"))
            )
            new = services.schema_from_post(dataset, request.POST, markers)
            check = checks.request_confirmation(dataset, new, request.user)
        except (services.SchemaRejected, UploadError) as exc:
            error = str(exc)
        else:
            if check is not None:  # a big file: every record is checked on a worker (checks.py)
                return redirect("dpportal-schema-check", dataset.pk)
            messages.success(request, "Schema confirmed as public metadata.")
            return redirect("dpportal-dataset", dataset.pk)
    ctx = {
        "dataset": dataset,
        "error": error,
        "kinds": services.FORM_KINDS,
        "granularities": list(UNITS),
        "import_form": SchemaImportForm(),
        "max_codes": services.MAX_CODES,
        "rows": rows,
        "review": services.review_count(rows),
        "bulk_note": bulk_note,
        "bulk_kinds": ("all",) + KINDS,
        "dp_bounds": dp_bounds or dp_categories,
        "bounds_epsilon": release_services.DEFAULT_BOUNDS_EPSILON,
        "discovery_delta": release_services.DEFAULT_DISCOVERY_DELTA,
        "bounds_pending": dataset.releases.filter(
            mechanism=release_services.BOUNDS_MECHANISM, status__in=(Release.QUEUED, Release.RUNNING)
        ),
        "budget": ledger.remaining(dataset),
        "markers_text": ", ".join(m for m in markers if m),
        "empty_is_missing": "" in markers,
        "rare_k": (dataset.schema_draft or {}).get("rare_k"),
        "has_rare": any(r["rare"] for r in rows),
        "missing_output": _missing_output(dataset, schema, request.POST if request.method == "POST" else None),
        "markers_meaning": services.markers_meaning(markers),
        "rules_text": request.POST.get("rules", "") if request.method == "POST" else services.rules_text(schema),
        "confirmed": bool(dataset.schema),
        "draft_source": dataset.draft_source,
        "schema_check": check if check is not None and not check.is_finished else None,
    }
    return render(request, "datasets/schema.html", ctx)


@login_required
def dataset_schema_check(request, pk):
    """The latest worker check of a schema against the file: its progress (JSON for the page's poller),
    then the confirmed schema or the problem found."""
    dataset = dataset_for_owner(request.user, pk)
    check = checks.latest(dataset)
    if check is None:  # every confirmation so far was checked in the request
        return redirect("dpportal-schema", dataset.pk)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(checks.check_dict(check))
    return render(request, "datasets/schema_check.html", {"dataset": dataset, "check": check})


@login_required
@require_POST
def dataset_schema_dp_bounds(request, pk):
    """Queue a private estimate of numeric bounds (charged to the budget like a release)."""
    dataset = dataset_for_owner(request.user, pk)
    try:
        release = release_services.plan_bounds(
            dataset,
            request.user,
            columns=request.POST.getlist("bounds_columns"),
            epsilon=request.POST.get("bounds_epsilon"),
            delta=request.POST.get("bounds_delta"),
        )
    except release_services.ReleaseRequestError as exc:
        messages.error(request, f"Bounds not estimated: {exc}")
    else:
        messages.success(
            request,
            f"Estimating bounds or categories of {len(release.params['columns'])} column(s) privately "
            f"(release {release.pk}; epsilon {release.epsilon} reserved). Reload this page "
            "when it is done, then use the estimates.",
        )
    return redirect("dpportal-schema", dataset.pk)


@login_required
def dataset_schema_export(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    try:
        data = services.export_schema(dataset)
    except services.SchemaRejected:
        raise Http404("no schema") from None
    resp = HttpResponse(json.dumps(data, indent=2), content_type="application/json")
    resp["Content-Disposition"] = f'attachment; filename="schema-{dataset.pk}.json"'
    return resp


@login_required
@require_POST
def dataset_schema_import(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    form = SchemaImportForm(request.POST, request.FILES)
    try:
        if not form.is_valid():
            raise services.SchemaRejected("upload a schema JSON file or paste its text")
        upload = form.cleaned_data.get("schema_file")
        text = upload.read(2_000_001) if upload else form.cleaned_data.get("schema_text", "").encode()
        if not text.strip():
            raise services.SchemaRejected("upload a schema JSON file or paste its text")
        if len(text) > 2_000_000:
            raise services.SchemaRejected("the schema JSON is larger than 2 MB")
        services.import_schema(dataset, services.parse_schema_json(text.decode("utf-8", errors="replace")))
    except services.SchemaRejected as exc:
        messages.error(request, f"Schema not imported: {exc}")
    else:
        messages.success(request, "Schema imported as a draft: review and confirm it below.")
    return redirect("dpportal-schema", dataset.pk)


@login_required
def dataset_budget(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    form = BudgetForm(request.POST or None, initial=services.budget_initial(ledger.remaining(dataset)))
    if request.method == "POST" and form.is_valid():
        try:
            entry = ledger.set_caps(
                dataset, epsilon=form.cleaned_data["epsilon"], delta=form.cleaned_data["delta"], user=request.user
            )
        except ledger.LedgerError as exc:
            form.add_error(None, str(exc))
        else:
            if entry is not None and getattr(entry, "warning", ""):
                messages.warning(request, entry.warning)
            messages.success(
                request,
                "Privacy budget saved: epsilon cap {}, delta cap {}.".format(
                    form.cleaned_data["epsilon"], form.cleaned_data["delta"]
                )
                if entry is not None
                else "Privacy budget unchanged.",
            )
            return redirect("dpportal-dataset", dataset.pk)
    ctx = {"dataset": dataset, "form": form, "budget": ledger.remaining(dataset), "presets": services.BUDGET_PRESETS}
    return render(request, "datasets/budget.html", ctx)


@login_required
@require_POST
def dataset_grant(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    form = GrantForm(request.POST)
    if form.is_valid() and form.cleaned_data["action"] == "create":
        return _create_analyst(request, dataset, form.cleaned_data["username"])
    if form.is_valid():
        name = form.cleaned_data["username"]
        user = get_user_model().objects.filter(username=name, profile__role=Profile.ANALYST).first()
        if user is None and get_user_model().objects.filter(username=name).exists():
            messages.error(
                request,
                f"no analyst named {name!r}: that name belongs to an account that is not an "
                "analyst (stewards and other accounts cannot be granted releases)",
            )
        elif user is None:
            messages.error(
                request,
                f'no analyst named {name!r}: tick "create the account" to create it and grant access in one step',
            )
        elif form.cleaned_data["action"] == "grant":
            dataset.analysts.add(user)
            messages.success(request, f"{user.username} can now download this dataset's releases.")
        else:
            dataset.analysts.remove(user)
            messages.success(request, f"{user.username} no longer has access.")
    return redirect("dpportal-dataset", dataset.pk)


@login_required
@require_POST
def dataset_raw_delete(request, pk):
    """Delete the raw file (releases, schema and ledger stay; no budget is freed)."""
    from .lifecycle import RawDeleteRefused, delete_raw

    dataset = dataset_for_owner(request.user, pk)
    if request.POST.get("confirm") != "delete":
        messages.error(request, "Raw data not deleted: tick the box to confirm the deletion.")
        return redirect("dpportal-dataset", dataset.pk)
    try:
        delete_raw(dataset)
    except RawDeleteRefused as exc:
        messages.error(request, f"Raw data not deleted: {exc}")
    else:
        messages.success(request, "Raw data deleted. Releases, the schema and the ledger remain; no budget was freed.")
    return redirect("dpportal-dataset", dataset.pk)


def _create_analyst(request, dataset, username: str):
    """Create an analyst account with a one-time password, grant it this dataset, and show the password
    once, on this response only (never in a message cookie, a log or the URL)."""
    from dpportal.accounts.services import AccountRefused, create_analyst

    try:
        user, password = create_analyst(username, created_by=request.user)
    except AccountRefused as exc:
        messages.error(request, f"No account created: {exc}")
        return redirect("dpportal-dataset", dataset.pk)
    dataset.analysts.add(user)
    resp = render(request, "datasets/analyst_created.html", {"dataset": dataset, "analyst": user, "password": password})
    resp["Cache-Control"] = "no-store"
    return resp
