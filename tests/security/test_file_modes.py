"""Files the service writes are private to its user: a stored upload is 0600 whatever the umask, the
entry points set the umask to 077, the data directory and its folders are 0700 and the SQLite database
0600 (``manage.py migrate`` on a fresh data directory); ``collectstatic`` keeps the ordinary umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.personas import make_dataset

ROOT = Path(__file__).resolve().parents[2]


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_stored_upload_is_private_whatever_the_umask(personas):
    old = os.umask(0o022)
    try:
        ds = make_dataset(personas.owner, schema=None, budget=None)
    finally:
        os.umask(old)
    assert mode(ds.raw_path()) == 0o600


def _env(tmp_path) -> dict:
    env = {**os.environ, "DPPORTAL_DATA_DIR": str(tmp_path / "data")}
    for key in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL"):
        env.pop(key, None)
    return env


def test_manage_py_makes_the_database_and_the_data_directory_private(tmp_path):
    proc = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = tmp_path / "data"
    assert mode(data / "db.sqlite3") == 0o600
    for folder in (data, data / "uploads", data / "uploads" / "tmp", data / "releases", data / "broker"):
        assert mode(folder) == 0o700, folder


def test_the_web_and_worker_entry_points_set_a_private_umask(tmp_path):
    code = (
        "import os\n"
        "for m in ('dpportal.celery', 'dpportal.wsgi'):\n"
        "    os.umask(0o022)\n"
        "    __import__(m)\n"
        "    print(m, oct(os.umask(0o022)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["dpportal.celery", "0o77", "dpportal.wsgi", "0o77"], proc.stdout
