"""Out-of-process helper for the crash test (the worker and the test share a file database).
``crash_driver.py serve`` reads one command per line on stdin and answers one JSON line each
(Django starts once):

    setup            migrate, create a steward + ready dataset, plan release A
    plan-bad         plan a release whose parameters the worker cannot build
    redeliver ID     send the task message for release ID again
    state ID         the release's state and its ledger
    setup-risk       migrate, a steward + ready dataset, a finished release (run here), its risk report queued
    risk-state ID    the risk report's state of release ID

Settings come from the environment (DATABASE_URL, DPPORTAL_DATA_DIR, CELERY_BROKER_URL).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")


def serve() -> None:
    import django

    django.setup()
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(command(line.split())), flush=True)


def command(argv: list[str]) -> dict:
    from dpportal.accounts.models import make_user
    from dpportal.datasets.models import Dataset
    from dpportal.ledger import services as ledger
    from dpportal.ledger.models import LedgerEntry
    from dpportal.releases.models import Release
    from tests.dpportal.ledger.scenario import plan, ready_dataset

    cmd = argv[0]
    if cmd == "setup":
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        owner = make_user("crash-steward", "pw-crash-123", role="steward")
        dataset = ready_dataset(owner)
        release = plan(dataset, owner, epsilon="0.5")
        return {"dataset": dataset.pk, "release": release.pk}
    elif cmd == "plan-bad":
        from dpportal.releases import services as jobs

        dataset = Dataset.objects.get(name="small")
        enqueue, held = jobs.planning.enqueue, []
        jobs.planning.enqueue = held.append  # hold the message until the row is broken
        try:
            release = plan(dataset, dataset.owner, epsilon="0.25")
        finally:
            jobs.planning.enqueue = enqueue
        # what a worker-side construction failure looks like: parameters it cannot build
        Release.objects.filter(pk=release.pk).update(params={"no_such_parameter": 1})
        assert held == [release.pk]
        enqueue(release.pk)
        return {"release": release.pk}
    elif cmd == "redeliver":
        from dpportal.releases.tasks import run_release

        run_release.delay(int(argv[1]))
        return {"sent": int(argv[1])}
    elif cmd == "setup-risk":
        from django.core.management import call_command

        from dpportal.dashboards.tasks import request_risk_report
        from dpportal.releases import services as jobs

        call_command("migrate", verbosity=0)
        owner = make_user("risk-steward", "pw-risk-123", role="steward")
        release = plan(ready_dataset(owner), owner, epsilon="0.5")
        assert jobs.claim(release.pk)
        jobs.execute(release.pk)  # here, with the real fit
        request_risk_report(Release.objects.get(pk=release.pk))  # sent to the evaluation queue at once
        return {"release": release.pk}
    elif cmd == "risk-state":
        from dpportal.dashboards.models import RiskReport

        rr = RiskReport.objects.get(release_id=int(argv[1]))
        return {"status": rr.status, "stage": rr.stage, "error": rr.error}
    elif cmd == "state":
        r = Release.objects.get(pk=int(argv[1]))
        return {
            "status": r.status,
            "data_touched": r.data_touched,
            "output_file": r.output_file,
            "error": r.error,
            "stage": r.stage,
            "ledger": list(LedgerEntry.objects.filter(release_pk=r.pk).order_by("seq").values_list("kind", flat=True)),
            "budget": ledger.remaining(r.dataset)["epsilon"],
            "chain_ok": ledger.verify_dataset(r.dataset_id).ok,
            "release_dir_exists": r.storage_dir().exists(),
        }
    raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    serve()
