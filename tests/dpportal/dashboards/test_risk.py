"""The privacy risk report in the web app and the API: steward-only, computed after the release on the
evaluation queue, "not computable" with the reason on bad input, a red flag when a bound beats the claim.
Reports computed here use seeded noise (fixed seeds) through ``risk.compute(noise=...)``."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

import mechanisms.risk as mrisk
from dpportal import jobs
from dpportal.dashboards import risk, tasks
from dpportal.dashboards.models import RiskReport
from dpportal.releases import services as release_services
from mechanisms.noise import Noise, ScaledNoise
from tests.personas import make_dataset, run_release

N_IDS = 1000


def _ids_dataset(owner):
    """Every record unique on an identifier column (the table of tests/mechanisms/test_risk.py)."""
    text = "id,x\n" + "".join(f"p{i},{i % 10}\n" for i in range(N_IDS))
    schema = {
        "missing_markers": [""],
        "columns": [
            {"name": "id", "kind": "categorical", "categories": [f"p{i}" for i in range(N_IDS)]},
            {"name": "x", "kind": "integer", "lower": 0, "upper": 9, "bins": 10},
        ],
    }
    return make_dataset(owner, text=text, schema=schema)


def _api_get(world, user, release):
    return world.client(None).get(f"/api/releases/{release.pk}/risk/", **world.api(user))


def test_queued_after_the_release_and_not_computable_on_a_tiny_table(
    world, django_capture_on_commit_callbacks, settings
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    with django_capture_on_commit_callbacks(execute=True):
        release_services.queue_evaluation(world.release.pk)
    rr = RiskReport.objects.get(release=world.release)
    assert rr.status == RiskReport.NOT_COMPUTABLE and "6 records" in rr.error and "at least 50" in rr.error
    body = _api_get(world, world.owner, world.release).json()
    assert body["status"] == "not computable" and "at least 50" in body["reason"]
    assert body["attacks"] == [] and body["control"] == [] and body["claimed_epsilon"] == 0.5


@pytest.mark.parametrize("who", ["analyst", "stranger_analyst", "other_steward", "outsider"])
def test_everyone_but_the_owner_gets_404(world, who):
    risk.compute(world.release, noise=Noise.seeded(0))
    user = getattr(world, who)
    assert _api_get(world, user, world.release).status_code in ((404,) if who != "outsider" else (401, 404))
    c = world.client(user)
    assert c.post(reverse("dpportal-release-risk", args=[world.release.pk])).status_code == 404
    assert "risk-report" not in c.get(reverse("dpportal-release", args=[world.release.pk])).content.decode()


def test_a_computed_report_reaches_the_api_and_the_pages(world):
    dataset = _ids_dataset(world.owner)
    release = run_release(dataset, world.owner, epsilon="1", rows=N_IDS)
    rr = risk.compute(release, runs=2, noise=Noise.seeded(1))
    assert rr.status == RiskReport.DONE, rr.error
    resp = _api_get(world, world.owner, release)
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "done" and body["claimed_epsilon"] == 1.0 and body["guarantee_failed"] is False
    assert {a["name"] for a in body["attacks"]} == set(mrisk.ATTACKS)
    # the shadow classifier is trained for the mechanism's game: no row against the controls; the
    # implementation check reads a refit's measurements: no row against the members themselves
    assert {a["name"] for a in body["control"]} == set(mrisk.BASE_ATTACKS) | {mrisk.WHITE_BOX}
    assert {a["release"] for a in body["control"] if a["name"] == mrisk.WHITE_BOX} == {"noise switched off"}
    check = body["implementation_check"]
    assert check["available"] and check["refits"] == 2 + check["measure_only_refits"] > 2
    assert {a["sees"] for a in body["attacks"]} == {"synthetic rows", "noisy measurements"}
    for a in body["attacks"] + body["control"]:
        assert set(a) >= {"name", "auc", "tpr_at_fpr", "epsilon_lower_bound"} and set(a["tpr_at_fpr"]) == {
            "0.01",
            "0.001",
        }
    assert all(a["epsilon_lower_bound"] <= 1.0 for a in body["attacks"])
    assert body["control_detected"] and body["control_auc"] >= 0.9  # the members themselves are found
    page = world.client(world.owner).get(reverse("dpportal-release-dashboard", args=[release.pk])).content.decode()
    assert (
        'id="risk-summary"' in page and "more success than a coin flip" in page and "risk-guarantee-failed" not in page
    )
    assert 'id="risk-linkability"' in page and "Attribute inference" in page and 'id="risk-singling-out"' in page
    assert 'id="risk-implementation-check"' in page and 'id="risk-check-note"' in page and "which no analyst" in page
    assert body["singling_out"]["queries"] > 0 and body["target_pairs"] > 0
    detail = world.client(world.owner).get(reverse("dpportal-release", args=[release.pk])).content.decode()
    assert "more success than a coin flip" in detail and "risk-guarantee-failed" not in detail


def test_a_bound_above_the_claim_is_flagged_and_logged(world, monkeypatch, caplog):
    """A broken variant (noise scale divided by 10) refitted in place of the release's own noise."""
    real = mrisk.risk_report
    monkeypatch.setattr(mrisk, "risk_report", lambda *a, **kw: real(*a, attack_noise=ScaledNoise(0.1, seed=1), **kw))
    dataset = _ids_dataset(world.owner)
    release = run_release(dataset, world.owner, epsilon="1", rows=50)
    with caplog.at_level(logging.ERROR, logger="dpportal.dashboards.risk"):
        rr = risk.compute(release, runs=4, noise=Noise.seeded(0))
    assert rr.status == RiskReport.DONE and rr.guarantee_failed and rr.results["epsilon_lower_bound"] > 1.0
    assert any("guarantee does not hold" in r.getMessage() for r in caplog.records)
    detail = world.client(world.owner).get(reverse("dpportal-release", args=[release.pk])).content.decode()
    assert 'id="risk-guarantee-failed"' in detail
    assert _api_get(world, world.owner, release).json()["guarantee_failed"] is True
    listing = world.client(world.owner).get(reverse("dpportal-dataset-dashboard", args=[dataset.pk])).content.decode()
    assert "risk-failed" in listing and "guarantee FAILED" in listing


