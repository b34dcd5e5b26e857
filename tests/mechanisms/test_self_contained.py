"""The repository runs its tests and its API walk-through from itself: no test and no line of
docs/api.md reads the team's shared folder beside the repository; the sample tables they use are in
samples/ with their provenance, and small."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests.samples import ADULT, GERMAN_CREDIT, SAMPLES

REPO = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"""(\.\./shared|parent\s*/\s*["']shared["']|/work/shared)""")


def test_no_test_and_not_the_api_walkthrough_reads_the_shared_folder():
    files = [p for p in (REPO / "tests").rglob("*.py") if p.name != Path(__file__).name] + [REPO / "docs" / "api.md"]
    offenders = [
        f"{p.relative_to(REPO)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_the_pattern_catches_a_shared_read():  # the check above can fail
    up, shared = "..", "shared"  # spelled apart so that this file does not match the repository's own checks
    assert OUTSIDE.search(f'ADULT = REPO.parent / "{shared}" / "datasets" / "adult.csv"')
    assert OUTSIDE.search(f"cp {up}/{shared}/datasets/adult.csv /tmp/")


def test_the_samples_are_small_real_and_documented():
    readme = (SAMPLES / "README.md").read_text()
    for path in (ADULT, GERMAN_CREDIT):
        assert path.stat().st_size < 1_000_000
        assert hashlib.sha256(path.read_bytes()).hexdigest() in readme  # provenance names this exact file
    assert "CC BY 4.0" in readme
    assert sum(1 for _ in ADULT.open()) == 3001 and sum(1 for _ in GERMAN_CREDIT.open()) == 1001
