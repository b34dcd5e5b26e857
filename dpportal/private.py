"""Files the service writes are private to its user: 0600 files, 0700 directories.

The entry points that write private data (``manage.py``, ``dpportal.wsgi`` and so ``dpportal.serve``,
the Celery app) set the umask to 077 before anything is written (:func:`restrict_umask`); the data
directory and its folders are made 0700 when the settings load (:func:`private_dir`), which also closes a
folder an older run left readable, since nothing below a 0700 folder can be reached by another user; the
SQLite database and its journal files are made 0600 when a connection opens (:func:`protect_database`);
a stored upload is made 0600 explicitly (``dpportal.datasets.upload``). ``collectstatic`` keeps the
ordinary umask: static files are public and a front server running as another user reads them.

Check: ``stat -c '%a %n' var var/db.sqlite3 var/uploads/*.csv`` after ``make run`` and an upload.
"""

from __future__ import annotations

import os
from pathlib import Path

UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600


def restrict_umask() -> int:
    """Files and folders created from now on by this process (and its children) are private; returns the
    previous umask."""
    return os.umask(UMASK)


def private_dir(path) -> Path:
    """Create ``path`` (and its parents) if needed and make it 0700."""
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    return path


def private_file(path) -> None:
    os.chmod(path, FILE_MODE)


def protect_database(sender=None, connection=None, **kwargs) -> None:
    """``connection_created`` receiver: a SQLite database file (and its -wal / -shm / -journal files)
    is made 0600 (SQLite creates them with the process's umask)."""
    if connection is None or connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name.startswith("file:") or ":memory:" in name:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.chmod(name + suffix, FILE_MODE)
        except FileNotFoundError:
            pass
