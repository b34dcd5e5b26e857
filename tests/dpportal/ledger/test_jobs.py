"""The job lifecycle as the ledger sees it (in-process, no broker): done -> spent; failed before
touching data -> refunded; failed after -> spent; a second delivery of a finished job does nothing."""

from __future__ import annotations

import pytest

from dpportal.ledger import services as ledger
from dpportal.ledger.models import LedgerEntry
from dpportal.releases import services as jobs
from dpportal.releases.models import Release

from .scenario import plan, ready_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def ready(personas):  # storage: the private_storage fixture
    return ready_dataset(personas.owner)


def run_job(release) -> Release:
    assert jobs.claim(release.pk)
    jobs.execute(release.pk)
    return Release.objects.get(pk=release.pk)


def kinds(release) -> list[str]:
    return list(LedgerEntry.objects.filter(release_pk=release.pk).order_by("seq").values_list("kind", flat=True))


def test_a_finished_job_is_spent(ready, personas):
    release = run_job(plan(ready, personas.owner, epsilon="0.5"))
    assert release.status == "done" and release.data_touched
    assert kinds(release) == ["reserve", "spend"]
    spend = LedgerEntry.objects.get(release_pk=release.pk, kind="spend")
    assert spend.guarantee == "pure"
    left = ledger.remaining(ready)["epsilon"]
    assert (left["spent"], left["reserved"], left["remaining"]) == ("0.5", "0", "0.5")


def test_a_job_failing_before_it_reads_data_is_refunded(ready, personas):
    release = plan(ready, personas.owner, epsilon="0.5")
    Release.objects.filter(pk=release.pk).update(params={"no_such_parameter": 1})  # build() fails in the worker
    release = run_job(release)
    assert release.status == "failed" and not release.data_touched
    assert kinds(release) == ["reserve", "refund"]
    assert ledger.remaining(ready)["epsilon"]["remaining"] == "1"


def test_a_job_failing_after_it_touched_data_stays_spent(ready, personas, monkeypatch):
    from mechanisms.synthesizers.baseline import Baseline

    def fit_then_crash(self, source):
        raise RuntimeError("crash after the noise was drawn")

    monkeypatch.setattr(Baseline, "_fit", fit_then_crash)
    release = run_job(plan(ready, personas.owner, epsilon="0.5"))
    assert release.status == "failed" and release.data_touched and not release.output_file
    assert kinds(release) == ["reserve", "spend"]
    assert ledger.remaining(ready)["epsilon"]["spent"] == "0.5"


def test_a_second_delivery_of_a_finished_job_does_nothing(ready, personas):
    from dpportal.releases.tasks import run_release

    release = run_job(plan(ready, personas.owner, epsilon="0.5"))
    before = list(LedgerEntry.objects.values_list("hash", flat=True))
    run_release.apply(args=[release.pk])
    assert Release.objects.get(pk=release.pk).finished_at == release.finished_at
    assert list(LedgerEntry.objects.values_list("hash", flat=True)) == before
    assert ledger.verify_dataset(ready.pk).ok


def test_an_over_budget_plan_creates_no_release_and_queues_nothing(ready, personas, django_capture_on_commit_callbacks):
    from dpportal.releases.services import ReleaseRequestError

    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(ReleaseRequestError, match="remaining"):
        plan(ready, personas.owner, epsilon="1.5")
    assert callbacks == [] and not Release.objects.exists()
    assert ledger.remaining(ready)["epsilon"]["reserved"] == "0"


def test_a_worker_that_lost_its_job_never_reads_the_data(ready, personas, monkeypatch):
    """A spurious redelivery declared the job abandoned (failed + refunded) while its first worker
    was still alive: that worker must stop before reading data, so the refund stays honest."""
    from mechanisms.synthesizers.baseline import Baseline

    release = plan(ready, personas.owner, epsilon="0.5")
    assert jobs.claim(release.pk)
    assert jobs.fail_abandoned(release.pk)  # the other delivery: failed, refunded (data untouched)
    read = []
    monkeypatch.setattr(Baseline, "_fit", lambda self, source: read.append(1))
    jobs.execute(release.pk)  # the original worker carries on
    release = Release.objects.get(pk=release.pk)
    assert read == [] and not release.data_touched and release.status == "failed" and not release.output_file
    assert kinds(release) == ["reserve", "refund"]
    assert ledger.verify_dataset(ready.pk).ok
