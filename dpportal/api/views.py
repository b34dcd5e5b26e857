"""The JSON API: the same workflow as the web pages, through the same services (docs/api.md)."""

from __future__ import annotations

import contextlib

from django.contrib.auth import authenticate
from django.http import JsonResponse

from dpportal.accounts import throttle
from dpportal.accounts.models import must_change_password
from dpportal.accounts.access import (
    dataset_for_owner,
    dataset_for_viewer,
    release_for_owner,
    release_for_viewer,
    require_steward,
    visible_datasets,
)
from dpportal.datasets import checks as schema_checks
from dpportal.datasets import services as dataset_services
from dpportal.datasets.upload import UploadError, parse_markers, store_upload
from dpportal.ledger import services as ledger
from dpportal.releases import amounts, confirmations, guidance
from dpportal.releases import services as release_services
from dpportal.releases.manifest import manifest, public_report
from dpportal.releases.models import Release
from dpportal.releases.views import csv_response, status_dict
from mechanisms import registry

from .auth import ApiError, api_view, json_body
from .models import DEFAULT_NAME, MAX_TOKENS_PER_USER, Token, check_name


# Refusals whose message is meant for the user: inside ``refused()`` each becomes an API error with it.
DOMAIN_ERRORS = (
    UploadError,
    dataset_services.SchemaRejected,
    ledger.LedgerError,
    amounts.GuidanceError,
    release_services.ReleaseRequestError,
)


@contextlib.contextmanager
def refused(status: int = 400, also: tuple[type[Exception], ...] = ()):
    """Map a domain refusal raised in the block (DOMAIN_ERRORS, plus ``also``) to ApiError(message, status)."""
    try:
        yield
    except DOMAIN_ERRORS + also as exc:
        raise ApiError(str(exc), status) from None


def dataset_dict(dataset, *, for_owner: bool) -> dict:
    data = {"id": dataset.pk, "name": dataset.name, "url": f"/api/datasets/{dataset.pk}/"}
    if not for_owner:
        return data
    data.update(
        rows=dataset.n_rows,
        columns=dataset.header,
        encoding=dataset.encoding,
        delimiter=dataset.delimiter,
        missing_markers=dataset.missing_markers,
        original_filename=dataset.original_filename,
        created_at=dataset.created_at.isoformat(),
        raw_data=dataset.has_raw,
        schema_confirmed=bool(dataset.schema),
        schema=dataset.schema,
        schema_draft=dataset.schema_draft,
        schema_draft_source=dataset.draft_source,
        schema_draft_note=(
            "SUGGESTIONS computed from the private data: confirm them as public knowledge "
            "(PUT /schema/) before any release"
        ),
        budget=ledger.remaining(dataset),
        supported_mechanisms=registry.supporting(dataset.confirmed_schema()) if dataset.schema else [],
    )
    check = schema_checks.latest(dataset)
    data["schema_check"] = schema_checks.check_dict(check) if check else None
    return data


def release_dict(release: Release, *, for_owner: bool) -> dict:
    data = status_dict(release, for_owner=for_owner)
    data.update(
        dataset=release.dataset_id,
        mechanism=release.mechanism,
        params=release.params,
        epsilon=release.epsilon,
        delta=release.delta,
        rows=release.rows,
        drawn_from_release=release.parent_id,
        url=f"/api/releases/{release.pk}/",
        privacy=public_report(release, for_owner=for_owner),
        title=release.title,
    )
    if release.status == Release.DONE:
        data["synthetic_csv"] = f"/api/releases/{release.pk}/synthetic.csv"
        data["manifest"] = f"/api/releases/{release.pk}/manifest.json"
        data["tables"] = f"/api/releases/{release.origin().pk}/tables/"  # 404 when its mechanism measured none
    if for_owner:
        data.update(
            created_at=release.created_at.isoformat(),
            data_touched=release.data_touched,
            started_at=release.started_at and release.started_at.isoformat(),
            finished_at=release.finished_at and release.finished_at.isoformat(),
            note=release.note,
            withdrawn=release.is_withdrawn,
            hidden=release.hidden,
        )
        from dpportal.dashboards.services import quality_of

        data["quality"] = quality_of(release)  # steward-only: computed from the raw data
    return data


