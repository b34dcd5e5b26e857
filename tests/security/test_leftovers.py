"""Raw data a killed process leaves on disk is removed by the sweep, and a dataset deleted in the admin
takes its raw file with it."""

from __future__ import annotations

import os
import time

from django.core.management import call_command
from django.test import Client

from dpportal.datasets.models import Dataset
from dpportal.releases.leftovers import sweep_files
from dpportal.releases.models import Release
from tests.personas import make_dataset


def _old(path, seconds=7200):
    t = time.time() - seconds
    os.utime(path, (t, t))
    return path


def test_the_sweep_removes_stale_upload_temporaries_and_unnamed_raw_files(world, settings):
    up = settings.UPLOAD_DIR
    for p in (up / "tmp" / "abc.part", up / "tmp" / "tmpx1.upload.csv", up / "orphan.csv", up / "tmp" / "new.part"):
        p.write_text("age\n34\n")
    for p in (up / "tmp" / "abc.part", up / "tmp" / "tmpx1.upload.csv", up / "orphan.csv"):
        _old(p)
    raw = world.dataset.raw_path()
    _old(raw)  # a dataset's own raw file is never a leftover, however old
    removed = sweep_files()
    assert sorted(removed) == ["uploads/orphan.csv", "uploads/tmp/abc.part", "uploads/tmp/tmpx1.upload.csv"]
    assert (up / "tmp" / "new.part").exists() and raw.exists()  # an upload in progress keeps its file


def test_the_sweep_removes_work_folders_of_releases_not_running(world, settings):
    rel = settings.RELEASE_DIR
    done = rel / f"{world.release.pk}.tmp"
    done.mkdir()
    _old(done)
    running = Release.objects.create(
        dataset=world.dataset,
        created_by=world.owner,
        mechanism="baseline",
        epsilon="0.1",
        delta="0",
        rows=5,
        schema={},
        status=Release.RUNNING,
    )
    busy = rel / f"{running.pk}.tmp"
    busy.mkdir()
    _old(busy)
    fresh = rel / "999.tmp"
    fresh.mkdir()
    call_command("sweep_releases", stdout=open(os.devnull, "w"))
    assert not done.exists() and busy.exists() and fresh.exists()
    assert (rel / str(world.release.pk)).exists()  # the finished release's outputs stay


def test_a_dataset_deleted_in_the_admin_takes_its_raw_file(world, django_capture_on_commit_callbacks):
    from django.contrib.auth import get_user_model

    d = make_dataset(world.owner, schema=None, budget=None)
    raw = d.raw_path()
    assert raw.exists()
    staff = get_user_model().objects.create_superuser("root", password="x-root-pass-1")
    client = Client()
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/admin/datasets/dataset/{d.pk}/delete/", {"post": "yes"})
    assert resp.status_code == 302 and not Dataset.objects.filter(pk=d.pk).exists()
    assert not raw.exists()
