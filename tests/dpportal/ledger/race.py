"""Race driver, run as a separate process against a real database given by DATABASE_URL:

    DATABASE_URL=... DPPORTAL_DATA_DIR=... python tests/dpportal/ledger/race.py --threads 32 --cost 0.1 --cap 1

Migrates, creates one steward + dataset with the cap, then releases ``threads`` threads at once
(a barrier), each planning a release the way the web app does: ONE transaction that creates the
Release row and calls ``ledger.reserve``. Then every granted reservation is settled, concurrently
too. Prints one JSON object with what happened (the test asserts on it).
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--cost", default="0.1")
    ap.add_argument("--cap", default="1")
    ap.add_argument(
        "--mutant",
        action="store_true",
        help="replace the conditional UPDATE by read-check-write (must overspend on PostgreSQL)",
    )
    args = ap.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, connections, transaction

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("migrate", verbosity=0)

    from dpportal.accounts.models import make_user
    from dpportal.datasets.models import Dataset
    from dpportal.ledger import services
    from dpportal.ledger.models import Budget, LedgerEntry
    from dpportal.ledger.units import EPS_UNIT
    from dpportal.releases.models import Release

    if args.mutant:
        _install_read_check_write_mutant(services, Budget)

    steward = make_user(f"racer{time.time_ns()}", "pw-racer-123", role="steward")
    dataset = Dataset.objects.create(owner=steward, name="race")
    services.set_caps(dataset, epsilon=args.cap, delta="0", user=steward)

    barrier = threading.Barrier(args.threads)
    granted: list[int] = []
    refused: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()

    def plan() -> None:
        try:
            barrier.wait()
            with transaction.atomic():
                release = Release.objects.create(
                    dataset=dataset,
                    created_by=steward,
                    mechanism="baseline",
                    params={},
                    epsilon=args.cost,
                    delta="0",
                    rows=10,
                    schema={},
                    schema_fingerprint="0" * 64,
                )
                services.reserve(dataset=dataset, release=release, user=steward, epsilon=args.cost, delta="0")
            with lock:
                granted.append(release.pk)
        except services.BudgetExceeded as exc:
            with lock:
                refused.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - reported, the test fails on any
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    def run_all(threads: list[threading.Thread]) -> None:
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    t0 = time.perf_counter()
    run_all([threading.Thread(target=plan) for _ in range(args.threads)])
    seconds_reserve = time.perf_counter() - t0

    def settle(pk: int) -> None:
        try:
            services.settle(Release.objects.get(pk=pk))
        except Exception as exc:  # noqa: BLE001
            with lock:
                errors.append(f"settle {pk}: {type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    run_all([threading.Thread(target=settle, args=(pk,)) for pk in granted])

    b = Budget.objects.get(dataset=dataset)
    entries = LedgerEntry.objects.filter(dataset=dataset)
    print(
        json.dumps(
            {
                "vendor": connection.vendor,
                "granted": len(granted),
                "refused": len(refused),
                "errors": errors,
                "refusal_example": refused[0] if refused else "",
                "releases_rows": Release.objects.filter(dataset=dataset).count(),
                "reserve_entries": entries.filter(kind="reserve").count(),
                "spend_entries": entries.filter(kind="spend").count(),
                "sum_spend_units": sum(entries.filter(kind="spend").values_list("eps_units", flat=True)),
                "eps_spent_units": b.eps_spent,
                "eps_reserved_units": b.eps_reserved,
                "eps_cap_units": b.eps_cap,
                "unit": EPS_UNIT,
                "chain_ok": services.verify_dataset(dataset.pk).ok,
                "seconds_reserve": round(seconds_reserve, 3),
            }
        )
    )


def _install_read_check_write_mutant(services, Budget) -> None:
    """The known-broken ledger (granted 32 of 32 when measured): read, check in Python, then write."""
    from django.db import transaction
    from django.db.models import F

    from dpportal.ledger.units import epsilon_cost_units

    def reserve(*, dataset, release, user, epsilon, delta):
        cost = epsilon_cost_units(epsilon)
        with transaction.atomic():
            b = Budget.objects.get(dataset_id=dataset.pk)
            if b.eps_spent + b.eps_reserved + cost > b.eps_cap:
                raise services.BudgetExceeded("over budget (mutant)")
            time.sleep(0.005)  # the window between check and write that real load opens too
            Budget.objects.filter(dataset_id=dataset.pk).update(eps_reserved=F("eps_reserved") + cost)
            return services.admission._append(
                dataset.pk,
                kind="reserve",
                user=user,
                release=release,
                epsilon=epsilon,
                delta="0",
                eps_units=cost,
                guarantee="pure",
            )

    services.reserve = reserve


if __name__ == "__main__":
    main()
