"""Login guessing is throttled per address and username (and per address) on the web form and the token
endpoint; a refused attempt checks no password, and the right user from elsewhere still logs in."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dpportal.accounts.models import LoginFailure

from tests.personas import PASSWORD


@pytest.fixture
def user(personas, settings):
    settings.DPPORTAL_LOGIN_MAX_FAILURES = 3
    return personas.owner


def _web(password, username="olivia", addr="10.0.0.1"):
    return Client(REMOTE_ADDR=addr).post("/accounts/login/", {"username": username, "password": password})


def _api(password, username="olivia", addr="10.0.0.1"):
    return Client(REMOTE_ADDR=addr).post(
        "/api/auth/token/", json.dumps({"username": username, "password": password}), content_type="application/json"
    )


def test_the_web_form_refuses_after_the_limit_even_the_right_password(user, monkeypatch):
    for _ in range(3):
        assert _web("wrong").status_code == 200
    checked = []
    monkeypatch.setattr(
        "django.contrib.auth.hashers.MD5PasswordHasher.verify", lambda self, *a: checked.append(1) or True
    )
    resp = _web(PASSWORD)
    assert resp.status_code == 429 and "too many failed logins" in resp.content.decode()
    assert int(resp["Retry-After"]) > 0 and not checked  # refused before any password check
    monkeypatch.undo()
    assert _web(PASSWORD, addr="10.0.0.2").status_code == 302  # another address is not affected


def test_the_token_endpoint_shares_the_count(user):
    for _ in range(2):
        assert _web("wrong").status_code == 200
    assert _api("wrong").status_code == 400
    resp = _api(PASSWORD)
    assert resp.status_code == 429 and "too many failed logins" in resp.json()["error"]


def test_one_address_guessing_many_usernames_is_throttled(user):
    for i in range(15):  # 5 x the per-username limit
        _web("wrong", username=f"user{i}")
    assert _web(PASSWORD).status_code == 429


def test_a_success_clears_the_count_and_old_failures_expire(user, settings):
    for _ in range(2):
        _web("wrong")
    assert _web(PASSWORD).status_code == 302
    for _ in range(2):
        _web("wrong")
    assert _web(PASSWORD).status_code == 302  # cleared by the success before
    settings.DPPORTAL_LOGIN_WINDOW_SECONDS = 1
    for _ in range(3):
        _web("wrong")
    from datetime import timedelta

    LoginFailure.objects.update(at=LoginFailure.objects.first().at - timedelta(seconds=5))
    assert _web(PASSWORD).status_code == 302


def test_the_address_comes_from_the_front_only_over_its_unix_socket(user):
    def via(remote, forwarded):
        return Client(REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded).post(
            "/accounts/login/", {"username": "olivia", "password": "wrong"}
        )

    for _ in range(3):
        via("", "10.9.9.9")  # gunicorn on its Unix socket: no REMOTE_ADDR, the front's X-Forwarded-For counts
    assert via("", "10.9.9.9").status_code == 429
    assert via("", "10.9.9.8").status_code == 200  # another client behind the front
    for _ in range(3):
        via("10.0.0.7", "10.9.9.7")  # a direct TCP client cannot choose its address by a header
    assert via("10.0.0.7", "10.9.9.6").status_code == 429


def test_the_sweep_forgets_failures_past_the_window(user, settings):
    from datetime import timedelta

    from dpportal.accounts.throttle import forget_old

    for i in range(3):
        _web("wrong", username=f"someone{i}")
    assert LoginFailure.objects.count() == 6  # per address and per address and username
    from hashlib import sha256

    LoginFailure.objects.filter(scope__endswith=sha256(b"someone0").hexdigest()).update(
        at=LoginFailure.objects.first().at - timedelta(seconds=settings.DPPORTAL_LOGIN_WINDOW_SECONDS + 1)
    )
    assert forget_old() == 1  # what the sweep calls (dpportal/releases/sweeper.py)
    assert LoginFailure.objects.count() == 5


def test_any_username_text_is_counted_without_storing_it(user):
    for name in ("nul\x00name", "x" * 5000, "\u202eadmin"):
        assert _web("wrong", username=name).status_code == 200
    assert not any("nul" in scope or "admin" in scope for scope in LoginFailure.objects.values_list("scope", flat=True))


@pytest.mark.slow
def test_concurrent_guesses_check_at_most_the_limit_and_every_429_says_when_to_retry():
    """28 wrong guesses at once (web form and token endpoint) with a limit of 10, on a SQLite file
    database: the attempt is recorded before it is counted, so at most 10 passwords are checked; every
    refusal is a 429 with Retry-After, none an error."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    driver = Path(__file__).with_name("login_race.py")
    with tempfile.TemporaryDirectory(prefix="dpportal-loginrace-") as tmp:
        env = {**os.environ, "DPPORTAL_DATA_DIR": tmp, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        proc = subprocess.run(
            [sys.executable, str(driver), "--threads", "28", "--limit", "10"],
            cwd=driver.parents[2],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    answers = result["answers"]
    assert set(answers) <= {"200", "400", "429"}, answers  # form shown again, wrong password, or throttled
    assert 1 <= result["password_checks"] <= 10, result
    assert answers.get("429", 0) >= 18 and all(r and int(r) > 0 for r in result["retry_after"]), result


def test_the_api_429_carries_retry_after(user):
    for _ in range(3):
        assert _api("wrong").status_code == 400
    resp = _api(PASSWORD)
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
