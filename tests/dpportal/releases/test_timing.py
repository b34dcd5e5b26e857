"""Time estimate, queue position, elapsed and remaining, and the queue each job goes to."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.releases import services
from dpportal.releases.models import Release


def _plan(world, mechanism="baseline", params=None, epsilon="0.1") -> Release:
    return services.plan_release(
        world.dataset,
        world.owner,
        services.ReleaseRequest(
            mechanism=mechanism,
            epsilon=epsilon,
            delta="1e-6" if mechanism == "dpmerf" else "0",
            params=params or {},
            rows=20,
        ),
    )


def _status(world, release) -> dict:
    return world.client(world.owner).get(f"/releases/{release.pk}/status.json").json()


def test_queued_releases_know_their_position_in_their_queue(world):
    first, second = _plan(world), _plan(world)
    assert first.queue == second.queue == "fast" and first.estimate_seconds > 0
    assert _status(world, first)["queue_position"] == 1
    s = _status(world, second)
    assert s["queue_position"] == 2 and s["timing_text"].startswith("position 2 in the fast queue")
    services.cancel(first)
    assert _status(world, second)["queue_position"] == 1


def test_a_long_fit_goes_to_the_synthesis_queue_and_draws_to_the_fast_queue(world, settings):
    settings.DPPORTAL_FAST_JOB_SECONDS = 20
    fit = _plan(world, "dpmerf", {"epochs": 100000})
    assert fit.queue == "synthesis" and fit.estimate_seconds > 20
    draw = services.draw_more(world.release, world.owner, 10)
    assert draw.queue == "fast"
    settings.DPPORTAL_FAST_JOB_SECONDS = 0  # everything is "long"
    assert _plan(world).queue == "synthesis"


def test_a_running_release_reports_elapsed_and_remaining(world):
    r = _plan(world)
    assert services.claim(r.pk)
    Release.objects.filter(pk=r.pk).update(
        started_at=timezone.now() - timedelta(seconds=30), progress=0.25, estimate_seconds=100
    )
    s = _status(world, r)
    assert 29 <= s["elapsed_seconds"] <= 40 and 60 <= s["remaining_seconds"] <= 71  # the estimate counted down
    assert "left" in s["timing_text"] and s["over_estimate"] is False
    api = world.client(None).get(f"/api/releases/{r.pk}/", **world.api(world.owner)).json()
    assert "remaining_seconds" in api and api["queue"] == "fast"


def test_time_left_never_grows_while_the_job_keeps_within_its_estimate(world):
    """Progress steps are not equal in time: the pace at 39 % said 47 s, ten seconds later 62 s."""
    r = _plan(world)
    assert services.claim(r.pk)
    left = []
    for elapsed, progress in [(10, 0.05), (30, 0.39), (40, 0.39), (50, 0.42), (70, 0.8), (95, 0.81)]:
        Release.objects.filter(pk=r.pk).update(
            started_at=timezone.now() - timedelta(seconds=elapsed), progress=progress, estimate_seconds=100
        )
        left.append(_status(world, r)["remaining_seconds"])
    assert left == sorted(left, reverse=True) and left[-1] <= 6, left


def test_past_its_estimate_a_job_says_so_instead_of_a_growing_time_left(world):
    r = _plan(world)
    assert services.claim(r.pk)
    Release.objects.filter(pk=r.pk).update(
        started_at=timezone.now() - timedelta(seconds=120), progress=0.5, estimate_seconds=100
    )
    s = _status(world, r)
    assert s["remaining_seconds"] is None and s["over_estimate"] is True
    assert "longer than its estimate of" in s["timing_text"] and "50% done" in s["timing_text"]
    assert "at its pace so far" in s["timing_text"] and 115 <= s["pace_remaining_seconds"] <= 125


def test_the_api_estimates_a_request_without_charging_it(world):
    before = ledger.remaining(Dataset.objects.get(pk=world.dataset.pk))
    n = Release.objects.count()
    resp = world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/estimate/",
        json.dumps({"mechanism": "dpmerf", "epsilon": "1", "delta": "1e-6", "params": {"epochs": 100000}}),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["seconds"] > 20 and resp.json()["queue"] == "synthesis"
    bad = world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/estimate/",
        json.dumps({"mechanism": "dpmerf", "epsilon": "1", "delta": "1e-6", "params": {"epochs": -3}}),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert bad.status_code == 400 and "epochs" in bad.json()["error"]
    assert Release.objects.count() == n and ledger.remaining(Dataset.objects.get(pk=world.dataset.pk)) == before


def test_the_release_form_shows_the_estimate_before_submit(world):
    page = (
        world.client(world.owner)
        .get(f"/datasets/{world.dataset.pk}/releases/new/?mechanism=dpmerf&param_epochs=100000")
        .content.decode()
    )
    assert 'id="runtime-estimate"' in page and "Estimated run time: about" in page
    assert "synthesis queue" in page


def _as_post(values: dict) -> dict:
    """What a browser submits for a form showing ``values`` (unticked boxes and empty values left out)."""
    out = {}
    for k, v in values.items():
        if v is True:
            out[k] = "on"
        elif v not in (None, False, ""):
            out[k] = str(v)
    return out


def test_the_estimate_on_load_is_the_one_after_update_and_on_the_release_page(world):
    """The guide presets AIM's workload=target and a delta: the estimate shown on load is for those values,
    the same after "Update run-time estimate" and on the release page of the submitted release."""
    c = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/"
    query = {"purpose": "ml", "target": "city", "epsilon": "0.8", "mechanism": "aim"}
    loaded = c.get(url, query)
    shown = loaded.context["runtime_estimate"]
    post = {**query, **_as_post(loaded.context["form"].effective_values()), "rows": "20"}
    assert post["param_workload"] == "target" and post["param_target"] == "city"
    assert shown["low_seconds"] <= shown["seconds"] <= shown["high_seconds"] and shown["range_reason"]
    updated = c.post(url, {**post, "estimate": "1"}).context["runtime_estimate"]
    assert updated["seconds"] == shown["seconds"] and updated["text"] == shown["text"]
    assert c.post(url, post).status_code == 302
    release = Release.objects.latest("pk")
    assert release.params.get("workload") == "target" and round(release.estimate_seconds, 1) == shown["seconds"]
    page = c.get(f"/releases/{release.pk}/").content.decode()
    assert shown["text"] in page and "time budget bounds it" in loaded.content.decode()


def test_the_queue_wait_adds_the_remaining_estimates_of_the_jobs_ahead(world):
    running, first, second = _plan(world), _plan(world), _plan(world)
    assert services.claim(running.pk)
    Release.objects.filter(pk=running.pk).update(
        started_at=timezone.now() - timedelta(seconds=30), progress=0.02, estimate_seconds=100
    )
    Release.objects.filter(pk=first.pk).update(estimate_seconds=200)
    s = _status(world, second)
    assert s["jobs_ahead"] == 2 and 265 <= s["wait_seconds"] <= 271  # 70 s left of the running one + 200 s
    assert "2 jobs ahead: it starts in about 4 min" in s["timing_text"]
    first_status = _status(world, first)
    assert first_status["jobs_ahead"] == 1 and 65 <= first_status["wait_seconds"] <= 71
    page = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/releases/new/?mechanism=baseline")
    est = page.context["runtime_estimate"]
    assert est["jobs_ahead"] == 3 and "3 jobs ahead" in page.content.decode()
    api = (
        world.client(None)
        .post(
            f"/api/datasets/{world.dataset.pk}/releases/estimate/",
            json.dumps({"mechanism": "baseline", "epsilon": "0.1"}),
            content_type="application/json",
            **world.api(world.owner),
        )
        .json()
    )
    assert api["jobs_ahead"] == 3 and abs(api["wait_seconds"] - est["wait_seconds"]) < 2  # the running job went on
