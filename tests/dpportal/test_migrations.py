"""The migrations match the models: `makemigrations --check` finds nothing to write and no app has
two leaf migrations waiting for a merge."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader


@pytest.mark.django_db
def test_the_migrations_match_the_models():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # exits 1 when a change is missing
    assert "No changes detected" in out.getvalue()
    assert MigrationLoader(None, ignore_no_migrations=True).detect_conflicts() == {}
