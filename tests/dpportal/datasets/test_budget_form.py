"""The budget form: typed custom values never save a preset; a cap corrected before any release is
not logged as a raise."""

from __future__ import annotations

from dpportal.ledger import services as ledger
from dpportal.ledger.models import LedgerEntry

from tests.personas import make_dataset


def _post(world, d, data):
    return world.client(world.owner).post(f"/datasets/{d.pk}/budget/", data, follow=True)


def test_typed_values_with_a_preset_chosen_are_refused_and_nothing_saved(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = _post(world, d, {"preset": "moderate", "epsilon": "3", "delta": "1e-5"})
    text = resp.content.decode()
    assert "you typed custom values (epsilon 3, delta 1e-5)" in text and "Nothing was saved" in text
    assert "Privacy budget saved" not in text
    assert not LedgerEntry.objects.filter(dataset_id=d.pk).exists()


def test_custom_values_are_saved_when_custom_is_chosen(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = _post(world, d, {"preset": "custom", "epsilon": "3", "delta": "1e-5"})
    assert "Privacy budget saved: epsilon cap 3, delta cap 1e-5." in resp.content.decode()
    assert ledger.remaining(d)["epsilon"]["cap"] == "3"


def test_a_preset_with_its_own_values_typed_is_accepted(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    _post(world, d, {"preset": "low", "epsilon": "1.0", "delta": "0.00001"})
    assert ledger.remaining(d)["epsilon"]["cap"] == "1"


def test_the_form_shows_the_current_caps(world):
    d = make_dataset(world.owner, schema=None, budget=("3", "1e-5"))
    page = world.client(world.owner).get(f"/datasets/{d.pk}/budget/").content.decode()
    assert 'value="custom" id="id_preset_3" required checked' in page
    assert 'name="epsilon" value="3"' in page


def test_correcting_a_cap_before_any_release_is_not_a_raise(world):
    d = make_dataset(world.owner, schema=None, budget=("0.25", "1e-6"))
    resp = _post(world, d, {"preset": "custom", "epsilon": "3", "delta": "1e-6"})
    assert "cap raised" not in resp.content.decode()
    notes = list(LedgerEntry.objects.filter(dataset_id=d.pk).values_list("note", flat=True))
    assert notes == ["cap set", "cap corrected before any release"]


def test_raising_after_a_release_still_warns(world):
    resp = _post(world, world.dataset, {"preset": "custom", "epsilon": "5", "delta": "1e-5"})
    assert "cap raised from epsilon 2" in resp.content.decode()
