"""``manage.py sweep_releases``: fail and settle releases whose worker vanished (see sweeper.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from dpportal.releases.sweeper import stale_seconds, sweep


class Command(BaseCommand):
    help = "Fail and settle running releases with no heartbeat for DPPORTAL_STALE_SECONDS (spent if data was read)."

    def handle(self, *args, **options):
        failed = sweep()
        self.stdout.write(f"{len(failed)} stranded release(s) failed and settled (no heartbeat for "
                          f"{stale_seconds():g} s){': ' + ', '.join(map(str, failed)) if failed else ''}")
