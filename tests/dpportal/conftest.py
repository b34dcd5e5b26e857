"""Web tests: private storage in a temporary directory per test; the personas fixture."""

from __future__ import annotations

import json

import pytest

from .data import SMALL_CSV, SMALL_SCHEMA
from .personas import world  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
def private_storage(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only
    settings.DATA_DIR = tmp_path
    settings.UPLOAD_DIR = tmp_path / "uploads"
    settings.RELEASE_DIR = tmp_path / "releases"
    (tmp_path / "uploads" / "tmp").mkdir(parents=True)
    (tmp_path / "releases").mkdir()
    return tmp_path


@pytest.fixture
def files(tmp_path):
    """The small table and its schema as files, for the CLI tests."""
    data = tmp_path / "people.csv"
    data.write_text(SMALL_CSV)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SMALL_SCHEMA))
    return data, schema, tmp_path
