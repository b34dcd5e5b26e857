"""Every security test gets its own private storage (tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_storage(private_storage):
    return private_storage


def pytest_configure(config):
    """The web server imports dp-accounting at start (dpportal/wsgi.py); so does this test process, so
    the hostile-input suite's one-second bound measures requests, not a first import."""
    import dp_accounting.rdp  # noqa: F401
