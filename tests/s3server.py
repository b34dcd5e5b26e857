"""A real S3-compatible server on loopback for the object-store tests: moto in server mode, in its own
process, with a bucket made through boto3."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

from tests.live import free_port, wait_for_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test-key", "AWS_SECRET_ACCESS_KEY": "test-secret"}


@contextlib.contextmanager
def moto_server(log_dir: Path):
    """Yields the endpoint URL of a moto server that lives as long as the block."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=open(log_dir / "moto.log", "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def make_bucket(endpoint: str, name: str):
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    client.create_bucket(Bucket=name)
    return client


def keys(client, name: str) -> set[str]:
    return {o["Key"] for o in client.list_objects_v2(Bucket=name).get("Contents", [])}
