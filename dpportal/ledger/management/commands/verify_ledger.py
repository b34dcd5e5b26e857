"""``python manage.py verify_ledger [--dataset ID]``: recompute every hash chain and cross-check the
budget counters. Exits 1 if any chain is broken (usable from cron or CI)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from dpportal.ledger.services import verify_all, verify_dataset


class Command(BaseCommand):
    help = "Verify the privacy ledger's hash chains and budget counters; exit 1 if tampering is found."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", type=int, help="verify only this dataset id")

    def handle(self, *args, dataset=None, **options):
        reports = [verify_dataset(dataset)] if dataset is not None else verify_all()
        broken = [r for r in reports if not r.ok]
        for r in reports:
            status = "OK" if r.ok else "BROKEN"
            self.stdout.write(f"dataset {r.dataset}: {status}, {r.entries} entries, head {r.head or '-'}")
            for problem in r.problems:
                self.stdout.write(f"  - {problem}")
        self.stdout.write(f"{len(reports)} dataset(s) checked, {len(broken)} broken")
        if broken:
            sys.exit(1)
