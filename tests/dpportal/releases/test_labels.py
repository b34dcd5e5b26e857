"""Releases are named, annotated, withdrawn from analysts or hidden."""

from __future__ import annotations

from dpportal.ledger.models import LedgerEntry
from dpportal.releases.models import Release

from tests.personas import run_release


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
    draw = Release.objects.create(
        dataset=r.dataset,
        created_by=world.owner,
        parent=r,
        mechanism=r.mechanism,
        params=r.params,
        epsilon=r.epsilon,
        delta=r.delta,
        rows=5,
        schema=r.schema,
        schema_fingerprint=r.schema_fingerprint,
        status=Release.DONE,
        output_file=r.output_file,
    )
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
    resp = owner.patch(
        url, json.dumps({"title": "v1", "withdrawn": True}), content_type="application/json", **world.api(world.owner)
    )
    assert resp.status_code == 200 and resp.json()["title"] == "v1" and resp.json()["withdrawn"] is True
    # the owner sees the quality score; its value is random (the release's noise is not seeded here)
    assert 0.0 <= resp.json()["quality"]["score"] <= 1.0
    assert world.client(None).get(url, **world.api(world.analyst)).status_code == 404
    bad = owner.patch(url, json.dumps({"hidden": "yes"}), content_type="application/json", **world.api(world.owner))
    assert bad.status_code == 400 and "hidden must be true or false, got hidden='yes'" in bad.json()["error"]
    bad = owner.patch(url, json.dumps({"colour": 1}), content_type="application/json", **world.api(world.owner))
    assert bad.status_code == 400 and "colour" in bad.json()["error"]
    owner.patch(url, json.dumps({"withdrawn": False}), content_type="application/json", **world.api(world.owner))
    analyst_view = world.client(None).get(url, **world.api(world.analyst)).json()
    assert analyst_view["title"] == "v1" and "quality" not in analyst_view and "note" not in analyst_view