@api_view("POST", auth=False)
def token(request):
    data = json_body(request) if request.content_type == "application/json" else request.POST
    username, password = data.get("username"), data.get("password")
    if not isinstance(username, str) or not isinstance(password, str) or not username or not password:
        raise ApiError("send username and password")
    name = check_name(data.get("name", DEFAULT_NAME))
    wait = throttle.admit(request, username)  # recorded and counted atomically
    if wait:
        raise ApiError(throttle.refusal(wait), 429, retry_after=wait)
    user = authenticate(request, username=username, password=password)
    if user is None:
        raise ApiError("wrong username or password", 400)
    throttle.succeeded(request, user)
    if must_change_password(user):
        raise ApiError("this is a one-time password: sign in at /accounts/login/ and choose your own first", 403)
    return JsonResponse({"token": Token.issue(user, name=name), "name": name}, status=201)


@api_view("GET")
def tokens(request):
    """The caller's API tokens (names and dates; keys are never stored)."""
    mine = request.user.api_tokens.order_by("created_at", "pk")
    return JsonResponse({"tokens": [t.as_dict(request.api_token) for t in mine], "limit": MAX_TOKENS_PER_USER})


@api_view("DELETE")
def token_revoke(request, pk):
    """Revoke one of the caller's tokens (another user's id is 404, as a missing one)."""
    deleted, _ = request.user.api_tokens.filter(pk=pk).delete()
    if not deleted:
        raise ApiError("not found", 404)
    return JsonResponse({"revoked": pk})


@api_view("GET")
def mechanisms(request):
    return JsonResponse({"mechanisms": registry.describe_all()})


@api_view("GET", "POST")
def datasets(request):
    if request.method == "GET":
        items = [dataset_dict(d, for_owner=d.owner_id == request.user.pk) for d in visible_datasets(request.user)]
        return JsonResponse({"datasets": items})
    require_steward(request.user)
    upload = request.FILES.get("file")
    if upload is None:
        raise ApiError("send the CSV as multipart form field 'file'")
    with refused():
        raw_markers = request.POST.get("missing_markers")
        markers = parse_markers(raw_markers, empty_is_missing=request.POST.get("empty_is_missing", "1") != "0")
        dataset = store_upload(upload, owner=request.user, name=request.POST.get("name", ""), markers=markers)
    return JsonResponse(dataset_dict(dataset, for_owner=True), status=201)


@api_view("GET")
def dataset(request, pk):
    d = dataset_for_viewer(request.user, pk)
    return JsonResponse(dataset_dict(d, for_owner=d.owner_id == request.user.pk))


@api_view("GET", "PUT")
def schema(request, pk):
    d = dataset_for_owner(request.user, pk)
    if request.method == "GET":
        with refused(404):
            return JsonResponse(dataset_services.export_schema(d))
    with refused():
        check = schema_checks.request_confirmation(
            d, dataset_services.parse_schema_json(json_body(request)), request.user
        )
    if check is not None:  # a big file: checked on a worker, followed at schema/check/ (docs/api.md)
        return JsonResponse({"schema_check": schema_checks.check_dict(check)}, status=202)
    return JsonResponse(dataset_dict(d, for_owner=True))


@api_view("GET")
def schema_check(request, pk):
    d = dataset_for_owner(request.user, pk)
    return JsonResponse(schema_checks.check_dict(schema_checks.latest(d), dataset=d))


@api_view("GET", "PUT")
def budget(request, pk):
    d = dataset_for_owner(request.user, pk)
    if request.method == "PUT":
        data = json_body(request)
        if "epsilon" not in data:
            raise ApiError("send the epsilon cap as 'epsilon' (and optionally 'delta')")
        with refused():
            entry = ledger.set_caps(
                d,
                epsilon=_amount(data["epsilon"], "epsilon"),
                delta=_amount(data.get("delta", "0"), "delta"),
                user=request.user,
            )
        out = ledger.remaining(d)
        if entry is not None and getattr(entry, "warning", ""):
            out["warning"] = entry.warning
        return JsonResponse(out)
    return JsonResponse(ledger.remaining(d))


@api_view("GET")
def recommendation(request, pk):
    """GET /api/datasets/{id}/recommendation/?purpose=&epsilon=&delta=&target=&pairs=&key_columns=&target_error=:
    the recommended mechanism and every mechanism's predicted accuracy, from public inputs only."""
    d = dataset_for_owner(request.user, pk)
    unknown = sorted(set(request.GET) - RECOMMENDATION_PARAMS)
    if unknown:
        raise ApiError(f"unknown parameter(s) {unknown}; use {sorted(RECOMMENDATION_PARAMS)}")
    with refused():
        return JsonResponse(guidance.recommendation_for(d, request.GET, mechanism=request.GET.get("mechanism")))


