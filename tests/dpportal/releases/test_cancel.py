"""Cancel: the steward cancels a queued release (refunded: it never touched data) or a
running one (it stops at its next progress point; spent if it had read the data, refunded if not).
In-process here; tests/e2e/test_jobs_live.py does it with a real worker."""

from __future__ import annotations

from pathlib import Path

from dpportal import jobs
from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.ledger.models import LedgerEntry
from dpportal.releases import services
from dpportal.releases.models import Release

from tests.personas import run_release


def _plan(world, epsilon="0.25") -> Release:
    return services.plan_release(
        world.dataset,
        world.owner,
        services.ReleaseRequest(mechanism="baseline", epsilon=epsilon, delta="0", params={}, rows=20),
    )


def _cancel_api(world, release, user=None):
    return world.client(None).post(f"/api/releases/{release.pk}/cancel/", **world.api(user or world.owner))


def _left(world) -> dict:
    return ledger.remaining(Dataset.objects.get(pk=world.dataset.pk))  # fresh: the budget row is cached


def _kinds(release) -> list[str]:
    return list(LedgerEntry.objects.filter(release_id=release.pk).order_by("seq").values_list("kind", flat=True))


def test_a_queued_release_is_cancelled_at_once_and_refunded(world):
    before = _left(world)
    release = _plan(world)
    assert _left(world) != before  # reserved
    resp = _cancel_api(world, release)
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["status"] == "cancelled" and body["finished"] and not body["data_touched"] and not body["can_cancel"]
    assert _left(world) == before
    assert _kinds(release) == [LedgerEntry.RESERVE, LedgerEntry.REFUND]
    assert not services.claim(release.pk)  # the queued message, when a worker gets it, does nothing


def test_a_running_release_cancelled_before_reading_data_stops_and_is_refunded(world):
    before = _left(world)
    release = _plan(world)
    assert services.claim(release.pk)
    resp = _cancel_api(world, release)
    assert resp.status_code == 202 and resp.json()["cancel_requested"] and resp.json()["status"] == "running"
    services.execute(release.pk)
    release.refresh_from_db()
    assert release.status == "cancelled" and not release.data_touched and not release.output_file
    assert "cancelled by the steward" in release.error
    assert _left(world) == before


def test_a_running_release_cancelled_after_reading_data_stops_at_the_next_progress_point_and_is_spent(
    world, monkeypatch
):
    release = _plan(world)
    touched = services.worker.mark_data_touched

    def touch_then_cancel(release_id):
        touched(release_id)
        services.cancel(Release.objects.get(pk=release_id))  # the steward clicks while the fit runs

    monkeypatch.setattr(services.worker, "mark_data_touched", touch_then_cancel)
    assert services.claim(release.pk)
    services.execute(release.pk)
    release.refresh_from_db()
    assert release.status == "cancelled" and release.data_touched and not release.output_file
    assert not (release.storage_dir()).exists()  # no output written
    assert _kinds(release) == [LedgerEntry.RESERVE, LedgerEntry.SPEND]


def test_the_cancel_check_is_what_stops_the_job(world, monkeypatch):
    """The broken variant: a progress callback that ignores the cancel request lets the job finish."""
    monkeypatch.setattr(jobs.Progress, "raise_if_cancelled", lambda self: None)
    release = _plan(world)
    assert services.claim(release.pk)
    services.cancel(release)
    services.execute(release.pk)
    release.refresh_from_db()
    assert release.status != "cancelled"


def test_finished_releases_cannot_be_cancelled_and_others_cannot_cancel(world):
    resp = _cancel_api(world, world.release)
    assert resp.status_code == 409 and "release %d is done" % world.release.pk in resp.json()["error"]
    queued = _plan(world)
    for user in (world.analyst, world.other_steward):
        assert _cancel_api(world, queued, user).status_code in (403, 404)
    assert Release.objects.get(pk=queued.pk).status == "queued"


