"""Other people's datasets and releases are invisible: 404 on every URL, web and API."""

from __future__ import annotations

import pytest

OWNER_ONLY = "owner-only"
VIEWER = "viewer"  # owner or granted analyst

DATASET_URLS = [
    ("get", "/datasets/{d}/", VIEWER),
    ("get", "/datasets/{d}/schema/", OWNER_ONLY),
    ("post", "/datasets/{d}/schema/", OWNER_ONLY),
    ("get", "/datasets/{d}/schema.json", OWNER_ONLY),
    ("post", "/datasets/{d}/schema/import/", OWNER_ONLY),
    ("get", "/datasets/{d}/budget/", OWNER_ONLY),
    ("post", "/datasets/{d}/budget/", OWNER_ONLY),
    ("post", "/datasets/{d}/grants/", OWNER_ONLY),
    ("get", "/datasets/{d}/releases/new/", OWNER_ONLY),
    ("post", "/datasets/{d}/releases/new/", OWNER_ONLY),
    ("get", "/datasets/{d}/ledger/", OWNER_ONLY),
    ("get", "/datasets/{d}/ledger.csv", OWNER_ONLY),
    ("get", "/datasets/{d}/ledger.json", OWNER_ONLY),
    ("get", "/releases/{r}/", VIEWER),
    ("get", "/releases/{r}/status.json", VIEWER),
    ("get", "/releases/{r}/synthetic.csv", VIEWER),
    ("get", "/releases/{r}/manifest.json", VIEWER),
    ("post", "/releases/{r}/draw/", OWNER_ONLY),
]

API_URLS = [
    ("get", "/api/datasets/{d}/", VIEWER),
    ("get", "/api/datasets/{d}/schema/", OWNER_ONLY),
    ("put", "/api/datasets/{d}/schema/", OWNER_ONLY),
    ("get", "/api/datasets/{d}/budget/", OWNER_ONLY),
    ("put", "/api/datasets/{d}/budget/", OWNER_ONLY),
    ("get", "/api/datasets/{d}/releases/", VIEWER),
    ("post", "/api/datasets/{d}/releases/", OWNER_ONLY),
    ("get", "/api/datasets/{d}/ledger/", OWNER_ONLY),
    ("get", "/api/releases/{r}/", VIEWER),
    ("get", "/api/releases/{r}/synthetic.csv", VIEWER),
    ("get", "/api/releases/{r}/manifest.json", VIEWER),
    ("post", "/api/releases/{r}/draws/", OWNER_ONLY),
]


def _call(client, method, url, **extra):
    body = {"rows": "5", "epsilon": "1", "username": "ana", "action": "grant"}
    if method == "get":
        return client.get(url, **extra)
    if method == "put":
        return client.put(url, '{"epsilon": "5"}', content_type="application/json", **extra)
    if url.startswith("/api/"):
        return client.post(
            url, '{"rows": 5, "mechanism": "baseline", "epsilon": "0.1"}', content_type="application/json", **extra
        )
    return client.post(url, body, **extra)


def _fmt(url, world):
    return url.format(d=world.dataset.pk, r=world.release.pk)


@pytest.mark.parametrize("who", ["outsider", "stranger_analyst", "other_steward"])
def test_strangers_get_404_on_every_dataset_and_release_url(world, who):
    user = getattr(world, who)
    client = world.client(user)
    api = world.api(user)
    for method, url, _ in DATASET_URLS:
        assert _call(client, method, _fmt(url, world)).status_code == 404, (who, method, url)
    for method, url, _ in API_URLS:
        assert _call(world.client(None), method, _fmt(url, world), **api).status_code == 404, (who, method, url)


def test_granted_analyst_sees_releases_but_nothing_owner_only(world):
    client, api = world.client(world.analyst), world.api(world.analyst)
    for method, url, kind in DATASET_URLS:
        status = _call(client, method, _fmt(url, world)).status_code
        assert status == (200 if kind == VIEWER else 404), (method, url, status)
    for method, url, kind in API_URLS:
        status = _call(world.client(None), method, _fmt(url, world), **api).status_code
        assert status == (200 if kind == VIEWER else 404), (method, url, status)


def test_nothing_changed_after_the_strangers_tried(world):
    from dpportal.ledger import services as ledger

    before = ledger.remaining(world.dataset)
    test_strangers_get_404_on_every_dataset_and_release_url(world, "other_steward")
    assert ledger.remaining(world.dataset) == before
    assert world.dataset.releases.count() == 1


def test_anonymous_is_sent_to_login_and_api_says_401(world):
    anon = world.client(None)
    for method, url, _ in DATASET_URLS:
        resp = _call(anon, method, _fmt(url, world))
        assert resp.status_code in (302, 403), (method, url, resp.status_code)
        if resp.status_code == 302:
            assert "/accounts/login/" in resp["Location"]
    for method, url, _ in API_URLS:
        assert _call(anon, method, _fmt(url, world)).status_code == 401, (method, url)


def test_analyst_does_not_see_unfinished_or_failed_releases(world):
    from dpportal.releases.models import Release

    Release.objects.filter(pk=world.release.pk).update(status=Release.FAILED, error="secret data-dependent text")
    client = world.client(world.analyst)
    assert client.get(f"/releases/{world.release.pk}/").status_code == 404
    assert client.get(f"/releases/{world.release.pk}/status.json").status_code == 404
    resp = world.client(None).get(f"/api/datasets/{world.dataset.pk}/releases/", **world.api(world.analyst))
    assert resp.json()["releases"] == []


def test_analyst_sees_no_durations_or_raw_metadata(world):
    client, api = world.client(world.analyst), world.api(world.analyst)
    page = client.get(f"/releases/{world.release.pk}/").content.decode()
    assert "seconds" not in page and "Steward tools" not in page
    data = world.client(None).get(f"/api/releases/{world.release.pk}/", **api).json()
    assert "started_at" not in data and "finished_at" not in data and "error" not in data
    assert not any(k.startswith("seconds") for k in data["privacy"])
    manifest = world.client(None).get(f"/api/releases/{world.release.pk}/manifest.json", **api).json()
    assert set(manifest["timestamps"]) == {"released_on"}
    ds = world.client(None).get(f"/api/datasets/{world.dataset.pk}/", **api).json()
    assert set(ds) == {"id", "name", "url"}  # no schema draft, no row count, no file facts
