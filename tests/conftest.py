"""Fixtures for the whole suite: private storage in a temporary folder (made automatic by the
conftests of the folders that touch the web app), the personas, and a throwaway PostgreSQL server."""

from __future__ import annotations

import os

import pytest

from tests.personas import personas, world  # noqa: F401  (fixtures)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
# Risk reports with 2 refits (the product fills its time budget with up to 30): the suite and the workers
# it starts check the report's plumbing; tests/mechanisms/test_risk.py checks the attacks' power.
os.environ.setdefault("DPPORTAL_RISK_RUNS", "2")


# Tests that assert a wall-clock bound or lean on short heartbeat / stale intervals (a file, or file::test):
# `make test` runs them on their own after the rest, which runs on two pytest-xdist workers, so that such a
# test never shares the cores with another test. A new test with a time bound belongs in this list.
SERIAL = {
    "tests/deploy/test_nginx.py",
    "tests/dpportal/test_front.py",
    "tests/dpportal/datasets/test_schema_bulk.py::test_a_hostile_pattern_is_answered_at_once",
    "tests/dpportal/datasets/test_schema_bulk.py::test_bounded_matcher_is_fast_on_long_names",
    "tests/dpportal/dashboards/test_risk_kill.py",
    "tests/dpportal/ledger/test_crash.py",
    "tests/dpportal/ledger/test_sqlite_writers.py",
    "tests/dpportal/ledger/test_stranded.py",
    "tests/dpportal/releases/test_sweep_loop.py",
    "tests/mechanisms/test_amount_bounds.py::test_out_of_range_amounts_are_refused_in_microseconds",
    "tests/mechanisms/test_amount_bounds.py::test_safejson_refuses_hostile_text_fast",
    "tests/mechanisms/test_amount_bounds.py::test_the_bound_is_what_refuses_a_slow_parse",
    "tests/mechanisms/test_check_plan.py::test_dpmerf_with_100000_categories_is_refused_by_its_memory_plan",
    "tests/scripts/test_make_run.py",
    "tests/scripts/test_make_run_hardening.py",
    "tests/security/test_hostile_input.py::test_cli_refuses_hostile_amounts_fast",
    "tests/security/test_hostile_input.py::test_free_draws_refuse_bad_row_counts",
    "tests/security/test_hostile_input.py::test_out_of_range_ids_in_links_are_404_not_500",
    "tests/security/test_hostile_input.py::test_release_form_get_survives_hostile_links_fast",
    "tests/security/test_hostile_input.py::test_web_budget_form_refuses_hostile_caps_fast",
    "tests/security/test_hostile_input.py::test_web_schema_page_refuses_hostile_numbers",
    "tests/security/test_hostile_postgres.py",
    "tests/security/test_rejection_bounded.py::test_a_hopeless_acceptance_rate_stops_after_the_pilot_round_naming_it",
    "tests/security/test_rejection_bounded.py::test_the_baseline_release_fails_in_seconds_with_the_message",
    "tests/security/test_rules_bounded.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = item.path.relative_to(config.rootpath).as_posix()
        if path in SERIAL or f"{path}::{item.originalname}" in SERIAL:
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def private_storage(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # PBKDF2 costs ~0.3 s/user
    settings.DATA_DIR = tmp_path
    settings.UPLOAD_DIR = tmp_path / "uploads"
    settings.RELEASE_DIR = tmp_path / "releases"
    (tmp_path / "uploads" / "tmp").mkdir(parents=True)
    (tmp_path / "releases").mkdir()
    return tmp_path


# ---------------------------------------------------------------------------------------------- PostgreSQL


def postgres_bindir():
    import glob
    from pathlib import Path

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL server for this test session: initdb into a temp dir, listen on
    127.0.0.1:<free port>, trust auth, fsync off. Runs as the ``postgres`` user when we are root
    (postgres refuses to run as root). Yields a DATABASE_URL."""
    import shutil
    import socket
    import subprocess
    import tempfile
    import time

    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL NOT TESTED: no binaries under /usr/lib/postgresql/*/bin "
            "(run scripts/ensure-system-packages.sh; CI installs them)"
        )
    root = tempfile.mkdtemp(prefix="dpportal-pg-", dir="/tmp")
    prefix: list[str] = []
    if os.geteuid() == 0:
        import pwd

        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(root, "data")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def run(*cmd):
        subprocess.run(prefix + [str(bindir / cmd[0]), *cmd[1:]], check=True, capture_output=True, timeout=120)

    run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
    opts = f"-k {root} -p {port} -h 127.0.0.1 -F -c max_connections=120 -c shared_buffers=32MB"
    run("pg_ctl", "-D", data, "-o", opts, "-l", os.path.join(root, "log"), "-w", "-t", "60", "start")
    try:
        yield f"postgres://postgres@127.0.0.1:{port}/postgres"
    finally:
        try:
            run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        finally:
            time.sleep(0.1)
            shutil.rmtree(root, ignore_errors=True)
