"""A steward creates analyst accounts from the dataset page: a one-time password, never an existing
name, only the owner."""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model

from dpportal.accounts.models import Profile


def _grant(world, **data):
    return world.client(world.owner).post(f"/datasets/{world.dataset.pk}/grants/", data, follow=True)


def test_granting_an_unknown_name_says_how_to_create_the_account(world):
    text = _grant(world, username="bea", action="grant").content.decode()
    assert "no analyst named &#x27;bea&#x27;" in text and "create the account" in text


def test_a_steward_creates_an_analyst_who_can_log_in_and_download(world):
    resp = _grant(world, username="bea", action="create")
    page = resp.content.decode()
    assert resp.status_code == 200 and resp["Cache-Control"] == "no-store"
    password = page.split('id="analyst-password">')[1].split("<")[0]
    assert len(password) >= 16
    bea = get_user_model().objects.get(username="bea")
    assert bea.profile.role == Profile.ANALYST and world.dataset.analysts.filter(pk=bea.pk).exists()
    assert authenticate(username="bea", password=password) == bea
    client = world.client(bea)
    # a one-time password: every page and download leads to the password change until it is changed
    for url in ("/datasets/", f"/releases/{world.release.pk}/synthetic.csv"):
        resp = client.get(url)
        assert resp.status_code == 302 and resp["Location"] == "/accounts/password/"
    assert "one-time password" in client.get("/accounts/password/").content.decode()
    api = world.client(None).post("/api/auth/token/", {"username": "bea", "password": password})
    assert api.status_code == 403 and "one-time password" in api.json()["error"]
    same = client.post(
        "/accounts/password/", {"old_password": password, "new_password1": password, "new_password2": password}
    )
    assert "must differ" in same.content.decode()
    new = "bea-own-Pass-8642"
    done = client.post("/accounts/password/", {"old_password": password, "new_password1": new, "new_password2": new})
    assert done.status_code == 302
    bea.profile.refresh_from_db()
    assert bea.profile.must_change_password is False
    assert client.get(f"/releases/{world.release.pk}/synthetic.csv").status_code == 200
    assert world.client(None).post("/api/auth/token/", {"username": "bea", "password": new}).status_code == 201


def test_accounts_made_by_hand_are_not_asked_to_change_their_password(world):
    assert world.client(world.owner).get("/datasets/").status_code == 200


def test_an_existing_name_is_never_turned_into_an_analyst(world):
    for name in ("oscar", "OSCAR", "ana"):
        text = _grant(world, username=name, action="create").content.decode()
        assert "No account created: an account named" in text
    assert get_user_model().objects.get(username="oscar").profile.role == Profile.STEWARD
    text = _grant(world, username="oscar", action="grant").content.decode()
    assert "no analyst named &#x27;oscar&#x27;: that name belongs to an account that is not an analyst" in text


def test_a_bad_username_is_refused_with_the_value(world):
    text = _grant(world, username="a b", action="create").content.decode()
    assert "No account created: a username has" in text and "&#x27;a b&#x27;" in text


def test_only_the_owner_can_create_analysts(world):
    resp = world.client(world.other_steward).post(
        f"/datasets/{world.dataset.pk}/grants/", {"username": "eve", "action": "create"}
    )
    assert resp.status_code == 404 and not get_user_model().objects.filter(username="eve").exists()
