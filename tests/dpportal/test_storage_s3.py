"""The object store path (dpportal/storage.py) against a real S3-compatible server on loopback (moto in server
mode, started here): an upload, a release, a draw and a download on machines that share nothing but the
database and the bucket (each with its own DATA_DIR), server-side encryption on every object, multipart
uploads and downloads in bounded memory, and the raw object deleted with the raw data."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
import uuid
from pathlib import Path

import pytest

from dpportal import settings as dpportal_settings
from dpportal import storage
from dpportal.datasets import lifecycle
from dpportal.releases import services as release_services
from tests.personas import make_dataset, run_release
from tests.s3server import CREDENTIALS, keys, make_bucket, moto_server

pytestmark = [pytest.mark.services]
BUCKET = "dpportal-test"


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        with moto_server(tmp_path_factory.mktemp("moto")) as endpoint:
            yield endpoint
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def bucket(s3_server, settings):
    name = f"{BUCKET}-{uuid.uuid4().hex[:8]}"
    client = make_bucket(s3_server, name)
    settings.DPPORTAL_S3_BUCKET = name
    settings.STORAGES = {
        **settings.STORAGES,
        "dpportal": dpportal_settings.s3_storage(name, s3_server, sse="AES256"),
    }
    return client, name


def machine(settings, tmp_path, label) -> Path:
    """Another host: its own empty DATA_DIR (same database, same bucket)."""
    root = tmp_path / label
    (root / "uploads" / "tmp").mkdir(parents=True)
    (root / "releases").mkdir()
    settings.DATA_DIR, settings.UPLOAD_DIR, settings.RELEASE_DIR = root, root / "uploads", root / "releases"
    return root


def test_an_upload_release_draw_and_download_on_machines_sharing_only_the_bucket(bucket, personas, settings, tmp_path):
    client, name = bucket
    machine(settings, tmp_path, "web")
    dataset = make_dataset(personas.owner)
    raw_bytes = dataset.raw_path().read_bytes()
    assert keys(client, name) == {dataset.file_path}
    head = client.head_object(Bucket=name, Key=dataset.file_path)
    assert head["ServerSideEncryption"] == "AES256"

    worker = machine(settings, tmp_path, "worker")  # no raw file here: fetched from the bucket
    release = run_release(dataset, personas.owner)
    assert release.status == "done", release.error
    assert (worker / dataset.file_path).read_bytes() == raw_bytes
    assert {release.output_file, release.summary_file} <= keys(client, name)
    synthetic = (worker / release.output_file).read_bytes()

    other = machine(settings, tmp_path, "worker2")  # a draw on a host with neither summary nor table
    draw = release_services.draw_more(release, personas.owner, 20)
    assert release_services.claim(draw.pk)
    release_services.execute(draw.pk)
    draw.refresh_from_db()
    assert draw.status == "done", draw.error
    assert (other / release.summary_file).is_file() and draw.output_file in keys(client, name)

    web2 = machine(settings, tmp_path, "web2")  # the download: fetched, identical
    resp = personas.client(None).get(f"/api/releases/{release.pk}/synthetic.csv", **personas.api(personas.owner))
    assert resp.status_code == 200 and b"".join(resp.streaming_content) == synthetic
    assert (web2 / release.output_file).is_file()
    table = personas.client(None).get(f"/api/releases/{release.pk}/tables/1/", **personas.api(personas.owner))
    assert table.status_code == 200 and table.json()["columns"] == ["city"]  # the release's tables.json, fetched
    with storage.open_stream(release.output_file) as fh:
        assert fh.read() == synthetic

    raw_key = dataset.file_path
    dataset = lifecycle.delete_raw(dataset)  # the raw object goes with the raw data
    assert dataset.file_path == "" and not (web2 / raw_key).exists()
    assert raw_key not in keys(client, name) and release.output_file in keys(client, name)


def test_a_large_file_goes_up_and_down_in_parts_with_bounded_memory(bucket, settings, tmp_path):
    client, name = bucket
    root = machine(settings, tmp_path, "big")
    path = root / "uploads" / "big.csv"
    block = os.urandom(1024 * 1024)
    with open(path, "wb") as fh:
        for _ in range(40):  # 40 MB: five 8 MB parts
            fh.write(block)
    tracemalloc.start()
    key = storage.publish(path)
    _, peak_up = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    head = client.head_object(Bucket=name, Key=key)
    assert head["ContentLength"] == 40 * 1024 * 1024 and head["ETag"].strip('"').endswith("-5")  # multipart
    path.unlink()
    tracemalloc.start()
    fetched = storage.local_path(key)
    _, peak_down = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"40 MB: peak Python memory {peak_up / 2**20:.1f} MB up, {peak_down / 2**20:.1f} MB down")
    assert fetched.stat().st_size == 40 * 1024 * 1024 and fetched.read_bytes()[: len(block)] == block
    assert peak_up < 20 * 1024 * 1024 and peak_down < 20 * 1024 * 1024
    storage.delete(key)
    assert key not in keys(client, name) and not fetched.exists()


def test_a_missing_object_is_a_missing_file_as_on_local_disk(bucket, settings, tmp_path):
    root = machine(settings, tmp_path, "m")
    path = storage.local_path("uploads/nothing.csv")
    assert path == root / "uploads" / "nothing.csv" and not path.exists()
    assert [p.name for p in (root / "uploads").iterdir()] == ["tmp"]  # no partial download left behind


def test_bad_server_side_encryption_is_refused_naming_the_variable(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "DPPORTAL_DATA_DIR": str(tmp_path),
        "DJANGO_SECRET_KEY": "x" * 50,
        "DPPORTAL_S3_SSE": "rot13",
    }
    out = subprocess.run(
        [sys.executable, "-c", "import dpportal.settings"], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0 and "DPPORTAL_S3_SSE must be empty, AES256 or aws:kms" in out.stderr
