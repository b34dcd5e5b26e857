"""Files a killed process leaves behind, removed by the sweep (at worker start-up, every
DPPORTAL_SWEEP_SECONDS, and ``manage.py sweep_releases``, which ``make run`` runs before it starts):

* upload temporaries in ``uploads/tmp/`` (Django's spooled request body and dpportal's ``.part``): raw
  data, removed once untouched for ``DPPORTAL_LEFTOVER_SECONDS`` (an upload in progress writes to them);
* raw files in ``uploads/`` that no dataset names (killed between the rename and the row), after the same age;
* ``releases/<id>.tmp`` folders of releases not running (a job writes there, then renames), after a minute.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)

TMP_DIR_GRACE_SECONDS = 60  # a job claimed after the status check creates its .tmp folder afresh


def leftover_seconds() -> float:
    return float(getattr(settings, "DPPORTAL_LEFTOVER_SECONDS", 3600))


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except FileNotFoundError:
        return -1.0


def sweep_files(now: float | None = None) -> list[str]:
    """Remove leftovers; returns what was removed (paths relative to the data directory)."""
    now = time.time() if now is None else now
    removed = _upload_leftovers(now) + _release_tmp_dirs(now)
    for path in removed:
        log.warning("removed leftover %s", path)
    return removed


def _upload_leftovers(now: float) -> list[str]:
    from dpportal.datasets.models import Dataset

    upload_dir, data_dir = Path(settings.UPLOAD_DIR), Path(settings.DATA_DIR)
    named = {str(data_dir / p) for p in Dataset.objects.exclude(file_path="").values_list("file_path", flat=True)}
    candidates = [p for p in (upload_dir / "tmp").glob("*") if p.is_file()]
    candidates += [p for p in upload_dir.glob("*.csv") if p.is_file() and str(p) not in named]
    removed = []
    for path in candidates:
        if _age(path, now) > leftover_seconds():
            path.unlink(missing_ok=True)
            removed.append(str(path.relative_to(data_dir)))
    return removed


def _release_tmp_dirs(now: float) -> list[str]:
    from .models import Release

    release_dir, data_dir = Path(settings.RELEASE_DIR), Path(settings.DATA_DIR)
    active = {
        str(pk)
        for pk in Release.objects.filter(status__in=(Release.QUEUED, Release.RUNNING)).values_list("pk", flat=True)
    }
    removed = []
    for path in release_dir.glob("*.tmp"):
        if path.is_dir() and path.name[:-4] not in active and _age(path, now) > TMP_DIR_GRACE_SECONDS:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path.relative_to(data_dir)))
    return removed
