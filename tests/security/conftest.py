"""Security tests reuse the web fixtures: private storage per test and the personas world."""

from __future__ import annotations

from tests.web.conftest import private_storage  # noqa: F401  (autouse fixture)
from tests.web.personas import world  # noqa: F401  (fixture)
