"""Where raw uploads, synthetic tables and private summaries (the fitted models) live.

Every such file has a key: its path relative to ``DATA_DIR`` (``Dataset.file_path``,
``Release.output_file``, ``Release.summary_file``). Without ``DPPORTAL_S3_BUCKET`` the file under
``DATA_DIR`` is the only copy (one machine, or a shared disk). With it, the bucket (any S3-compatible store:
S3, MinIO, Ceph, ...) holds every file through Django's storage API (``STORAGES["dpportal"]``,
django-storages' ``S3Storage``), and ``DATA_DIR`` is each machine's private cache: a file is written there
first, published to the bucket (:func:`publish`, a multipart upload streamed from disk), and fetched back
on a machine that lacks it (:func:`local_path`, a ranged download streamed to disk). Keys are never reused
(a new upload or release gets a new one), so a cached copy is never stale; copies of deleted raw files
are removed by the leftover sweep like any file no dataset names. Server-side encryption:
``DPPORTAL_S3_SSE`` (``AES256`` or ``aws:kms`` with ``DPPORTAL_S3_SSE_KMS_KEY_ID``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.storage import storages


def remote() -> bool:
    return bool(settings.DPPORTAL_S3_BUCKET)


def backend():
    return storages["dpportal"]


def key_for(path: Path) -> str:
    return Path(path).resolve().relative_to(Path(settings.DATA_DIR).resolve()).as_posix()


def publish(path: Path) -> str:
    """The key of a file written under DATA_DIR, copied to the bucket when there is one."""
    key = key_for(path)
    if remote():
        store = backend()
        name = _object_name(store, key)
        # from the file by name: s3transfer reads each part from disk as it sends it (a file object without
        # seek, as Storage.save passes, is buffered whole)
        store.bucket.Object(name).upload_file(
            str(path), ExtraArgs=store._get_write_parameters(name), Config=store.transfer_config
        )
    return key


def _object_name(store, key: str) -> str:
    from storages.utils import clean_name

    return store._normalize_name(clean_name(key))


def publish_dir(directory: Path) -> list[str]:
    """Publish every file of a folder (a release's outputs)."""
    return [publish(p) for p in sorted(Path(directory).iterdir()) if p.is_file()]


def local_path(key: str) -> Path:
    """The key's file under DATA_DIR, fetched from the bucket when missing there. As without a bucket, a
    file that exists nowhere is a path that does not exist (its reader says so)."""
    path = Path(settings.DATA_DIR) / key
    if remote() and key and not path.exists():
        try:
            _fetch(key, path)
        except FileNotFoundError:
            pass
    return path


def _fetch(key: str, path: Path) -> None:
    store = backend()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")  # concurrent fetches never mix
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            obj = store.bucket.Object(_object_name(store, key))
            obj.download_fileobj(fh, Config=store.transfer_config)
        os.replace(part, path)
    except Exception as exc:
        part.unlink(missing_ok=True)
        if _missing(exc):
            raise FileNotFoundError(f"{key} is not in the object store") from exc
        raise


def _missing(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound")


def delete(key: str) -> None:
    """Remove the key's object from the bucket (if any) and this machine's copy."""
    if not key:
        return
    if remote():
        backend().delete(key)
    (Path(settings.DATA_DIR) / key).unlink(missing_ok=True)


def open_stream(key: str):
    """The key's file opened for reading in blocks (a FileResponse over it streams): the local file, or the
    bucket's object (django-storages spools it to a temporary file past 1 MB, never whole in memory)."""
    if not remote():
        return open(Path(settings.DATA_DIR) / key, "rb")
    return backend().open(key, "rb")
