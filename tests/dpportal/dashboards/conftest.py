"""Dashboard tests reuse the web personas (owner, analysts, other steward, outsider) and the
per-test private storage."""

from __future__ import annotations

from tests.web.conftest import private_storage  # noqa: F401  (autouse fixture)
from tests.web.personas import world  # noqa: F401  (fixture)
