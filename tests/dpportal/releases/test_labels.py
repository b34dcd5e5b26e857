"""A steward creates analyst accounts from the dataset page; releases are named, annotated, withdrawn
from analysts or hidden."""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model

from dpportal.accounts.models import Profile
from dpportal.ledger.models import LedgerEntry
from dpportal.releases.models import Release

from tests.personas import run_release


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
    same = client.post("/accounts/password/", {"old_password": password, "new_password1": password,
                                               "new_password2": password})
    assert "must differ" in same.content.decode()
    new = "bea-own-Pass-8642"
    done = client.post("/accounts/password/", {"old_password": password, "new_password1": new,
                                               "new_password2": new})
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
    resp = world.client(world.other_steward).post(f"/datasets/{world.dataset.pk}/grants/",
                                                  {"username": "eve", "action": "create"})
    assert resp.status_code == 404 and not get_user_model().objects.filter(username="eve").exists()


def _edit(world, release, **data):
    return world.client(world.owner).post(f"/releases/{release.pk}/edit/", data, follow=True)


def test_a_release_is_named_and_annotated_and_analysts_see_the_name_only(world):
    _edit(world, world.release, action="label", title="for the model team", note="trial run, eps 0.5")
    r = Release.objects.get(pk=world.release.pk)
    assert (r.title, r.note) == ("for the model team", "trial run, eps 0.5")
    analyst_page = world.client(world.analyst).get(f"/releases/{r.pk}/").content.decode()
    assert "for the model team" in analyst_page and "trial run" not in analyst_page
    dataset_page = world.client(world.analyst).get(f"/datasets/{world.dataset.pk}/").content.decode()
    assert "for the model team" in dataset_page


def test_label_text_is_checked(world):
    text = _edit(world, world.release, action="label", title="x" * 121, note="").content.decode()
    assert "name must be at most 120 characters, got 121" in text
    text = _edit(world, world.release, action="label", title="a\x00b", note="").content.decode()
    assert "must not contain control characters" in text
    assert Release.objects.get(pk=world.release.pk).title == ""


def test_a_withdrawn_release_and_its_draws_are_gone_for_analysts_but_stay_in_the_ledger(world):
    client = world.client(world.analyst)
    r = world.release
    draw = Release.objects.create(dataset=r.dataset, created_by=world.owner, parent=r, mechanism=r.mechanism,
                                  params=r.params, epsilon=r.epsilon, delta=r.delta, rows=5, schema=r.schema,
                                  schema_fingerprint=r.schema_fingerprint, status=Release.DONE,
                                  output_file=r.output_file)
    assert client.get(f"/releases/{draw.pk}/").status_code == 200
    text = _edit(world, r, action="withdraw").content.decode()
    assert "withdrawn" in text and "cannot be recalled" in text
    for url in (f"/releases/{r.pk}/", f"/releases/{r.pk}/synthetic.csv", f"/releases/{draw.pk}/synthetic.csv"):
        assert client.get(url).status_code == 404, url
    api = client.get(f"/api/datasets/{world.dataset.pk}/releases/", **world.api(world.analyst)).json()
    assert api["releases"] == []
    assert LedgerEntry.objects.filter(release_pk=r.pk, kind="spend").exists()  # the cost stays spent
    _edit(world, r, action="restore")
    assert client.get(f"/releases/{r.pk}/synthetic.csv").status_code == 200


def test_a_hidden_release_leaves_the_stewards_list_until_asked_for(world):
    second = run_release(world.dataset, world.owner, epsilon="0.1", rows=10)
    _edit(world, second, action="hide")
    client = world.client(world.owner)
    page = client.get(f"/datasets/{world.dataset.pk}/").content.decode()
    assert f'href="/releases/{second.pk}/"' not in page and "1 hidden release(s) not listed" in page
    page = client.get(f"/datasets/{world.dataset.pk}/", {"hidden": "1"}).content.decode()
    assert f'href="/releases/{second.pk}/"' in page
    # hiding is the steward's tidying only: analysts still see it
    assert world.client(world.analyst).get(f"/releases/{second.pk}/").status_code == 200


def test_others_cannot_edit_a_release(world):
    for user in (world.analyst, world.other_steward):
        resp = world.client(user).post(f"/releases/{world.release.pk}/edit/", {"action": "withdraw"})
        assert resp.status_code == 404
    assert Release.objects.get(pk=world.release.pk).withdrawn_at is None


def test_the_api_labels_withdraws_and_reports_quality_to_the_owner_only(world):
    import json

    url = f"/api/releases/{world.release.pk}/"
    owner = world.client(None)
    resp = owner.patch(url, json.dumps({"title": "v1", "withdrawn": True}), content_type="application/json",
                       **world.api(world.owner))
    assert resp.status_code == 200 and resp.json()["title"] == "v1" and resp.json()["withdrawn"] is True
    assert resp.json()["quality"]["score"] > 0
    assert world.client(None).get(url, **world.api(world.analyst)).status_code == 404
    bad = owner.patch(url, json.dumps({"hidden": "yes"}), content_type="application/json", **world.api(world.owner))
    assert bad.status_code == 400 and "hidden must be true or false, got hidden='yes'" in bad.json()["error"]
    bad = owner.patch(url, json.dumps({"colour": 1}), content_type="application/json", **world.api(world.owner))
    assert bad.status_code == 400 and "colour" in bad.json()["error"]
    owner.patch(url, json.dumps({"withdrawn": False}), content_type="application/json", **world.api(world.owner))
    analyst_view = world.client(None).get(url, **world.api(world.analyst)).json()
    assert analyst_view["title"] == "v1" and "quality" not in analyst_view and "note" not in analyst_view
