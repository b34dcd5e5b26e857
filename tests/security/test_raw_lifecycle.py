"""Raw-data lifecycle: the steward deletes the raw file after releasing; releases, schema and ledger
remain, the dataset shows its raw-data status, no budget is freed and no new release can be made."""

from __future__ import annotations

import pytest

from dpportal.ledger import services as ledger
from dpportal.releases import services as release_services
from dpportal.releases.models import Release


def test_the_owner_deletes_the_raw_file_through_the_page_and_keeps_releases_and_budget(world):
    path = world.dataset.raw_path()
    assert path.is_file()
    before = ledger.remaining(world.dataset)
    client = world.client(world.owner)
    page = client.get(f"/datasets/{world.dataset.pk}/").content.decode()
    assert 'id="raw-delete-form"' in page and "stored" in page
    resp = client.post(f"/datasets/{world.dataset.pk}/raw/delete/", {"confirm": "delete"})
    assert resp.status_code == 302
    world.dataset.refresh_from_db()
    assert not path.exists() and not world.dataset.has_raw and world.dataset.raw_deleted_at is not None
    assert world.dataset.schema_draft is None  # suggestions came from the data: gone with it
    assert world.dataset.schema is not None  # the public schema stays
    assert ledger.remaining(world.dataset) == before  # deleting never frees budget
    page = client.get(f"/datasets/{world.dataset.pk}/").content.decode()
    assert "raw-delete-form" not in page and "deleted" in page
    # the release and its download remain, for the owner and the granted analyst
    assert client.get(f"/releases/{world.release.pk}/synthetic.csv").status_code == 200
    assert world.client(world.analyst).get(f"/releases/{world.release.pk}/synthetic.csv").status_code == 200
    assert client.get(f"/datasets/{world.dataset.pk}/ledger/").status_code == 200


def test_the_page_needs_the_confirmation_box(world):
    resp = world.client(world.owner).post(f"/datasets/{world.dataset.pk}/raw/delete/", {})
    assert resp.status_code == 302
    world.dataset.refresh_from_db()
    assert world.dataset.has_raw and world.dataset.raw_path().is_file()


def test_no_new_release_after_deletion_but_free_draws_still_work(world):
    world.client(world.owner).post(f"/datasets/{world.dataset.pk}/raw/delete/", {"confirm": "delete"})
    world.dataset.refresh_from_db()
    with pytest.raises(release_services.ReleaseRequestError, match="raw data of this dataset was deleted"):
        release_services.plan_release(
            world.dataset,
            world.owner,
            release_services.ReleaseRequest(mechanism="baseline", epsilon="0.1", delta="0", params={}, rows=5),
        )
    draw = release_services.draw_more(world.release, world.owner, 7)
    assert release_services.claim(draw.pk)
    release_services.execute(draw.pk)
    draw.refresh_from_db()
    assert draw.status == Release.DONE, draw.error


def test_the_api_deletes_with_delete_and_reports_the_status(world):
    api = world.api(world.owner)
    anon = world.client(None)
    before = ledger.remaining(world.dataset)
    resp = anon.delete(f"/api/datasets/{world.dataset.pk}/raw/", **api)
    assert resp.status_code == 200, resp.content
    assert resp.json()["raw_data"] is False
    assert ledger.remaining(world.dataset) == before
    again = anon.delete(f"/api/datasets/{world.dataset.pk}/raw/", **api)
    assert again.status_code == 409 and "already deleted" in again.json()["error"]
    assert anon.get(f"/api/datasets/{world.dataset.pk}/", **api).json()["raw_data"] is False


def test_deletion_waits_for_running_jobs(world):
    Release.objects.filter(pk=world.release.pk).update(status=Release.RUNNING)
    resp = world.client(None).delete(f"/api/datasets/{world.dataset.pk}/raw/", **world.api(world.owner))
    assert resp.status_code == 409 and f"[{world.release.pk}]" in resp.json()["error"]
    world.dataset.refresh_from_db()
    assert world.dataset.has_raw and world.dataset.raw_path().is_file()


@pytest.mark.parametrize("who", ["analyst", "stranger_analyst", "other_steward", "outsider"])
def test_nobody_else_can_delete_and_gets_404(world, who):
    user = getattr(world, who)
    assert (
        world.client(user).post(f"/datasets/{world.dataset.pk}/raw/delete/", {"confirm": "delete"}).status_code == 404
    )
    assert world.client(None).delete(f"/api/datasets/{world.dataset.pk}/raw/", **world.api(user)).status_code == 404
    world.dataset.refresh_from_db()
    assert world.dataset.has_raw and world.dataset.raw_path().is_file()


@pytest.mark.slow
def test_deleting_the_raw_file_while_releases_are_requested_never_errors_and_never_strands_a_release():
    """On a SQLite file database a deletion racing release requests must neither answer 500 ('database is
    locked') nor admit a release after the deletion (the raw-file check runs inside the reserving
    transaction)."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    driver = Path(__file__).with_name("raw_delete_race.py")
    with tempfile.TemporaryDirectory(prefix="dpportal-rawrace-") as tmp:
        env = {**os.environ, "DPPORTAL_DATA_DIR": tmp, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        proc = subprocess.run(
            [sys.executable, str(driver), "--rounds", "5"],
            cwd=driver.parents[2],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["errors"] == [] and result["inconsistent"] == [], result
    assert result["outcomes"]["deleted"] + result["outcomes"]["delete_refused"] == 5
