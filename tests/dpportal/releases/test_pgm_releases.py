"""AIM, MST and the Gaussian baseline through the API and the release form: the ledger charges exactly the
(epsilon, delta) the privacy report declares; plans too large are refused before anything is reserved."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from dpportal.ledger import services as ledger
from dpportal.releases import services
from dpportal.releases.models import Release


def _api_release(world, body):
    resp = world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/",
        json.dumps(body),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 201, resp.content
    release = Release.objects.get(pk=resp.json()["id"])
    assert services.claim(release.pk)
    services.execute(release.pk)
    release.refresh_from_db()
    return release


@pytest.mark.parametrize(
    "mechanism,params",
    [
        ("mst", {}),
        ("aim", {"max_rounds": 3, "iters": 100, "final_iters": 100}),
        ("baseline", {"noise_type": "gaussian"}),
    ],
)
@pytest.mark.slow
def test_a_zcdp_release_through_the_api_is_charged_what_its_report_declares(world, mechanism, params):
    before = ledger.remaining(world.dataset)
    release = _api_release(
        world, {"mechanism": mechanism, "epsilon": "0.5", "delta": "1e-6", "rows": 30, "params": params}
    )
    assert release.status == "done", release.error
    report = release.report
    assert (report["epsilon"], report["delta"], report["guarantee"]) == (0.5, 1e-6, "approximate")
    assert report["details"]["zcdp_rho"] > 0
    world.dataset.refresh_from_db()
    after = ledger.remaining(world.dataset)
    spent = lambda r, k: Fraction(r[k]["spent"])  # noqa: E731
    assert spent(after, "epsilon") - spent(before, "epsilon") == Fraction("0.5")
    assert spent(after, "delta") - spent(before, "delta") == Fraction("1e-6")


def test_aim_without_a_delta_is_refused_and_nothing_is_charged(world):
    before = ledger.remaining(world.dataset)
    resp = world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/",
        json.dumps({"mechanism": "aim", "epsilon": "0.5"}),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 400 and "needs a positive delta" in resp.json()["error"]
    world.dataset.refresh_from_db()
    assert ledger.remaining(world.dataset) == before
    assert not Release.objects.filter(mechanism="aim").exists()


def test_the_release_form_runs_mst(world):
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/?mechanism=mst"
    page = client.get(url).content.decode()
    assert "MST" in page
    resp = client.post(
        url, {"mechanism": "mst", "epsilon": "0.25", "delta": "1e-7", "rows": "20", "param_iters": "200"}
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    release = Release.objects.latest("pk")
    assert (release.mechanism, str(release.epsilon), release.status) == ("mst", "0.25", "queued")
