"""``manage.py sweep_releases``: fail and settle jobs whose worker vanished, of every kind (see sweeper.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from dpportal.releases.leftovers import sweep_files
from dpportal.releases.sweeper import run_loop, stale_seconds, sweep_jobs


class Command(BaseCommand):
    help = (
        "Fail and settle running jobs (releases, draws, bounds, evaluations, risk reports) with no heartbeat for "
        "DPPORTAL_STALE_SECONDS (a release: spent if data was read, refunded otherwise); "
        "remove files killed processes left (dpportal/releases/leftovers.py)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--loop",
            action="store_true",
            help="sweep every DPPORTAL_SWEEP_SECONDS (one loop per data directory; what each worker starts)",
        )
        parser.add_argument("--parent", type=int, help="with --loop: stop when this process is gone")

    def handle(self, *args, loop=False, parent=None, **options):
        if loop:
            run_loop(parent)
            return
        for kind, failed in sweep_jobs().items():
            self.stdout.write(
                f"{len(failed)} stranded {kind}(s) failed and settled (no heartbeat for "
                f"{stale_seconds():g} s){': ' + ', '.join(map(str, failed)) if failed else ''}"
            )
        removed = sweep_files()
        self.stdout.write(
            f"{len(removed)} leftover file(s) removed (upload temporaries, unnamed raw files, release work folders)"
        )
