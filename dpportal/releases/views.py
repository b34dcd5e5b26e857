from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from dpportal.dashboards import charts
from dpportal.accounts.access import dataset_for_owner, release_for_owner, release_for_viewer
from dpportal.ledger import services as ledger
from mechanisms import registry

from . import amounts, confirmations, downloads, guidance, services
from .forms import PARAM_PREFIX, ReleaseForm
from .manifest import manifest, public_report
from .models import Release


def _choices(schema):
    supported = set(registry.supporting(schema)) if schema else set()
    return [
        {
            "name": n,
            "title": registry.get(n).title,
            "supported": n in supported,
            "unsupported_kinds": sorted(schema.kinds - registry.get(n).supported_kinds) if schema else [],
        }
        for n in registry.names()
    ]


def _guide(dataset, schema, values, mechanism):
    """The recommendation for the purpose in ``values`` (GET or POST), or (None, error message)."""
    if schema is None:
        return None, None
    query = guidance.query_with_defaults(dataset, values)
    try:
        guide = guidance.recommendation_for(dataset, query, mechanism=mechanism)
    except amounts.GuidanceError as exc:
        return None, str(exc)
    guide["delta_given"] = bool(values.get("delta"))  # typed in the purpose step (else a default)
    return guide, None


def _submit(request, dataset, form, name: str):
    """Plan the release of a valid form: (release, None), or (None, error) with nothing charged. The values
    are checked before the high-error confirmation is asked for, so a bad value is named first."""
    req = services.ReleaseRequest(
        mechanism=name,
        epsilon=form.cleaned_data["epsilon"],
        delta=form.cleaned_data.get("delta") or "0",
        params=form.params(),
        rows=form.cleaned_data["rows"],
    )
    try:
        checked = services.check_request(dataset, req)
        if "confirm_high_error" in form.fields and not form.cleaned_data.get("confirm_high_error"):
            form.add_error("confirm_high_error", form.fields["confirm_high_error"].error_messages["required"])
            return None, None
        return services.plan_release(dataset, request.user, req, confirmed=_confirmed(form), checked=checked), None
    except services.ReleaseRequestError as exc:
        return None, str(exc)


def _confirmed(form) -> str:
    """The warnings the steward ticked, for the reservation's ledger entry."""
    ticked = [
        form.fields[name].label
        for name in ("confirm_would_fail", "confirm_high_error")
        if name in form.fields and form.cleaned_data.get(name)
    ]
    return "; ".join(f"confirmed by the steward: {label}" for label in ticked)


def _high_error(dataset, cls, values: dict, purpose) -> str | None:
    params = {k[len(PARAM_PREFIX) :]: v for k, v in values.items() if k.startswith(PARAM_PREFIX)}
    query = guidance.purpose_query(purpose)
    return confirmations.high_error_reason(
        dataset, cls.name, values.get("epsilon"), values.get("delta"), params=params, query=query
    )


def _initial(request, estimating: bool) -> dict | None:
    """The values to show: the posted ones when re-showing for an estimate; on a GET, parameters given
    in the link (``param_epochs=...``), which then also decide the estimate shown."""
    if estimating:
        return request.POST.dict()
    if request.method == "GET":
        return {k: v for k, v in request.GET.items() if k.startswith(PARAM_PREFIX)} or None
    return None


