"""Every test here gets its own private storage (tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_storage(private_storage):
    return private_storage
