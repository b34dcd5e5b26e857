"""Stranded jobs: a release whose worker vanished is failed and settled by the sweeper,
spent if it had read data, refunded otherwise; a live job (fresh heartbeat) is left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from dpportal.ledger import services as ledger
from dpportal.releases import services as jobs
from dpportal.releases import sweeper
from dpportal.releases.models import Release

from .scenario import plan, ready_dataset
from .test_jobs import kinds

pytestmark = pytest.mark.django_db


@pytest.fixture
def ready(settings, personas):  # storage: the private_storage fixture
    settings.DPPORTAL_STALE_SECONDS = 60
    return ready_dataset(personas.owner)


def running(dataset, owner, *, silent_for: float, touched: bool, epsilon: str = "0.25") -> Release:
    release = plan(dataset, owner, epsilon=epsilon)
    assert jobs.claim(release.pk)
    Release.objects.filter(pk=release.pk).update(
        data_touched=touched, heartbeat_at=timezone.now() - timedelta(seconds=silent_for)
    )
    return release


def test_a_silent_job_that_read_data_is_failed_and_spent(ready, personas):
    release = running(ready, personas.owner, silent_for=61, touched=True)
    assert sweeper.sweep() == [release.pk]
    release.refresh_from_db()
    assert release.status == "failed" and "stopped without a trace" in release.error and "spent" in release.error
    assert kinds(release) == ["reserve", "spend"]
    assert ledger.remaining(ready)["epsilon"]["reserved"] == "0"


def test_a_silent_job_that_never_read_data_is_refunded(ready, personas):
    release = running(ready, personas.owner, silent_for=61, touched=False)
    assert sweeper.sweep() == [release.pk]
    release.refresh_from_db()
    assert release.status == "failed" and "refunded" in release.error
    assert kinds(release) == ["reserve", "refund"]
    assert ledger.remaining(ready)["epsilon"]["spent"] == "0"


def test_a_live_job_is_left_alone_and_a_second_sweep_changes_nothing(ready, personas):
    live = running(ready, personas.owner, silent_for=5, touched=True)
    dead = running(ready, personas.owner, silent_for=600, touched=True)
    assert sweeper.sweep() == [dead.pk]
    assert sweeper.sweep() == []
    assert Release.objects.get(pk=live.pk).status == "running" and kinds(live) == ["reserve"]
    assert kinds(dead) == ["reserve", "spend"]


def test_a_job_without_heartbeat_is_judged_by_its_start(ready, personas):
    release = running(ready, personas.owner, silent_for=0, touched=True)
    Release.objects.filter(pk=release.pk).update(heartbeat_at=None, started_at=timezone.now() - timedelta(hours=1))
    call_command("sweep_releases")
    assert Release.objects.get(pk=release.pk).status == "failed"


def test_a_queued_or_finished_release_is_never_swept(ready, personas):
    queued = plan(ready, personas.owner, epsilon="0.25")
    Release.objects.filter(pk=queued.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert sweeper.sweep() == [] and Release.objects.get(pk=queued.pk).status == "queued"


def test_the_heartbeat_thread_keeps_a_long_job_alive(ready, personas, settings):
    """The broken variant: without beats, the same job would be swept (checked with a past heartbeat)."""
    import time

    settings.DPPORTAL_HEARTBEAT_SECONDS = 0.05
    release = running(ready, personas.owner, silent_for=3600, touched=True)
    with sweeper.heartbeat(release.pk):
        time.sleep(0.3)
        assert sweeper.sweep() == []
    assert Release.objects.get(pk=release.pk).status == "running"
    Release.objects.filter(pk=release.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=3600))
    assert sweeper.sweep() == [release.pk]


def test_a_cold_shutdown_is_named_not_minus_241():
    assert jobs.failure_text(SystemExit(-241)).startswith("the worker was shut down by SIGTERM")
    assert "-241" not in jobs.failure_text(SystemExit(-241))


def test_the_sweep_loop_runs_once_per_data_directory_and_stops_with_its_worker(ready, settings, tmp_path):
    import fcntl
    import os

    settings.DATA_DIR = tmp_path
    with open(tmp_path / "sweeper.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        sweeper.run_loop(parent=os.getpid())  # another loop holds the lock: returns at once
    gone = 2**22 + 12345  # no such process
    sweeper.run_loop(parent=gone)  # the worker that started it is gone: returns without sweeping
    assert not sweeper._alive(gone) and not sweeper._alive(os.getpid())  # our parent is pytest's, not us
