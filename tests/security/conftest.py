"""Security tests reuse the web fixtures: private storage per test and the personas world."""

from __future__ import annotations

from tests.web.conftest import private_storage  # noqa: F401  (autouse fixture)
from tests.web.personas import world  # noqa: F401  (fixture)


def pytest_configure(config):
    """The web server imports dp-accounting at start (dpportal/wsgi.py); so does this test process, so
    the hostile-input suite's one-second bound measures requests, not a first import."""
    import dp_accounting.rdp  # noqa: F401
