"""Personas and helpers for the ledger tests: the steward who owns the dataset, an analyst granted
its releases, an outsider who must see nothing."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # PBKDF2 costs ~0.3 s/user


@pytest.fixture
def personas(db):
    from dpportal.accounts.models import make_user

    steward = make_user("stella", "pw-stella-123", role="steward")
    other = make_user("otto", "pw-otto-123", role="steward")
    analyst = make_user("ana", "pw-ana-123", role="analyst")
    return {"steward": steward, "other_steward": other, "analyst": analyst}


@pytest.fixture
def dataset(personas):
    from dpportal.datasets.models import Dataset

    ds = Dataset.objects.create(owner=personas["steward"], name="adult")
    ds.analysts.add(personas["analyst"])
    return ds


@pytest.fixture
def make_release(dataset, personas):
    from dpportal.releases.models import Release

    def make(epsilon="0.1", delta="0", mechanism="baseline", **kw):
        return Release.objects.create(dataset=dataset, created_by=personas["steward"], mechanism=mechanism,
                                      params=kw.pop("params", {"bins": 10}), epsilon=epsilon, delta=delta,
                                      rows=100, schema={}, schema_fingerprint="f" * 64, **kw)
    return make


@pytest.fixture
def budget(dataset, personas):
    from dpportal.ledger import services

    services.set_caps(dataset, epsilon="1", delta="1e-5", user=personas["steward"])
    return dataset


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
        pytest.skip("PostgreSQL NOT TESTED: no binaries under /usr/lib/postgresql/*/bin "
                    "(run scripts/ensure-system-packages.sh; CI installs them)")
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
