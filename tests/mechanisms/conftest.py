"""The small table and its schema as files, for the command-line tests."""

from __future__ import annotations

import json

import pytest

from tests.data import SMALL_CSV, SMALL_SCHEMA


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "people.csv"
    data.write_text(SMALL_CSV)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SMALL_SCHEMA))
    return data, schema, tmp_path
