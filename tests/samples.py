"""The real sample tables kept in the repository (samples/README.md gives provenance and licence):
tests read these, never the team-only datasets folder beside the repository, so a clone anywhere runs
the whole suite."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
ADULT = SAMPLES / "adult.csv"  # the first 3,000 records of UCI Adult
GERMAN_CREDIT = SAMPLES / "german_credit.csv"  # all 1,000 records of UCI German Credit