RECOMMENDATION_PARAMS = {
    "purpose",
    "epsilon",
    "delta",
    "target",
    "pairs",
    "key_columns",
    "larger_than_memory",
    "target_error",
    "mechanism",
}


def _check_would_fail(dataset, data: dict) -> str:
    """A mechanism predicted near-uniform on this table runs only with "confirm_would_fail": true; returns
    the confirmed warning for the ledger ("" when there was none)."""
    if not isinstance(data["mechanism"], str):
        return ""
    reason = confirmations.would_fail_reason(dataset, data["mechanism"], data["epsilon"], data.get("delta", "0"))
    if reason and data.get("confirm_would_fail") is True:
        return f"confirmed through the API: run {data['mechanism']} although predicted to fail ({reason})"
    if reason:
        raise ApiError(
            f"{data['mechanism']} is predicted to fail on this table ({reason}); send "
            '"confirm_would_fail": true to spend budget on it anyway. Nothing was charged.'
        )
    return ""


def _check_high_error(dataset, data: dict) -> str:
    """A release predicted to keep little of the table (above confirmations.HIGH_ERROR, where more epsilon would
    help) runs only with "confirm_high_error": true. The prediction is for exploring the whole table.
    Returns the confirmed warning for the ledger ("" when there was none)."""
    if not isinstance(data["mechanism"], str):
        return ""
    params = data.get("params") if isinstance(data.get("params"), dict) else {}
    reason = confirmations.high_error_reason(
        dataset, data["mechanism"], data["epsilon"], data.get("delta", "0"), params=params
    )
    if reason and data.get("confirm_high_error") is True:
        return f"confirmed through the API: {reason}"
    if reason:
        raise ApiError(
            f'{reason}. Send "confirm_high_error": true to spend budget on it anyway, or raise epsilon. '
            "Nothing was charged."
        )
    return ""


