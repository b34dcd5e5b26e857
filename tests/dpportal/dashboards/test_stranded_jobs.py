"""Every job kind is settled after its process dies: a utility evaluation or a risk report left
"running" by a worker that vanished is failed by the same sweep as the releases (``manage.py
sweep_releases``, the loop beside every worker), a live one is left alone, and long loops stop between
steps once their time is up."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from dpportal import jobs
from dpportal.dashboards import services, tasks
from dpportal.dashboards.models import Evaluation, RiskReport


def _running(model, release, *, silent_for: float, heartbeat: bool = True):
    row, _ = model.objects.get_or_create(release=release)
    past = timezone.now() - timedelta(seconds=silent_for)
    model.objects.filter(pk=row.pk).update(
        status=model.RUNNING,
        stage="refit 1/32",
        progress=0.1,
        started_at=past,
        heartbeat_at=past if heartbeat else None,
    )
    return row


def _sweep() -> None:
    call_command("sweep_releases", stdout=open(os.devnull, "w"))


@pytest.mark.parametrize("model", [RiskReport, Evaluation])
def test_a_report_whose_worker_vanished_is_failed_by_the_sweep(world, settings, model):
    settings.DPPORTAL_STALE_SECONDS = 60
    row = _running(model, world.release, silent_for=41 * 60, heartbeat=False)  # "refit 1/32", 41 min later
    _sweep()
    row.refresh_from_db()
    assert row.status == model.FAILED and row.finished_at is not None
    assert "no heartbeat for 60 s" in row.error and "again" in row.error
    _sweep()  # a second sweep changes nothing
    assert model.objects.get(pk=row.pk).error == row.error


@pytest.mark.parametrize("model", [RiskReport, Evaluation])
def test_a_live_report_is_left_alone(world, settings, model):
    settings.DPPORTAL_STALE_SECONDS = 60
    row = _running(model, world.release, silent_for=5)
    _sweep()
    assert model.objects.get(pk=row.pk).status == model.RUNNING
    model.objects.filter(pk=row.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    _sweep()  # the same row once silent longer than the stale limit: failed (the check can fail)
    assert model.objects.get(pk=row.pk).status == model.FAILED


def test_every_job_table_is_registered_for_the_sweep():
    assert {t.label: t.model._meta.label for t in jobs.tables()} == {
        "release": "releases.Release",
        "evaluation": "dashboards.Evaluation",
        "risk report": "dashboards.RiskReport",
        "schema check": "datasets.SchemaCheck",
    }


def test_the_evaluation_queue_tasks_beat_while_they_run_and_are_not_sent_again_after_a_kill(
    world, settings, monkeypatch
):
    assert tasks.risk_report_task.reject_on_worker_lost is False
    assert tasks.evaluate_release_task.reject_on_worker_lost is False
    settings.DPPORTAL_HEARTBEAT_SECONDS = 0.05
    row = _running(RiskReport, world.release, silent_for=3600)
    monkeypatch.setattr(tasks.risk, "risk_report_finished_release", lambda release_id: time.sleep(0.3))
    tasks.risk_report_task.apply(args=[world.release.pk])
    row.refresh_from_db()
    assert timezone.now() - row.heartbeat_at < timedelta(seconds=5)


def test_an_evaluation_stops_between_steps_once_its_time_is_up(world, settings):
    settings.CELERY_TASK_SOFT_TIME_LIMIT = 0
    ev = services.evaluate_release(world.release)
    assert ev.status == Evaluation.FAILED and "stopped after its time limit of 0 s" in ev.error


def test_the_progress_helper_writes_only_while_running_and_raises_once_cancelled(world):
    from dpportal.releases.models import Release

    row = _running(RiskReport, world.release, silent_for=0)
    progress = jobs.Progress(RiskReport, row.pk, interval=0)
    progress(0.5, "half way")
    assert RiskReport.objects.filter(pk=row.pk, progress=0.5, stage="half way").exists()
    RiskReport.objects.filter(pk=row.pk).update(cancel_requested_at=timezone.now())
    with pytest.raises(jobs.Cancelled):
        progress(0.6, "next step")
    assert jobs.Progress(Release, world.release.pk).cancellable and not jobs.Progress(Evaluation, 1).cancellable


@pytest.mark.parametrize("kind", ["release", "draw", "bounds"])
def test_every_kind_stored_as_a_release_row_is_failed_and_settled_by_the_same_sweep(world, settings, kind):
    from dpportal.ledger import services as ledger
    from dpportal.releases import services as release_services
    from dpportal.releases.models import Release

    settings.DPPORTAL_STALE_SECONDS = 60
    before = ledger.remaining(world.dataset)["epsilon"]["remaining"]
    if kind == "draw":
        row = release_services.draw_more(world.release, world.owner, 10)
    elif kind == "bounds":
        row = release_services.plan_bounds(world.dataset, world.owner, columns=[world.dataset.header[0]], epsilon="0.1")
    else:
        row = release_services.plan_release(
            world.dataset, world.owner, release_services.ReleaseRequest("baseline", "0.1", "0", {}, 10)
        )
    assert release_services.claim(row.pk)
    Release.objects.filter(pk=row.pk).update(started_at=timezone.now() - timedelta(hours=1))
    _sweep()
    row.refresh_from_db()
    assert row.status == Release.FAILED and "refunded" in row.error  # it never read the data
    assert ledger.remaining(world.dataset)["epsilon"]["remaining"] == before
