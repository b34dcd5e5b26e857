"""Deleting the raw file while releases are requested, against a real file database (DATABASE_URL),
in a separate process like tests/dpportal/ledger/race.py. Each round: a fresh dataset, 16 threads planning a
release and one deleting the raw file, released together by a barrier. Every answer must be a
clear refusal or a success, never an error ("database is locked" was a 500), and the outcome
consistent: if the file was deleted, no release was admitted for it after the deletion (none is
queued, since no worker runs). Prints one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("migrate", verbosity=0)
    from dpportal.accounts.models import make_user
    from dpportal.datasets.lifecycle import RawDeleteRefused, delete_raw
    from dpportal.datasets.models import Dataset
    from dpportal.releases import services as jobs
    from dpportal.releases.models import Release
    from tests.dpportal.ledger.scenario import plan, ready_dataset

    jobs.planning.enqueue = lambda pk: None  # no broker: releases stay queued
    owner = make_user("raw-racer", "pw-racer-123", role="steward")
    errors, outcomes, inconsistent = [], {"planned": 0, "plan_refused": 0, "deleted": 0, "delete_refused": 0}, []
    lock = threading.Lock()

    def record(key: str) -> None:
        """Count an expected outcome; anything else is an error the test reports."""
        with lock:
            if key in outcomes:
                outcomes[key] += 1
            else:
                errors.append(key)

    for _ in range(args.rounds):
        dataset = ready_dataset(owner, epsilon_cap="100")
        barrier = threading.Barrier(args.threads + 1)

        def planner() -> None:
            try:
                barrier.wait()
                plan(dataset, owner, epsilon="0.01")
                key = "planned"
            except jobs.ReleaseRequestError as exc:
                key = "plan_refused" if "raw data" in str(exc) else f"other refusal: {exc}"
            except Exception as exc:  # noqa: BLE001 - reported; the test fails on any
                key = f"error: {type(exc).__name__}: {exc}"
            finally:
                connections.close_all()
            record(key)

        def deleter() -> None:
            try:
                barrier.wait()
                delete_raw(Dataset.objects.get(pk=dataset.pk))
                key = "deleted"
            except RawDeleteRefused:
                key = "delete_refused"
            except Exception as exc:  # noqa: BLE001
                key = f"error: {type(exc).__name__}: {exc}"
            finally:
                connections.close_all()
            record(key)

        threads = [threading.Thread(target=planner) for _ in range(args.threads)] + [threading.Thread(target=deleter)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        d = Dataset.objects.get(pk=dataset.pk)
        queued = Release.objects.filter(dataset=d, status=Release.QUEUED).count()
        if d.raw_deleted_at is not None and queued:
            inconsistent.append(f"dataset {d.pk}: raw deleted but {queued} release(s) queued to read it")
    print(json.dumps({"errors": errors[:5], "outcomes": outcomes, "inconsistent": inconsistent}))


if __name__ == "__main__":
    main()