def test_the_release_page_has_a_cancel_button_for_the_steward_only(world):
    queued = _plan(world)
    page = world.client(world.owner).get(f"/releases/{queued.pk}/").content.decode()
    assert 'id="cancel-release"' in page and "Not started: cancelling refunds its reserved budget" in page
    assert 'id="cancel-release"' not in world.client(world.analyst).get(f"/releases/{queued.pk}/").content.decode()
    assert 'id="cancel-release"' not in world.client(world.owner).get(f"/releases/{world.release.pk}/").content.decode()
    resp = world.client(world.owner).post(f"/releases/{queued.pk}/cancel/", follow=True)
    assert "cancelled before it started; its reserved budget was refunded" in resp.content.decode()
    assert Release.objects.get(pk=queued.pk).status == "cancelled"
    resp = world.client(world.owner).post(f"/releases/{queued.pk}/cancel/", follow=True)
    assert "only a queued or running release can be cancelled" in resp.content.decode()
    assert world.client(world.analyst).post(f"/releases/{queued.pk}/cancel/").status_code == 404


def test_a_draw_can_be_cancelled_and_charges_nothing(world):
    before = _left(world)
    draw = services.draw_more(world.release, world.owner, 30)
    services.cancel(draw)
    draw.refresh_from_db()
    assert draw.status == "cancelled" and _left(world) == before
    assert run_release  # the personas' in-process runner stays the path for finished releases


def test_a_release_cancelled_after_reading_data_says_what_was_spent_and_offers_no_download(world, monkeypatch):
    release = _plan(world)
    touched = services.worker.mark_data_touched

    def touch_then_cancel(release_id):
        touched(release_id)
        services.cancel(Release.objects.get(pk=release_id))

    monkeypatch.setattr(services.worker, "mark_data_touched", touch_then_cancel)
    assert services.claim(release.pk)
    services.execute(release.pk)
    page = world.client(world.owner).get(f"/releases/{release.pk}/").content.decode()
    assert "Available when the release is done" not in page
    assert "No downloads: the release cancelled before it finished; its cost, ε 0.25 and δ 0, is spent" in page
    spend = LedgerEntry.objects.get(release_id=release.pk, kind=LedgerEntry.SPEND)
    assert "cancelled by the steward after reading the data: ε 0.25 and δ 0 spent" in spend.note
    ledger_page = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/ledger/").content.decode()
    assert "cancelled by the steward after reading the data: ε 0.25 and δ 0 spent" in ledger_page
    queued = _plan(world)
    services.cancel(queued)
    refund = LedgerEntry.objects.get(release_id=queued.pk, kind=LedgerEntry.REFUND)
    assert "before reading the data: ε 0.25 and δ 0 refunded" in refund.note


def test_a_queued_draw_never_speaks_of_a_refund(world):
    draw = services.draw_more(world.release, world.owner, 30)
    page = world.client(world.owner).get(f"/releases/{draw.pk}/").content.decode()
    assert 'id="cancel-release"' in page and "refunded" not in page.split('id="cancel-form"')[1].split("</form>")[0]
    assert "reserves no budget" in page
    resp = world.client(world.owner).post(f"/releases/{draw.pk}/cancel/", follow=True).content.decode()
    assert "a draw reserves no budget" in resp and "reserved budget was refunded" not in resp


def test_a_running_release_says_what_cancelling_does_now_not_what_it_did_while_queued(world):
    release = _plan(world)
    assert "Not started" in Release.objects.get(pk=release.pk).cancel_note
    assert services.claim(release.pk)
    page = world.client(world.owner).get(f"/releases/{release.pk}/").content.decode()
    status = world.client(world.owner).get(f"/releases/{release.pk}/status.json").json()
    assert "Not started" not in page and "Not started" not in status["cancel_note"]
    assert "refunded only if it has not read the private data" in status["cancel_note"]
    Release.objects.filter(pk=release.pk).update(data_touched=True)
    status = world.client(world.owner).get(f"/releases/{release.pk}/status.json").json()
    assert "budget stays spent" in status["cancel_note"]
    js = (Path(__file__).resolve().parents[3] / "static" / "dpportal" / "progress.js").read_text()
    assert "s.cancel_note" in js  # the open page follows the job (a page loaded while queued said "Not started")