def _amount(value, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ApiError(f"{name} must be a number or a decimal string, got {name}={value!r}")
    return str(value)


@api_view("GET", "POST")
def dataset_releases(request, pk):
    if request.method == "GET":
        d = dataset_for_viewer(request.user, pk)
        owner = d.owner_id == request.user.pk
        qs = d.releases.all() if owner else d.releases.for_analysts()
        return JsonResponse({"releases": [release_dict(r, for_owner=owner) for r in qs]})
    d = dataset_for_owner(request.user, pk)
    data = json_body(request)
    unknown = sorted(
        set(data) - {"mechanism", "epsilon", "delta", "params", "rows", "confirm_would_fail", "confirm_high_error"}
    )
    if unknown:
        raise ApiError(f"unknown field(s) {unknown}; send mechanism, epsilon, delta, params, rows")
    if "epsilon" not in data or "mechanism" not in data:
        raise ApiError("send at least 'mechanism' and 'epsilon'")
    would_fail = _check_would_fail(d, data)
    req = release_services.ReleaseRequest(
        mechanism=data["mechanism"],
        epsilon=_amount(data["epsilon"], "epsilon"),
        delta=_amount(data.get("delta", "0"), "delta"),
        params=data.get("params") or {},
        rows=data.get("rows", d.n_rows),
    )
    with refused():
        checked = release_services.check_request(d, req)  # a bad value is named before a confirmation is asked
        high_error = _check_high_error(d, data)
        release = release_services.plan_release(
            d, request.user, req, confirmed="; ".join(filter(None, (would_fail, high_error))), checked=checked
        )
    return JsonResponse(release_dict(release, for_owner=True), status=201)


@api_view("POST")
def dataset_bounds(request, pk):
    """POST /api/datasets/{id}/bounds/ {"columns": [...], "epsilon": "0.1", "delta": "1e-6"}: estimate numeric
    bounds and discover categorical columns' categories privately (charged like a release); the estimates
    are in the release's privacy report when done."""
    d = dataset_for_owner(request.user, pk)
    data = json_body(request)
    unknown = sorted(set(data) - {"columns", "epsilon", "delta"})
    if unknown:
        raise ApiError(f"unknown field(s) {unknown}; send columns, epsilon and (for categorical columns) delta")
    columns = data.get("columns")
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ApiError(f"columns must be a list of column names, got columns={columns!r}"[:300])
    with refused():
        r = release_services.plan_bounds(
            d,
            request.user,
            columns=columns,
            epsilon=_amount(data.get("epsilon", release_services.DEFAULT_BOUNDS_EPSILON), "epsilon"),
            delta=_amount(data["delta"], "delta") if "delta" in data else None,
        )
    return JsonResponse(release_dict(r, for_owner=True), status=201)


@api_view("GET")
def dataset_ledger(request, pk):
    return JsonResponse(ledger.entries_json(dataset_for_owner(request.user, pk)))


@api_view("GET", "PATCH")
def release(request, pk):
    if request.method == "PATCH":
        return _release_labels(request, pk)
    r = release_for_viewer(request.user, pk)
    return JsonResponse(release_dict(r, for_owner=r.dataset.owner_id == request.user.pk))


LABEL_FIELDS = {"title": str, "note": str, "withdrawn": bool, "hidden": bool}


def _release_labels(request, pk):
    """PATCH /api/releases/{id}/: the steward names, annotates, withdraws or hides a release."""
    r = release_for_owner(request.user, pk)
    data = json_body(request)
    unknown = sorted(set(data) - set(LABEL_FIELDS))
    if unknown or not data:
        raise ApiError(f"send any of {sorted(LABEL_FIELDS)}, got {unknown or 'nothing'}")
    for key, kind in LABEL_FIELDS.items():
        if key in data and not isinstance(data[key], kind):
            raise ApiError(f"{key} must be {'a string' if kind is str else 'true or false'}, got {key}={data[key]!r}")
    with refused():
        if "title" in data or "note" in data:
            release_services.label_release(r, title=data.get("title", r.title), note=data.get("note", r.note))
    if "withdrawn" in data:
        release_services.set_withdrawn(r, data["withdrawn"])
    if "hidden" in data:
        release_services.set_hidden(r, data["hidden"])
    r.refresh_from_db()
    return JsonResponse(release_dict(r, for_owner=True))


@api_view("POST")
def release_draws(request, pk):
    r = release_for_owner(request.user, pk)
    with refused():
        draw = release_services.draw_more(r, request.user, json_body(request).get("rows"))
    return JsonResponse(release_dict(draw, for_owner=True), status=201)


@api_view("POST")
def release_estimate(request, pk):
    """POST /api/datasets/{id}/releases/estimate/: the run-time estimate of a release request (same body
    as a request), validated like one; nothing charged or queued."""
    dataset = dataset_for_owner(request.user, pk)
    body = json_body(request)
    with refused():
        est = release_services.estimate_request(
            dataset,
            release_services.ReleaseRequest(
                mechanism=body.get("mechanism"),
                epsilon=body.get("epsilon"),
                delta=body.get("delta"),
                params=body.get("params") or {},
                rows=body.get("rows", dataset.n_rows),
            ),
        )
    return JsonResponse(est)


@api_view("POST")
def release_cancel(request, pk):
    """POST /api/releases/{id}/cancel/: queued -> cancelled and refunded (200); running -> stops at its
    next progress point (202, poll the release); finished -> 409."""
    r = release_for_owner(request.user, pk)
    with refused(409):
        r = release_services.cancel(r)
    return JsonResponse(release_dict(r, for_owner=True), status=200 if r.is_finished else 202)


@api_view("GET")
def release_risk(request, pk):
    """GET /api/releases/{id}/risk/: the privacy risk report (steward-only: computed from the raw data;
    anyone else gets 404, as for the utility dashboard)."""
    from dpportal.dashboards.risk import api_dict

    return JsonResponse(api_dict(release_for_owner(request.user, pk)))


@api_view("GET")
def release_csv(request, pk):
    return csv_response(release_for_viewer(request.user, pk))


@api_view("GET")
def release_csv_spreadsheet(request, pk):
    return csv_response(release_for_viewer(request.user, pk), spreadsheet=True)


@api_view("GET")
def release_manifest(request, pk):
    r = release_for_viewer(request.user, pk)
    if r.status != Release.DONE:
        raise ApiError("the release is not finished", 404)
    return JsonResponse(manifest(r, for_owner=r.dataset.owner_id == request.user.pk))


@api_view("DELETE")
def dataset_raw(request, pk):
    """DELETE /api/datasets/{id}/raw/: delete the raw file (no budget is freed)."""
    from dpportal.datasets.lifecycle import RawDeleteRefused, delete_raw

    d = dataset_for_owner(request.user, pk)
    with refused(409, also=(RawDeleteRefused,)):
        delete_raw(d)
    return JsonResponse(dataset_dict(d, for_owner=True))
