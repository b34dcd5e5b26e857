"""Queueing by the task's name: a planned job reaches its queue once its reservation commits, and with
DPPORTAL_TASKS_EAGER it runs at once; a finished table tells the dashboards through a signal."""

from __future__ import annotations

from celery import current_app

from dpportal.dashboards.models import Evaluation, RiskReport
from dpportal.releases import services
from dpportal.releases.models import Release
from dpportal.releases.services import jobs, queueing


def _request(epsilon="0.1", rows=10):
    return services.ReleaseRequest("baseline", epsilon, "0", {}, rows)


def test_a_planned_release_is_sent_by_name_to_the_queue_on_its_row(
    world, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args, **kw: sent.append((name, args, kw)))
    with django_capture_on_commit_callbacks(execute=True):
        r = services.plan_release(world.dataset, world.owner, _request())
    assert sent == [(queueing.RUN_RELEASE, [r.pk], {"queue": r.queue})]
    with django_capture_on_commit_callbacks(execute=False):
        services.plan_release(world.dataset, world.owner, _request())
    assert len(sent) == 1  # nothing sent before the reservation commits


def test_the_name_is_the_registered_task_and_eager_mode_runs_the_job(
    world, settings, django_capture_on_commit_callbacks
):
    from dpportal.releases.tasks import run_release

    assert run_release.name == queueing.RUN_RELEASE
    settings.CELERY_TASK_ALWAYS_EAGER = True
    with django_capture_on_commit_callbacks(execute=True):
        r = services.plan_release(world.dataset, world.owner, _request())
    r.refresh_from_db()
    assert r.status == Release.DONE, r.error


def test_a_finished_table_queues_its_evaluation_and_risk_report_through_the_signal(world):
    received = []
    jobs.table_made.connect(lambda sender, release, **kw: received.append(release.pk), weak=False, dispatch_uid="t")
    try:
        jobs.queue_evaluation(world.release.pk)
    finally:
        jobs.table_made.disconnect(dispatch_uid="t")
    assert received == [world.release.pk]
    assert Evaluation.objects.get(release=world.release).status == Evaluation.PENDING  # the dashboards' receiver
    assert RiskReport.objects.get(release=world.release).status == RiskReport.PENDING