def test_cancel_and_deleted_raw_data(world, django_capture_on_commit_callbacks):
    c = world.client(world.owner)
    url = reverse("dpportal-release-risk", args=[world.release.pk])
    with django_capture_on_commit_callbacks(execute=False):  # queued, not run
        assert c.post(url).status_code == 302
        assert c.post(url, {"action": "cancel"}).status_code == 302
    assert RiskReport.objects.get(release=world.release).status == RiskReport.CANCELLED
    risk.risk_report_finished_release(world.release.pk)  # the queued task then does nothing
    assert RiskReport.objects.get(release=world.release).status == RiskReport.CANCELLED
    from django.utils import timezone

    world.dataset.raw_deleted_at = timezone.now()
    world.dataset.save(update_fields=["raw_deleted_at"])
    world.release.refresh_from_db()
    rr = risk.compute(world.release, noise=Noise.seeded(0))
    assert rr.status == RiskReport.NOT_COMPUTABLE and "deleted" in rr.error


def test_a_release_without_a_report_says_so(world):
    body = _api_get(world, world.owner, world.release).json()  # the fixture's release ran no report
    assert body["status"] == "not requested" and "dashboard" in body["reason"] and body["attacks"] == []


def test_draws_get_no_report_of_their_own(world):
    draw = release_services.draw_more(world.release, world.owner, 5)
    assert tasks.request_risk_report(draw) is None
    body = _api_get(world, world.owner, draw).json()
    assert body["status"] == "not computable" and "draw" in body["reason"]


def test_a_cancel_stops_a_running_report_at_its_next_progress_point(world, monkeypatch):
    from django.utils import timezone

    dataset = _ids_dataset(world.owner)
    release = run_release(dataset, world.owner, epsilon="1", rows=50)
    seen = []
    real_refit = mrisk.refit.fit_and_sample

    def refit_then_cancel(*a, **kw):  # the steward presses cancel while the first refit runs
        seen.append(1)
        RiskReport.objects.filter(release=release).update(cancel_requested_at=timezone.now())
        monkeypatch.setattr(jobs, "PROGRESS_WRITE_INTERVAL", 0.0)
        return real_refit(*a, **kw)

    monkeypatch.setattr(mrisk.refit, "fit_and_sample", refit_then_cancel)
    rr = risk.compute(release, runs=3, noise=Noise.seeded(0))
    assert rr.status == RiskReport.CANCELLED and len(seen) == 1 and rr.results is None


def test_skipped_refits_are_counted_not_listed():
    from dpportal.dashboards.templatetags.dashboard_tags import tally

    assert tally(["shadow", "private", "noise off", "private", "private"]) == "1 shadow, 3 private, 1 noise off"
    assert tally([]) == "" and tally(None) == ""
