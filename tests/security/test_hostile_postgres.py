"""The hostile-input suite on PostgreSQL: NUL bytes were a 500 there only. The suite runs
again in a child pytest whose DATABASE_URL points at the throwaway PostgreSQL server of
tests/conftest.py, so every case of test_hostile_input.py is checked on both, with the
login throttle, the API tokens and the canonical amounts (names and text PostgreSQL stores differently)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_the_hostile_input_suite_passes_on_postgresql(postgres_url):
    env = {**os.environ, "DATABASE_URL": postgres_url}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            "tests/security/test_hostile_input.py",
            "tests/security/test_login_throttle.py",
            "tests/dpportal/api/test_api_tokens.py",
            "tests/dpportal/ledger/test_amount_forms.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = proc.stdout[-3000:]
    assert proc.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail
    print(tail.strip().splitlines()[-1])
