"""The access matrix: EVERY URL pattern (web and API) x six personas has an expected status.

Personas: anonymous, an analyst without a grant, an analyst with a grant, another steward, the
owner (the steward who uploaded the dataset) and a staff operator (``is_staff`` and superuser, no
steward role: trusted in the admin, sees nobody's data in the app). Raw data, schema (and its
suggestions), budget, dashboards and the ledger are owner-only; granted analysts see finished
releases and download them; other people's objects are 404, never 403.

``test_every_url_pattern_has_an_entry`` walks ``get_resolver()`` recursively and fails when a
pattern has no row here (or a row names a pattern that no longer exists): a new URL must be
classified before it ships. Admin patterns (``admin/...``, Django's own) are covered by one rule,
checked on the index and every registered model's changelist: staff only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.data import SMALL_SCHEMA, csv_file

PERSONAS = ("anon", "stranger", "analyst", "other", "staff", "owner")  # owner last: its calls may change state
LOGIN = 302  # web views send anonymous visitors to the login page


def _row(anon, stranger, analyst, other, staff, owner) -> dict:
    return dict(zip(PERSONAS, (anon, stranger, analyst, other, staff, owner)))


def web_owner(ok=200):
    return _row(LOGIN, 404, 404, 404, 404, ok)


def web_viewer(ok=200):
    return _row(LOGIN, 404, ok, 404, 404, ok)


def web_steward(ok=200):
    return _row(LOGIN, 404, 404, ok, 404, ok)


def web_user(ok=200):
    return _row(LOGIN, ok, ok, ok, ok, ok)


def api_owner(ok=200):
    return _row(401, 404, 404, 404, 404, ok)


def api_viewer(ok=200):
    return _row(401, 404, ok, 404, 404, ok)


def api_steward(ok=201):
    return _row(401, 404, 404, ok, 404, ok)


def api_user(ok=200):
    return _row(401, ok, ok, ok, ok, ok)


def everyone(status):
    return _row(*([status] * 6))


@dataclass
class Case:
    method: str
    url: str  # {d}: the dataset, {r}: its finished release
    expect: dict
    data: dict | str | None = None
    content_type: str | None = None
    files: dict = field(default_factory=dict)


def upload_body():
    return {
        "name": "t",
        "markers": "?",
        "empty_is_missing": "on",
        "file": csv_file("age,city,income,note\n34,Paris,1,x\n40,Lyon,2,y\n", "t.csv"),
    }


SCHEMA_JSON = json.dumps(SMALL_SCHEMA)

# route (as get_resolver spells it) -> the calls made on it
MATRIX: dict[str, list[Case]] = {
    "": [Case("get", "/", _row(LOGIN, 302, 302, 302, 302, 302))],
    "accounts/login/": [
        Case("get", "/accounts/login/", everyone(200)),
        Case("post", "/accounts/login/", everyone(200), {"username": "x", "password": "y"}),
    ],
    "accounts/logout/": [
        Case("get", "/accounts/logout/", everyone(405)),
        Case("post", "/accounts/logout/", everyone(302)),
    ],
    "accounts/password/": [Case("get", "/accounts/password/", web_user())],
    "accounts/password/done/": [Case("get", "/accounts/password/done/", web_user())],
    "accounts/tokens/": [
        Case("get", "/accounts/tokens/", web_user()),
        Case("post", "/accounts/tokens/", _row(LOGIN, 404, 404, 404, 404, 404), {"revoke": "0"}),
    ],
    # API
    "api/auth/token/": [
        Case("get", "/api/auth/token/", everyone(405)),
        Case("post", "/api/auth/token/", everyone(400), '{"username": "x", "password": "y"}', "application/json"),
    ],
    "api/auth/tokens/": [Case("get", "/api/auth/tokens/", api_user())],
    "api/auth/tokens/<int:pk>/": [Case("delete", "/api/auth/tokens/{t}/", api_owner())],
    "api/mechanisms/": [Case("get", "/api/mechanisms/", api_user())],
    "api/datasets/<int:pk>/recommendation/": [Case("get", "/api/datasets/{d}/recommendation/?epsilon=1", api_owner())],
    "api/datasets/": [
        Case("get", "/api/datasets/", api_user()),
        Case("post", "/api/datasets/", api_steward(201), "upload"),
    ],
    "api/datasets/<int:pk>/": [Case("get", "/api/datasets/{d}/", api_viewer())],
    "api/datasets/<int:pk>/schema/": [
        Case("get", "/api/datasets/{d}/schema/", api_owner()),
        Case("put", "/api/datasets/{d}/schema/", api_owner(), SCHEMA_JSON, "application/json"),
    ],
    "api/datasets/<int:pk>/schema/check/": [Case("get", "/api/datasets/{d}/schema/check/", api_owner())],
    "api/datasets/<int:pk>/raw/": [
        Case("get", "/api/datasets/{d}/raw/", everyone(405)),
        Case("delete", "/api/datasets/{d}/raw/", api_owner()),
    ],
    "api/datasets/<int:pk>/budget/": [
        Case("get", "/api/datasets/{d}/budget/", api_owner()),
        Case("put", "/api/datasets/{d}/budget/", api_owner(), '{"epsilon": "5"}', "application/json"),
    ],
    "api/datasets/<int:pk>/releases/": [
        Case("get", "/api/datasets/{d}/releases/", api_viewer()),
        Case(
            "post",
            "/api/datasets/{d}/releases/",
            api_owner(201),
            '{"mechanism": "baseline", "epsilon": "0.1", "rows": 5}',
            "application/json",
        ),
    ],
    "api/datasets/<int:pk>/ledger/": [Case("get", "/api/datasets/{d}/ledger/", api_owner())],
    "api/datasets/<int:pk>/releases/estimate/": [
        Case(
            "post",
            "/api/datasets/{d}/releases/estimate/",
            api_owner(),
            '{"mechanism": "baseline", "epsilon": "0.1"}',
            "application/json",
        )
    ],
    "api/datasets/<int:pk>/bounds/": [
        Case(
            "post",
            "/api/datasets/{d}/bounds/",
            api_owner(201),
            '{"columns": ["age"], "epsilon": "0.01"}',
            "application/json",
        )
    ],
    "api/releases/<int:pk>/": [
        Case("get", "/api/releases/{r}/", api_viewer()),
        Case("patch", "/api/releases/{r}/", api_owner(), '{"note": "n"}', "application/json"),
    ],
    "api/releases/<int:pk>/cancel/": [Case("post", "/api/releases/{r}/cancel/", api_owner(409))],  # {r} is done
    "api/releases/<int:pk>/draws/": [
        Case("post", "/api/releases/{r}/draws/", api_owner(201), '{"rows": 5}', "application/json")
    ],
    "api/releases/<int:pk>/synthetic.csv": [Case("get", "/api/releases/{r}/synthetic.csv", api_viewer())],
    "api/releases/<int:pk>/synthetic-spreadsheet.csv": [
        Case("get", "/api/releases/{r}/synthetic-spreadsheet.csv", api_viewer())
    ],
    "api/releases/<int:pk>/manifest.json": [Case("get", "/api/releases/{r}/manifest.json", api_viewer())],
    "api/releases/<int:pk>/tables/": [Case("get", "/api/releases/{r}/tables/", api_viewer())],
    "api/releases/<int:pk>/tables/<int:index>/": [
        Case("get", "/api/releases/{r}/tables/0/", api_viewer()),
        Case("get", "/api/releases/{r}/tables/0/?format=csv", api_viewer()),
    ],
    # datasets (web)
    "datasets/": [Case("get", "/datasets/", web_user())],
    "datasets/upload/": [
        Case("get", "/datasets/upload/", web_steward()),
        Case("post", "/datasets/upload/", web_steward(302), "upload"),
    ],
    "datasets/<int:pk>/": [Case("get", "/datasets/{d}/", web_viewer())],
    "datasets/<int:pk>/schema/": [
        Case("get", "/datasets/{d}/schema/", web_owner()),
        Case("post", "/datasets/{d}/schema/", web_owner(), {"markers": "?"}),
    ],
    "datasets/<int:pk>/schema/check/": [Case("get", "/datasets/{d}/schema/check/", web_owner(302))],
    "datasets/<int:pk>/schema.json": [Case("get", "/datasets/{d}/schema.json", web_owner())],
    "datasets/<int:pk>/schema/dp-bounds/": [
        Case(
            "post",
            "/datasets/{d}/schema/dp-bounds/",
            web_owner(302),
            {"bounds_columns": "age", "bounds_epsilon": "0.01"},
        )
    ],
    "datasets/<int:pk>/schema/import/": [
        Case("post", "/datasets/{d}/schema/import/", web_owner(302), {"schema_text": SCHEMA_JSON})
    ],
    "datasets/<int:pk>/budget/": [
        Case("get", "/datasets/{d}/budget/", web_owner()),
        Case("post", "/datasets/{d}/budget/", web_owner(302), {"preset": "custom", "epsilon": "3", "delta": "1e-5"}),
    ],
    "datasets/<int:pk>/raw/delete/": [Case("post", "/datasets/{d}/raw/delete/", web_owner(302), {"confirm": "delete"})],
    "datasets/<int:pk>/grants/": [
        Case("post", "/datasets/{d}/grants/", web_owner(302), {"username": "stan", "action": "grant"})
    ],
    "datasets/<int:pk>/releases/new/": [
        Case("get", "/datasets/{d}/releases/new/", web_owner()),
        Case(
            "post",
            "/datasets/{d}/releases/new/",
            web_owner(302),
            {"mechanism": "baseline", "epsilon": "0.1", "delta": "0", "rows": "5"},
        ),
    ],
    # releases (web)
    "releases/<int:pk>/": [Case("get", "/releases/{r}/", web_viewer())],
    "releases/<int:pk>/status.json": [Case("get", "/releases/{r}/status.json", web_viewer())],
    "releases/<int:pk>/synthetic.csv": [Case("get", "/releases/{r}/synthetic.csv", web_viewer())],
    "releases/<int:pk>/synthetic-spreadsheet.csv": [
        Case("get", "/releases/{r}/synthetic-spreadsheet.csv", web_viewer())
    ],
    "releases/<int:pk>/manifest.json": [Case("get", "/releases/{r}/manifest.json", web_viewer())],
    "releases/<int:pk>/report/": [Case("get", "/releases/{r}/report/", web_viewer())],
    "releases/<int:pk>/tables.json": [Case("get", "/releases/{r}/tables.json", web_viewer())],
    "releases/<int:pk>/tables/<int:index>/": [Case("get", "/releases/{r}/tables/0/", web_viewer())],
    "releases/<int:pk>/tables/<int:index>.csv": [Case("get", "/releases/{r}/tables/0.csv", web_viewer())],
    "releases/<int:pk>/tables/<int:index>.json": [Case("get", "/releases/{r}/tables/0.json", web_viewer())],
    "releases/<int:pk>/draw/": [Case("post", "/releases/{r}/draw/", web_owner(302), {"rows": "5"})],
    "releases/<int:pk>/cancel/": [Case("post", "/releases/{r}/cancel/", web_owner(302))],
    "releases/<int:pk>/edit/": [
        Case("post", "/releases/{r}/edit/", web_owner(302), {"action": "label", "title": "t", "note": ""})
    ],
    # ledger (steward-only)
    "datasets/<int:pk>/ledger/": [Case("get", "/datasets/{d}/ledger/", web_owner())],
    "datasets/<int:pk>/ledger.csv": [Case("get", "/datasets/{d}/ledger.csv", web_owner())],
    "datasets/<int:pk>/ledger.json": [Case("get", "/datasets/{d}/ledger.json", web_owner())],
    # dashboards (steward-only: computed from raw data, not private)
    "releases/<int:pk>/dashboard/": [Case("get", "/releases/{r}/dashboard/", web_owner())],
    "releases/<int:pk>/risk/": [Case("post", "/releases/{r}/risk/", web_owner(302))],
    "api/releases/<int:pk>/risk/": [Case("get", "/api/releases/{r}/risk/", api_owner())],
    "releases/<int:pk>/evaluation.json": [Case("get", "/releases/{r}/evaluation.json", web_owner())],
    "releases/<int:pk>/evaluate/": [Case("post", "/releases/{r}/evaluate/", web_owner(302))],
    "datasets/<int:pk>/dashboard/": [Case("get", "/datasets/{d}/dashboard/", web_owner())],
    "datasets/<int:pk>/dashboard/target/": [
        Case("post", "/datasets/{d}/dashboard/target/", web_owner(302), {"target": "city"})
    ],
    "datasets/<int:pk>/compare/": [Case("get", "/datasets/{d}/compare/?a={r}&b={r}", web_owner())],
}


def walk(resolver=None, prefix: str = ""):
    """Every concrete URL pattern as its full route string, recursing into includes."""
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from walk(p, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern)


def test_every_url_pattern_has_an_entry():
    routes = [r for r in walk() if not r.startswith("admin/")]
    assert len(routes) == len(set(routes)), "a route is registered twice"
    unclassified = sorted(set(routes) - set(MATRIX))
    stale = sorted(set(MATRIX) - set(routes))
    assert not unclassified, f"URL patterns without an access-matrix entry: {unclassified}"
    assert not stale, f"access-matrix entries for URL patterns that no longer exist: {stale}"


@pytest.fixture
def people(world):
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user(
        "sam-staff", password="x-staff-pass-1", is_staff=True, is_superuser=True
    )
    return {
        "anon": None,
        "stranger": world.stranger_analyst,
        "analyst": world.analyst,
        "other": world.other_steward,
        "staff": staff,
        "owner": world.owner,
    }


def _owner_token(world) -> int:
    """A token of the owner's that only the owner may revoke."""
    from dpportal.api.models import Token

    Token.issue(world.owner, name="matrix")
    return world.owner.api_tokens.get(name="matrix").pk