@login_required
def release_new(request, pk):
    dataset = dataset_for_owner(request.user, pk)
    schema = dataset.confirmed_schema()
    choices = _choices(schema)
    supported = [c["name"] for c in choices if c["supported"]]
    asked = request.POST.get("mechanism") or request.GET.get("mechanism")
    guide_values = request.POST if request.method == "POST" else request.GET
    guide, guide_error = _guide(dataset, schema, guide_values, asked)
    name = asked or (guide and guide["recommended"]) or (supported[0] if supported else None)
    cls = registry.get(name) if name in supported else None
    estimating = request.method == "POST" and "estimate" in request.POST  # re-show the values, no errors yet
    form = ReleaseForm(
        request.POST if request.method == "POST" and not estimating else None,
        mechanism_cls=cls,
        schema=schema,
        n_rows=dataset.n_rows,
        initial=_initial(request, estimating),
    )
    error = None
    prediction = form.apply_guide(guide)  # purpose step carried over; would-fail needs a confirmation
    if cls is not None:
        form.ask_high_error_confirmation(_high_error(dataset, cls, form.effective_values(), guide_values))
    if schema is None:
        error = "Confirm the schema before planning a release."
    elif cls is None:
        error = f"Choose a mechanism that supports this schema ({', '.join(supported) or 'none available'})."
        refused = next((c for c in choices if c["name"] == name and c["unsupported_kinds"]), None)
        if refused:
            kinds = " and ".join(refused["unsupported_kinds"])
            error = (
                f"{name} does not support {kinds} columns: mark them excluded in the schema to use it, "
                f"or choose a mechanism that supports this schema ({', '.join(supported) or 'none available'})."
            )
    elif request.method == "POST" and not estimating and form.is_valid():
        release, error = _submit(request, dataset, form, name)
        if release is not None:
            messages.success(request, f"Release {release.pk} queued; its cost is reserved on the budget.")
            return redirect("dpportal-release", release.pk)
    mech_info = cls.describe() if cls is not None else None  # a dict: templates would call a class
    estimate = runtime_estimate = None
    values = form.effective_values()  # what "Reserve budget and release" would submit now
    if cls is not None and schema is not None and hasattr(cls, "memory_estimate"):
        estimate = services.memory_estimate(cls, schema, dataset.n_rows, values)
    if cls is not None and schema is not None:
        runtime_estimate = services.form_estimate(name, schema, dataset.n_rows, values)
    budget = ledger.remaining(dataset)
    takes_delta = cls is not None and not form.fields["delta"].widget.is_hidden
    ctx = {
        "dataset": dataset,
        "form": form,
        "choices": choices,
        "mechanism": mech_info,
        "error": error,
        "budget": budget,
        "delta_note": amounts.delta_note(budget, values.get("delta")) if takes_delta else None,
        "memory_estimate": estimate,
        "runtime_estimate": runtime_estimate,
        "advice": cls.advice(schema) if cls is not None and schema is not None else [],
    }
    advanced_open = form.params_have_errors() or "parameter '" in (error or "")  # show the named parameter
    return render(
        request,
        "releases/new.html",
        {
            **ctx,
            "advanced_open": advanced_open,
            **guidance.page_context(dataset, schema, guide_values, guide, guide_error, prediction),
            "curve_figure": charts.accuracy_curve(guide, budget) if guide and guide.get("curve") else None,
        },
    )


@login_required
def release_detail(request, pk):
    release = release_for_viewer(request.user, pk)
    owner = release.dataset.owner_id == request.user.pk
    report = public_report(release, for_owner=owner)
    ctx = {
        "release": release,
        "dataset": release.dataset,
        "is_owner": owner,
        "report": report,
        "report_json": json.dumps(report, indent=2),
        "timing": services.timing(release) if owner else None,
    }
    if owner:
        ctx["dashboard_url"] = reverse("dpportal-release-dashboard", args=[release.pk])
        ctx["budget"] = ledger.remaining(release.dataset)
        ctx["draws"] = release.origin().draws.all()
        from dpportal.dashboards.services import quality_of

        ctx["quality"] = quality_of(release)
        from dpportal.dashboards.risk import report_of

        ctx["risk"] = report_of(release.origin())  # a draw shows its original release's report
    return render(request, "releases/detail.html", ctx)


@login_required
def release_report(request, pk):
    """The privacy report as a printable page, for the steward and granted analysts (the manifest's facts)."""
    release = release_for_viewer(request.user, pk)
    owner = release.dataset.owner_id == request.user.pk
    facts = manifest(release, for_owner=owner)
    report = public_report(release, for_owner=owner) or {}
    return render(
        request,
        "releases/report.html",
        {
            "release": release,
            "dataset": release.dataset,
            "facts": facts,
            "has_report": bool(report),
            "guarantee_meaning": report.get("guarantee_meaning", ""),
            "is_owner": owner,
            "parameters": sorted((facts.get("parameters") or {}).items()),
        },
    )


def status_dict(release: Release, *, for_owner: bool) -> dict:
    data = {
        "id": release.pk,
        "status": release.status,
        "progress": round(release.progress * 100, 1),
        "stage": release.stage if for_owner else release.status,
        "finished": release.is_finished,
    }
    if for_owner and release.status in (Release.FAILED, Release.CANCELLED):
        data["error"] = release.error
    if for_owner:
        data["can_cancel"] = release.can_cancel
        data["cancel_note"] = release.cancel_note
        data["cancel_requested"] = release.cancel_requested_at is not None
        data.update(services.timing(release))
    return data


