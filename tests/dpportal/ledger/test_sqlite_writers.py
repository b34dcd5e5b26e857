"""SQLite serialises writers: with the app's options a transaction that reads and then writes waits for
another writer (busy timeout) instead of failing with "database is locked"; with SQLite's default
(deferred) transactions the same two transactions fail at once. The ledger's burst test
(``test_evidence.py``) hit that error under load."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError
from django.db.utils import ConnectionHandler

from dpportal.env import SQLITE_OPTIONS, parse_database_url


def _two_readers_then_writers(path, options) -> list[str]:
    """Transaction A reads; B reads and writes meanwhile; then A writes. Returns the errors raised."""
    handler = ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path), "OPTIONS": options}}
    )
    setup = handler["default"]
    setup.cursor().execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    setup.cursor().execute("INSERT INTO t VALUES (0)")
    errors: list[str] = []

    def transaction(before_write: float) -> None:
        conn = handler["default"]  # one connection per thread
        try:
            conn.ensure_connection()
            conn._start_transaction_under_autocommit()  # what transaction.atomic() begins with
            conn.cursor().execute("SELECT x FROM t")
            time.sleep(before_write)
            conn.cursor().execute("UPDATE t SET x = x + 1")
            conn.connection.commit()
        except OperationalError as exc:
            errors.append(str(exc))
            conn.connection.rollback()
        finally:
            conn.close()

    a = threading.Thread(target=transaction, args=(0.5,))
    b = threading.Thread(target=transaction, args=(0.0,))
    a.start()
    time.sleep(0.1)
    b.start()
    a.join()
    b.join()
    return errors


def test_the_apps_sqlite_transactions_wait_for_the_writer_instead_of_failing(tmp_path, django_db_blocker):
    assert parse_database_url(f"sqlite:///{tmp_path}/db.sqlite3")["OPTIONS"] == SQLITE_OPTIONS
    assert SQLITE_OPTIONS["transaction_mode"] == "IMMEDIATE" and SQLITE_OPTIONS["timeout"] >= 20
    with django_db_blocker.unblock():  # its own database files, not the test database
        assert _two_readers_then_writers(tmp_path / "app.sqlite3", {**SQLITE_OPTIONS, "timeout": 5}) == []


@pytest.mark.parametrize("mode", [None, "DEFERRED"])
def test_deferred_transactions_fail_at_once_with_database_is_locked(tmp_path, mode, django_db_blocker):
    """The broken variant: SQLite's default transactions, the same busy timeout."""
    options = {"timeout": 5, **({"transaction_mode": mode} if mode else {})}
    t0 = time.monotonic()
    with django_db_blocker.unblock():
        errors = _two_readers_then_writers(tmp_path / "deferred.sqlite3", options)
    assert errors == ["database is locked"] and time.monotonic() - t0 < 4  # no wait: refused at once
