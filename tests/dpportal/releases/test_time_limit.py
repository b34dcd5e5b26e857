"""A release estimated to run longer than the task time limit is refused before anything is reserved,
in the form and the API; the estimate says so beforehand."""

from __future__ import annotations

import json

import pytest

from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.releases import services
from dpportal.releases.models import Release

LONG = {"mechanism": "dpmerf", "epsilon": "1", "delta": "1e-6", "params": {"epochs": 100_000}}


def _state(world):
    return Release.objects.count(), ledger.remaining(Dataset.objects.get(pk=world.dataset.pk))


def _post(world, path, body):
    return world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/{path}",
        json.dumps(body),
        content_type="application/json",
        **world.api(world.owner),
    )


def test_the_api_refuses_a_release_over_the_time_limit_and_charges_nothing(world, settings):
    settings.CELERY_TASK_TIME_LIMIT = 120
    before = _state(world)
    est = _post(world, "releases/estimate/", LONG).json()
    assert est["seconds"] > 120 and est["over_time_limit"] is True and est["time_limit_seconds"] == 120
    resp = _post(world, "releases/", LONG)
    assert resp.status_code == 400, resp.content
    message = resp.json()["error"]
    assert "more than the time limit of about 2 min per job (DPPORTAL_TASK_TIME_LIMIT=120)" in message
    assert "Nothing was charged" in message and _state(world) == before
    ok = _post(world, "releases/", {**LONG, "params": {"epochs": 50}})
    assert (
        ok.status_code == 201
        and _post(world, "releases/estimate/", {**LONG, "params": {"epochs": 50}}).json()["over_time_limit"] is False
    )


def test_the_limit_follows_the_setting(world, settings):
    settings.CELERY_TASK_TIME_LIMIT = 10
    before = _state(world)
    with pytest.raises(services.ReleaseRequestError, match="time limit of about 10 s per job"):
        services.plan_release(
            world.dataset,
            world.owner,
            services.ReleaseRequest(mechanism="dpmerf", epsilon="1", delta="1e-6", params={"epochs": 100_000}, rows=20),
        )
    assert _state(world) == before


def test_the_form_warns_and_refuses(world, settings):
    settings.CELERY_TASK_TIME_LIMIT = 120
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/"
    page = client.get(url + "?mechanism=dpmerf&param_epochs=100000").content.decode()
    assert 'id="over-time-limit"' in page
    before = _state(world)
    resp = client.post(
        url, {"mechanism": "dpmerf", "epsilon": "1", "delta": "1e-6", "rows": "20", "param_epochs": "100000"}
    )
    assert resp.status_code == 200 and "more than the time limit" in resp.content.decode()
    assert _state(world) == before


def test_a_job_past_its_memory_limit_fails_as_a_job_and_stays_spent(world, monkeypatch, settings):
    """The pool process's memory cap (DPPORTAL_JOB_MEMORY_LIMIT_MB) turns a runaway allocation into a
    MemoryError inside fit: the release fails with a message naming the limit; it had read the data, so
    its budget stays spent."""
    from mechanisms.synthesizers.baseline import Baseline

    def runaway(self, source):
        source.frame()
        raise MemoryError

    settings.DPPORTAL_JOB_MEMORY_LIMIT_MB = 1024
    monkeypatch.setattr(Baseline, "_fit", runaway)
    release = services.plan_release(
        world.dataset,
        world.owner,
        services.ReleaseRequest(mechanism="baseline", epsilon="0.25", delta="0", params={}, rows=20),
    )
    assert services.claim(release.pk)
    services.execute(release.pk)
    release.refresh_from_db()
    assert release.status == Release.FAILED and release.data_touched
    assert "more memory than the limit of 1,024 MiB per job (DPPORTAL_JOB_MEMORY_LIMIT_MB)" in release.error
    assert ledger.remaining(Dataset.objects.get(pk=world.dataset.pk))["epsilon"]["spent"] == "0.75"
