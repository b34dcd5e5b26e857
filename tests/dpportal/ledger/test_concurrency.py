"""Concurrency: 32 simultaneous release plans of epsilon 0.1 against a cap of 1 grant exactly 10,
on SQLite (file database, one connection per thread) and on a real PostgreSQL server started by
the test. The read-check-write mutant overspends on PostgreSQL, so the test has teeth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

RACE = Path(__file__).with_name("race.py")
ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.services


def run_race(database_url: str | None, *extra: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="dpportal-race-") as tmp:
        env = {**os.environ, "DPPORTAL_DATA_DIR": tmp, "DATABASE_URL": database_url or f"sqlite:///{tmp}/db.sqlite3"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        proc = subprocess.run(
            [sys.executable, str(RACE), "--threads", "32", "--cost", "0.1", "--cap", "1", *extra],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_exactly_ten(result: dict, vendor: str) -> None:
    assert result["vendor"] == vendor
    assert result["errors"] == []
    assert (result["granted"], result["refused"]) == (10, 22)
    assert "0 remaining of cap 1" in result["refusal_example"]
    assert (
        result["releases_rows"] == result["reserve_entries"] == result["spend_entries"] == 10
    )  # nothing queued on refusal
    assert result["sum_spend_units"] == result["eps_spent_units"] == result["eps_cap_units"] == result["unit"]
    assert result["eps_reserved_units"] == 0
    assert result["chain_ok"]


def test_sqlite_grants_exactly_ten_of_32():
    check_exactly_ten(run_race(None), "sqlite")


def test_postgres_grants_exactly_ten_of_32(postgres_url):
    check_exactly_ten(run_race(postgres_url), "postgresql")


def test_postgres_race_catches_a_read_check_write_ledger(postgres_url):
    result = run_race(postgres_url, "--mutant")
    assert result["granted"] > 10, result  # the broken ledger overspends: the race is real
    assert not result["chain_ok"] or result["eps_spent_units"] > result["eps_cap_units"]
