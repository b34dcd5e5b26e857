"""What the steward confirmed and the free draws are on the ledger: a confirmed "would fail" or high-error
warning is hashed with the release's reservation; a draw of more rows is a zero-cost note row."""

from __future__ import annotations

import re

from dpportal.ledger import services as ledger
from dpportal.ledger.models import LedgerEntry
from dpportal.releases import services
from mechanisms import registry

from tests.dpportal.releases.test_release_form import _defaults

NEW = "/datasets/{}/releases/new/"


def _reservation(release_pk):
    return LedgerEntry.objects.get(kind=LedgerEntry.RESERVE, release_pk=release_pk)


def test_a_confirmed_would_fail_release_says_so_on_its_ledger_entry(world):
    client = world.client(world.owner)
    url = NEW.format(world.dataset.pk) + "?mechanism=kdtree-grid"
    post = {**_defaults(registry.get("kdtree-grid")), "confirm_would_fail": "on"}
    resp = client.post(url, post)
    assert resp.status_code == 302
    release_pk = int(re.search(r"/releases/(\d+)/", resp["Location"]).group(1))
    note = _reservation(release_pk).note
    assert note.startswith("confirmed by the steward: Run kdtree-grid anyway: near-uniform output predicted")
    assert ledger.verify_dataset(world.dataset.pk).ok
    assert "confirmed by the steward" in client.get(f"/datasets/{world.dataset.pk}/ledger/").content.decode()


def test_a_would_fail_release_confirmed_through_the_api_says_so_and_others_carry_no_note(world):
    url = f"/api/datasets/{world.dataset.pk}/releases/"
    api = world.api(world.owner)
    ok = world.client(None).post(
        url,
        {
            "mechanism": "kdtree-grid",
            "epsilon": "0.1",
            "rows": 5,
            "confirm_would_fail": True,
            "confirm_high_error": True,
        },
        content_type="application/json",
        **api,
    )
    assert ok.status_code == 201
    note = _reservation(ok.json()["id"]).note
    assert "confirmed through the API: run kdtree-grid although predicted to fail (near-uniform" in note
    plain = world.client(None).post(
        url,
        {"mechanism": "baseline", "epsilon": "0.5", "rows": 5, "confirm_high_error": True},
        content_type="application/json",
        **api,
    )
    assert plain.status_code == 201
    assert "predicted to fail" not in _reservation(plain.json()["id"]).note


def test_a_draw_of_more_rows_leaves_a_zero_cost_note_in_the_chain(world):
    before = ledger.remaining(world.dataset)
    draw = services.draw_more(world.release, world.owner, 120)
    row = LedgerEntry.objects.get(kind=LedgerEntry.NOTE, release_pk=draw.pk)
    assert (row.eps_units, row.delta_units, row.resolves_id) == (0, 0, None)
    assert row.username == world.owner.username and row.params == {"parent": world.release.pk, "rows": 120}
    assert row.note == (
        f"draw of 120 more rows from release {world.release.pk}: post-processing of its private "
        "summary, no privacy cost"
    )
    assert ledger.remaining(world.dataset) == before
    report = ledger.verify_dataset(world.dataset.pk)
    assert report.ok, report.problems
    exported = ledger.entries_json(world.dataset)["entries"][-1]
    assert exported["kind"] == "note" and exported["epsilon_float"] == 0
    page = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/ledger/").content.decode()
    assert "note, no cost" in page and f"draw of 120 more rows from release {world.release.pk}" in page


def test_a_note_row_given_a_cost_in_the_database_is_reported(world):
    draw = services.draw_more(world.release, world.owner, 10)
    LedgerEntry.objects.filter(kind=LedgerEntry.NOTE, release_pk=draw.pk).update(eps_units=5)
    problems = ledger.verify_dataset(world.dataset.pk).problems
    assert any("a note carries no cost" in p for p in problems)
