"""Concurrent wrong guesses against the login throttle, on a real file database (DATABASE_URL), in a
separate process like raw_delete_race.py: ``--threads`` clients from one address post a wrong password
for one username at the same moment (a barrier), half on the web form and half on the token endpoint.
Counts the password checks (the hasher's verify) and the answers. Prints one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=28)
    ap.add_argument("--limit", type=int, default=10)
    args = ap.parse_args()
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.hashers import MD5PasswordHasher
    from django.core.management import call_command
    from django.db import connections
    from django.test import Client

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.DPPORTAL_LOGIN_MAX_FAILURES = args.limit
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)
    from dpportal.accounts.models import make_user

    make_user("racer", "pw-racer-123", role="steward")
    checks, answers, retry_after, lock = [0], Counter(), [], threading.Lock()
    verify = MD5PasswordHasher.verify

    def counted(self, password, encoded):
        with lock:
            checks[0] += 1
        return verify(self, password, encoded)

    MD5PasswordHasher.verify = counted
    barrier = threading.Barrier(args.threads)

    def guess(i: int) -> None:
        client = Client(REMOTE_ADDR="10.9.9.9")
        try:
            barrier.wait()
            if i % 2:
                resp = client.post("/accounts/login/", {"username": "racer", "password": f"wrong {i}"})
            else:
                resp = client.post(
                    "/api/auth/token/",
                    json.dumps({"username": "racer", "password": f"wrong {i}"}),
                    content_type="application/json",
                )
            with lock:
                answers[resp.status_code] += 1
                if resp.status_code == 429:
                    retry_after.append(resp.get("Retry-After"))
        except Exception as exc:  # noqa: BLE001 - reported; the test fails on any
            with lock:
                answers[f"error: {type(exc).__name__}: {exc}"[:200]] += 1
        finally:
            connections.close_all()

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"password_checks": checks[0], "answers": dict(answers), "retry_after": retry_after}))


if __name__ == "__main__":
    main()
