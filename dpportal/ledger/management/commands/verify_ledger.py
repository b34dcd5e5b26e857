"""``python manage.py verify_ledger [--dataset ID] [--anchor FILE | --no-anchor]``: recompute every
hash chain and cross-check the budget counters (one consistent snapshot per dataset), and compare
the chains with the external anchor file (ledger/anchor.py), which catches a rewrite of a whole
chain. Exits 1 if anything is broken (usable from cron or CI)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from dpportal.ledger import anchor
from dpportal.ledger.services import verify_all, verify_dataset


class Command(BaseCommand):
    help = "Verify the privacy ledger's hash chains, budget counters and external anchor; exit 1 if tampering is found."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", type=int, help="verify only this dataset id")
        parser.add_argument(
            "--anchor", help="anchor file to check against (default: DPPORTAL_LEDGER_ANCHOR, if that file exists)"
        )
        parser.add_argument("--no-anchor", action="store_true", help="check the database alone")

    def handle(self, *args, dataset=None, anchor=None, no_anchor=False, **options):
        heads, file_problems, path = self._anchor(anchor, no_anchor)
        reports = [verify_dataset(dataset, heads)] if dataset is not None else verify_all(heads)
        broken = [r for r in reports if not r.ok]
        for r in reports:
            status = "OK" if r.ok else "BROKEN"
            self.stdout.write(f"dataset {r.dataset}: {status}, {r.entries} entries, head {r.head or '-'}")
            for problem in r.problems:
                self.stdout.write(f"  - {problem}")
        for problem in file_problems:
            self.stdout.write(f"  - {problem}")
        where = f"against the anchor {path} ({len(heads)} heads)" if path else "without an anchor"
        self.stdout.write(f"{len(reports)} dataset(s) checked {where}, {len(broken)} broken")
        if broken or file_problems:
            sys.exit(1)

    def _anchor(self, given: str | None, skip: bool):
        if skip:
            return None, [], None
        if given:
            path = Path(given)
        else:
            path = anchor.anchor_path()
            if path is None or not path.exists():
                return None, [], None
        heads, problems = anchor.read(path)
        return heads, problems, path