def _call(world, user, case: Case):
    from django.test import Client

    url = case.url.format(d=world.dataset.pk, r=world.release.pk, t=_owner_token(world))
    api = url.startswith("/api/")
    client = Client()
    extra = {}
    if user is not None:
        if api:
            extra = world.api(user)
        else:
            client.force_login(user)
    data = upload_body() if case.data == "upload" else case.data
    kwargs = dict(extra)
    if case.content_type:
        kwargs["content_type"] = case.content_type
    method = getattr(client, case.method)
    if case.method in ("get", "delete") and data is None:
        return method(url, **kwargs)
    return method(url, data if data is not None else {}, **kwargs)


@pytest.mark.parametrize("route", sorted(MATRIX))
def test_access_matrix(world, people, route):
    failures = []
    for case in MATRIX[route]:
        for persona in PERSONAS:
            resp = _call(world, people[persona], case)
            want = case.expect[persona]
            if resp.status_code != want:
                failures.append(
                    f"{case.method.upper()} {case.url} as {persona}: got {resp.status_code}, expected {want}"
                )
            elif want == LOGIN and persona == "anon" and not case.url.startswith("/accounts/"):
                if "/accounts/login/" not in resp["Location"]:
                    failures.append(f"{case.url} as anon redirects to {resp['Location']}, not the login page")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_nothing_changes_when_non_owners_call_every_url(world, people, settings):
    """Every call by someone who is not the owner leaves the owner's dataset, budget, releases, grants
    and files exactly as they were."""
    from dpportal.ledger import services as ledger
    from tests.data import stored_files

    ds = world.dataset

    def state():
        ds.refresh_from_db()
        return (
            ledger.remaining(ds),
            ds.releases.count(),
            sorted(ds.analysts.values_list("pk", flat=True)),
            ds.schema,
            ds.has_raw,
            stored_files(settings.DATA_DIR),
        )

    before = state()
    for cases in MATRIX.values():
        for case in cases:
            if case.data == "upload":
                continue  # stewards may create their own datasets; nothing of the owner's changes
            for persona in ("anon", "stranger", "analyst", "other", "staff"):
                _call(world, people[persona], case)
    assert state() == before


ADMIN_PAGES = ["/admin/", "/admin/datasets/dataset/", "/admin/releases/release/", "/admin/auth/user/"]


def test_admin_is_staff_only(world, people):
    from django.contrib import admin
    from django.test import Client

    admin_routes = [r for r in walk() if r.startswith("admin/")]
    assert admin_routes, "the admin is mounted under admin/"
    pages = ADMIN_PAGES + [f"/admin/{m._meta.app_label}/{m._meta.model_name}/" for m in admin.site._registry]
    for url in sorted(set(pages)):
        for persona, user in people.items():
            client = Client()
            if user is not None:
                client.force_login(user)
            resp = client.get(url)
            if persona == "staff":
                assert resp.status_code == 200, (url, persona, resp.status_code)
            else:
                assert resp.status_code == 302 and "/admin/login/" in resp["Location"], (url, persona)
