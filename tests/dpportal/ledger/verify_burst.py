"""Verification under load, run as a separate process against DATABASE_URL (like race.py):

    DATABASE_URL=... DPPORTAL_DATA_DIR=... python tests/dpportal/ledger/verify_burst.py --threads 32 --rounds 3

32 threads each plan a release (Release row + reservation in one transaction) and settle it, for
``rounds`` rounds, while verifier threads check the chain continuously, the way ``verify_ledger``
(``verify_dataset``) and the API's ledger (``entries_json``) do. Every check of an untouched ledger
must pass: a failure is a false alarm. At the end the chain is checked against the anchor file.
``--mutant`` restores the old reads (entries, then the budget row, no snapshot, a 2 ms gap): it
must raise false alarms, so the test has teeth. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")


MIN_CHECKS = 12  # of each kind (test_evidence asserts more than 10)
SQLITE_BURST_TIMEOUT = 300  # seconds a writer may wait for SQLite's one write lock in this burst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--verifiers", type=int, default=2)
    ap.add_argument("--mutant", action="store_true")
    args = ap.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections, transaction

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    if connections["default"].vendor == "sqlite":
        # SQLite serialises writers: the 32 writers here queue for one lock, and on a loaded machine the
        # last one waited longer than the app's 20 s busy timeout ("database is locked"). A one-machine
        # deployment has a handful of writers (web and job processes); this burst checks verification,
        # so its writers may wait as long as the queue takes.
        connections["default"].settings_dict["OPTIONS"]["timeout"] = SQLITE_BURST_TIMEOUT
    call_command("migrate", verbosity=0)

    from dpportal.accounts.models import make_user
    from dpportal.datasets.models import Dataset
    from dpportal.ledger import anchor, services
    from dpportal.ledger.models import Budget, LedgerEntry
    from dpportal.releases.models import Release

    if args.mutant:
        _install_mutant(services, Budget, LedgerEntry)
    steward = make_user(f"burst{time.time_ns()}", "pw-burst-123", role="steward")
    dataset = Dataset.objects.create(owner=steward, name="burst")
    services.set_caps(dataset, epsilon="1000", delta="0", user=steward)

    errors: list[str] = []
    alarms: list[str] = []
    checks = {"verify_dataset": 0, "entries_json": 0}
    lock = threading.Lock()
    done = threading.Event()

    def job() -> None:
        try:
            for _ in range(args.rounds):
                with transaction.atomic():
                    release = Release.objects.create(
                        dataset=dataset,
                        created_by=steward,
                        mechanism="baseline",
                        params={},
                        epsilon="0.1",
                        delta="0",
                        rows=10,
                        schema={},
                        schema_fingerprint="0" * 64,
                    )
                    services.reserve(dataset=dataset, release=release, user=steward, epsilon="0.1", delta="0")
                services.settle(release)
        except Exception as exc:  # noqa: BLE001 - reported, the test fails on any
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    during = {"verify_dataset": 0, "entries_json": 0}

    def verifier(i: int) -> None:
        name = "verify_dataset" if i % 2 == 0 else "entries_json"
        try:
            # SQLite serialises every transaction (IMMEDIATE, dpportal/env.py): under load the verifiers
            # get few turns while 32 writers queue, so each goes on until it has checked MIN_CHECKS times
            while not done.is_set() or checks[name] < MIN_CHECKS:
                if not done.is_set():
                    with lock:
                        during[name] += 1
                if i % 2 == 0:
                    report, name = services.verify_dataset(dataset.pk), "verify_dataset"
                    ok, problems = report.ok, report.problems
                else:
                    chain, name = services.entries_json(dataset)["chain"], "entries_json"
                    ok, problems = chain["ok"], chain["problems"]
                with lock:
                    checks[name] += 1
                    if not ok:
                        alarms.append(f"{name}: {problems[:2]}")
        except Exception as exc:  # noqa: BLE001
            with lock:
                errors.append(f"verifier: {type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    verifiers = [threading.Thread(target=verifier, args=(i,)) for i in range(args.verifiers)]
    jobs = [threading.Thread(target=job) for _ in range(args.threads)]
    t0 = time.perf_counter()
    for t in verifiers + jobs:
        t.start()
    for t in jobs:
        t.join()
    done.set()
    for t in verifiers:
        t.join()
    heads, file_problems = anchor.read(anchor.anchor_path())
    final = services.verify_dataset(dataset.pk, heads)
    print(
        json.dumps(
            {
                "vendor": connections["default"].vendor,
                "errors": errors[:5],
                "false_alarms": len(alarms),
                "alarm_examples": alarms[:3],
                "checks": checks,
                "checks_during_burst": during,
                "entries": LedgerEntry.objects.filter(dataset=dataset).count(),
                "anchored_heads": len(heads),
                "anchor_problems": file_problems,
                "final_ok": final.ok,
                "final_problems": final.problems[:3],
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
    )


def _install_mutant(services, Budget, LedgerEntry) -> None:
    """The unsnapshotted reads: entries, then (2 ms later, as under load) the budget row; no snapshot."""
    import contextlib

    def read_chain(dataset_id):
        rows = list(LedgerEntry.objects.filter(dataset_id=dataset_id).order_by("seq"))
        time.sleep(0.002)
        return rows, Budget.objects.filter(dataset_id=dataset_id).values(*services.verification._BUDGET_FIELDS).first()

    services.verification._read_chain = read_chain
    services.verification.snapshot = contextlib.nullcontext


if __name__ == "__main__":
    main()
