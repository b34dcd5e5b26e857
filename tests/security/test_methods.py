"""HTTP methods: a web page answers GET, HEAD and POST only (any other method 405 with Allow, before the
view runs, signed in or not); the JSON API answers HEAD like GET without a body, and its 405 names the
methods in Allow."""

from __future__ import annotations

import pytest

PAGES = ["/", "/datasets/", "/datasets/{d}/", "/releases/{r}/", "/accounts/login/", "/releases/{r}/synthetic.csv"]


@pytest.mark.parametrize("method", ["put", "patch", "delete", "options", "trace"])
def test_a_page_refuses_other_methods_with_405_and_allow(world, method):
    for signed_in in (world.owner, None):
        client = world.client(signed_in)
        for page in PAGES:
            url = page.format(d=world.dataset.pk, r=world.release.pk)
            resp = getattr(client, method)(url)
            assert resp.status_code == 405, (method, url, resp.status_code)
            assert resp["Allow"] == "GET, HEAD, POST"


def test_an_unknown_page_stays_404_and_get_still_answers(world):
    client = world.client(world.owner)
    assert client.put("/no/such/page/").status_code == 404
    assert client.get(f"/datasets/{world.dataset.pk}/").status_code == 200


def test_the_api_answers_head_like_get_without_a_body(world):
    client, auth = world.client(None), world.api(world.owner)
    for url in (
        "/api/datasets/",
        f"/api/releases/{world.release.pk}/",
        f"/api/releases/{world.release.pk}/manifest.json",
    ):
        get, head = client.get(url, **auth), client.head(url, **auth)
        assert get.status_code == head.status_code == 200, (url, head.status_code)
        assert head.content == b"" and head["Content-Type"] == get["Content-Type"]
        assert int(head["Content-Length"]) == len(get.content)
    csv = f"/api/releases/{world.release.pk}/synthetic.csv"
    head = client.head(csv, **auth)
    assert head.status_code == 200 and head.getvalue() == b""
    assert client.head("/api/datasets/").status_code == 401  # HEAD is authenticated like GET


def test_an_api_405_names_the_allowed_methods(world):
    resp = world.client(None).delete("/api/datasets/", **world.api(world.owner))
    assert resp.status_code == 405 and "Allow" in resp
    assert set(resp["Allow"].split(", ")) >= {"GET", "HEAD"}
    resp = world.client(None).get("/api/auth/token/")
    assert resp.status_code == 405 and resp["Allow"] == "POST"
