"""API tokens: a password change revokes them, users list and revoke their own, and token requests
do not pile up (a name replaces its token; at most MAX_TOKENS_PER_USER)."""

from __future__ import annotations

import json

from django.test import Client

from dpportal.api.models import MAX_TOKENS_PER_USER, Token

from tests.personas import PASSWORD


def _issue(name=None, username="olivia", password=PASSWORD):
    body = {"username": username, "password": password}
    if name is not None:
        body["name"] = name
    return Client().post("/api/auth/token/", json.dumps(body), content_type="application/json")


def _auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


def _answers(key) -> int:
    return Client().get("/api/mechanisms/", **_auth(key)).status_code


def test_a_password_change_on_the_web_revokes_every_token(world):
    key = _issue().json()["token"]
    other = Token.issue(world.analyst)
    assert _answers(key) == 200
    new = "another-horse-battery-7"
    resp = world.client(world.owner).post(
        "/accounts/password/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new}
    )
    assert resp.status_code == 302
    assert _answers(key) == 401 and not world.owner.api_tokens.exists()
    assert _answers(other) == 200  # other users keep theirs
    assert _issue(password=new).status_code == 201


def test_a_password_set_elsewhere_revokes_tokens_and_other_saves_do_not(world):
    key = Token.issue(world.owner)
    world.owner.first_name = "Olivia"
    world.owner.save()
    assert _answers(key) == 200
    world.owner.set_password("set-by-an-operator-3")
    world.owner.save()
    assert _answers(key) == 401


def test_token_requests_reuse_their_name_instead_of_piling_up(world):
    first = _issue()
    second = _issue()
    assert first.status_code == second.status_code == 201 and second.json()["name"] == "api"
    assert world.owner.api_tokens.count() == 1
    assert _answers(first.json()["token"]) == 401 and _answers(second.json()["token"]) == 200


def test_at_most_the_limit_of_named_tokens(world):
    for i in range(MAX_TOKENS_PER_USER):
        assert _issue(f"laptop-{i}").status_code == 201
    resp = _issue("one-too-many")
    assert resp.status_code == 409 and f"already hold {MAX_TOKENS_PER_USER} API tokens" in resp.json()["error"]
    assert world.owner.api_tokens.count() == MAX_TOKENS_PER_USER
    assert _issue("laptop-3").status_code == 201  # an existing name is replaced, within the limit


def test_a_bad_token_name_is_refused_and_creates_nothing(world):
    for name, message in (
        ("x" * 65, "at most 64 characters"),
        ("a\u202eb", "control, format or invisible"),
        ("  ", "non-empty string"),
        (5, "non-empty string"),
    ):
        resp = _issue(name)
        assert resp.status_code == 400 and message in resp.json()["error"], (name, resp.content)
    assert not world.owner.api_tokens.exists()


def test_list_and_revoke_own_tokens_through_the_api(world):
    key = _issue("ci").json()["token"]
    spare = _issue("laptop").json()["token"]
    listed = Client().get("/api/auth/tokens/", **_auth(key)).json()
    assert [(t["name"], t["current"]) for t in listed["tokens"]] == [("ci", True), ("laptop", False)]
    assert listed["limit"] == MAX_TOKENS_PER_USER and key not in json.dumps(listed)
    laptop = listed["tokens"][1]["id"]
    stranger = Token.issue(world.other_steward)
    assert Client().delete(f"/api/auth/tokens/{laptop}/", **_auth(stranger)).status_code == 404
    assert _answers(spare) == 200
    resp = Client().delete(f"/api/auth/tokens/{laptop}/", **_auth(key))
    assert resp.status_code == 200 and resp.json() == {"revoked": laptop}
    assert _answers(spare) == 401 and _answers(key) == 200


def test_the_tokens_page_lists_and_revokes(world):
    Token.issue(world.owner, name="notebook")
    token = world.owner.api_tokens.get(name="notebook")
    client = world.client(world.owner)
    page = client.get("/accounts/tokens/").content.decode()
    assert "notebook" in page and f'name="revoke" value="{token.pk}"' in page
    theirs = world.other_steward.api_tokens.create(key_hash="0" * 64, name="theirs")
    for bad in (str(theirs.pk), "x", "9" * 30):
        assert client.post("/accounts/tokens/", {"revoke": bad}).status_code == 404
    assert world.other_steward.api_tokens.filter(pk=theirs.pk).exists()
    assert client.post("/accounts/tokens/", {"revoke": str(token.pk)}).status_code == 302
    assert not world.owner.api_tokens.exists()
    assert 'id="no-tokens"' in client.get("/accounts/tokens/").content.decode()


def test_a_rehash_at_login_is_not_a_password_change(world, settings):
    key = Token.issue(world.owner)
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    old_hash = type(world.owner).objects.get(pk=world.owner.pk).password
    assert _issue().status_code == 201  # logs in: Django upgrades the stored MD5 hash to PBKDF2
    assert type(world.owner).objects.get(pk=world.owner.pk).password != old_hash
    assert _answers(key) == 200


def test_an_unusable_password_revokes_tokens(world):
    key = Token.issue(world.owner)
    world.owner.set_unusable_password()
    world.owner.save()
    assert _answers(key) == 401