@login_required
def release_status(request, pk):
    release = release_for_viewer(request.user, pk)
    return JsonResponse(status_dict(release, for_owner=release.dataset.owner_id == request.user.pk))


def csv_response(release: Release, *, spreadsheet: bool = False) -> HttpResponse:
    """The exact analysis CSV, or its spreadsheet-safe variant (formula guard, mechanisms.io)."""
    if release.status != Release.DONE or not release.output_file or not release.output_path().is_file():
        raise Http404("not available")
    name = f"dpportal-release-{release.pk}-{release.mechanism}{'-spreadsheet' if spreadsheet else ''}.csv"
    schema = release.public_schema() if spreadsheet else None
    return downloads.csv_download(release.output_path(), name, schema, spreadsheet=spreadsheet)  # streamed


@login_required
def release_download(request, pk):
    return csv_response(release_for_viewer(request.user, pk))


@login_required
def release_download_spreadsheet(request, pk):
    return csv_response(release_for_viewer(request.user, pk), spreadsheet=True)


@login_required
def release_manifest(request, pk):
    release = release_for_viewer(request.user, pk)
    if release.status != Release.DONE:
        raise Http404("not available")
    resp = JsonResponse(
        manifest(release, for_owner=release.dataset.owner_id == request.user.pk), json_dumps_params={"indent": 2}
    )
    resp["Content-Disposition"] = f'attachment; filename="dpportal-release-{release.pk}-manifest.json"'
    return resp


@login_required
@require_POST
def release_draw(request, pk):
    release = release_for_owner(request.user, pk)
    try:
        draw = services.draw_more(release, request.user, request.POST.get("rows"))
    except services.ReleaseRequestError as exc:
        messages.error(request, str(exc))
        return redirect("dpportal-release", release.pk)
    messages.success(request, f"Drawing {draw.rows:,} more rows (no privacy cost).")
    return redirect("dpportal-release", draw.pk)


RELEASE_ACTIONS = {
    "withdraw": (
        lambda r: services.set_withdrawn(r, True),
        "Release {pk} withdrawn: analysts no longer see it "
        "(copies already downloaded cannot be recalled; its privacy cost stays spent).",
    ),
    "restore": (lambda r: services.set_withdrawn(r, False), "Release {pk} is available to analysts again."),
    "hide": (lambda r: services.set_hidden(r, True), "Release {pk} hidden from your lists (the ledger keeps it)."),
    "unhide": (lambda r: services.set_hidden(r, False), "Release {pk} shown in your lists again."),
}


@login_required
@require_POST
def release_edit(request, pk):
    """The steward names and annotates a release, withdraws it from analysts, or hides it."""
    release = release_for_owner(request.user, pk)
    action = request.POST.get("action", "")
    try:
        if action == "label":
            services.label_release(release, title=request.POST.get("title"), note=request.POST.get("note"))
            messages.success(request, f"Release {release.pk} name and note saved.")
        elif action in RELEASE_ACTIONS:
            change, text = RELEASE_ACTIONS[action]
            change(release)
            messages.success(request, text.format(pk=release.pk))
        else:
            messages.error(request, f"unknown action {action[:40]!r}; use label, withdraw, restore, hide or unhide")
    except services.ReleaseRequestError as exc:
        messages.error(request, f"Release {release.pk} not changed: {exc}")
    return redirect("dpportal-release", release.pk)


@login_required
@require_POST
def release_cancel(request, pk):
    release = release_for_owner(request.user, pk)
    try:
        release = services.cancel(release)
    except services.ReleaseRequestError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _cancel_message(release))
    return redirect("dpportal-release", release.pk)


def _cancel_message(release: Release) -> str:
    if release.is_draw:
        when = "" if release.status == Release.CANCELLED else " at its next progress point"
        return f"Draw {release.pk} cancelled{when}: a draw reserves no budget, so nothing is refunded or spent."
    if release.status == Release.CANCELLED:
        return f"Release {release.pk} cancelled before it started; its reserved budget was refunded."
    return (
        f"Cancelling release {release.pk}: it stops at its next progress point. The budget is refunded "
        "only if it had not read the data yet."
    )
