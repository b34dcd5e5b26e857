"""Amounts (epsilon/delta caps and release costs) are stored and shown in one canonical form; text that
Python's parsers take but people would misread ("1_0", other scripts' digits, "-1/-1") is refused with a
message and charges nothing."""

from __future__ import annotations

import json

import pytest

from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.ledger.models import LedgerEntry
from dpportal.releases.models import Release
from mechanisms.accounting import canonical, exact


@pytest.mark.parametrize(
    "typed, stored",
    [
        ("+5", "5"),
        (" 0.1 ", "0.1"),
        ("2/4", "0.5"),
        ("1e-5", "0.00001"),
        ("1E-30", "1e-30"),
        ("1/3", "1/3"),
        ("0.50", "0.5"),
        (".5", "0.5"),
        ("1e30", "1e30"),
        (0.1, "0.1"),
        (7, "7"),
    ],
)
def test_canonical_text(typed, stored):
    assert canonical(typed) == stored and exact(stored) == exact(typed)


@pytest.mark.parametrize("typed", ["-1/-1", "\u0661", "1_0", "1 0", "+-1", "1/+2", "0x10", "\uff11", "1e"])
def test_misleading_text_is_refused(typed):
    with pytest.raises(ValueError, match="expected a number like 0.5, 1e-6 or 1/9"):
        exact(typed)


def _api(world, method, path, body):
    return getattr(world.client(None), method)(
        f"/api/datasets/{world.dataset.pk}/{path}",
        json.dumps(body),
        content_type="application/json",
        **world.api(world.owner),
    )


def _state(world):
    return (
        Release.objects.count(),
        LedgerEntry.objects.count(),
        ledger.remaining(Dataset.objects.get(pk=world.dataset.pk)),
    )


def test_release_amounts_are_stored_canonically_everywhere(world):
    resp = _api(world, "post", "releases/", {"mechanism": "baseline", "epsilon": " +0.250 ", "rows": 5})
    assert resp.status_code == 201, resp.content
    release = Release.objects.get(pk=resp.json()["id"])
    entry = LedgerEntry.objects.get(release=release, kind=LedgerEntry.RESERVE)
    assert (release.epsilon, release.delta, entry.epsilon, entry.delta) == ("0.25", "0", "0.25", "0")
    assert resp.json()["epsilon"] == "0.25"
    export = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/ledger.csv").content.decode()
    assert "0.25" in export and "+0.250" not in export


@pytest.mark.parametrize("typed", ["-1/-1", "\u0661", "1_0"])
def test_misleading_release_amounts_are_refused_and_charge_nothing(world, typed):
    before = _state(world)
    resp = _api(world, "post", "releases/", {"mechanism": "baseline", "epsilon": typed, "rows": 5})
    assert resp.status_code == 400 and "expected a number like 0.5" in resp.json()["error"], resp.content
    page = world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/releases/new/",
        {"mechanism": "baseline", "epsilon": typed, "delta": "0", "rows": "5", "param_noise_type": "laplace"},
    )
    assert page.status_code == 200 and "expected a number like 0.5" in page.content.decode()
    assert _state(world) == before


def test_caps_are_stored_canonically_and_misleading_caps_refused(world):
    resp = _api(world, "put", "budget/", {"epsilon": "+5", "delta": " 1e-5 "})
    assert resp.status_code == 200, resp.content
    cap = LedgerEntry.objects.filter(kind=LedgerEntry.CAP).latest("seq")
    assert (cap.epsilon, cap.delta) == ("5", "0.00001")
    before = _state(world)
    for typed in ("1_0", "\u0661\u0660", "-1/-1"):
        resp = _api(world, "put", "budget/", {"epsilon": typed, "delta": "0"})
        assert resp.status_code == 400 and "epsilon cap must be a number like 0.5" in resp.json()["error"]
        page = world.client(world.owner).post(
            f"/datasets/{world.dataset.pk}/budget/", {"preset": "custom", "epsilon": typed, "delta": "0"}
        )
        assert page.status_code == 200 and "epsilon cap must be a number like 0.5" in page.content.decode()
    assert _state(world) == before
