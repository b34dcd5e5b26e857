"""The measured-against-estimated run-time table: its pass rule, the committed table, and a short run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.calibration import estimate_accuracy as ea

ROOT = Path(__file__).resolve().parents[2]


def _row(seconds, measured, text="about 10 s", low=None, high=None):
    est = {"seconds": seconds, "text": text}
    if low is not None:
        est.update(low_seconds=low, high_seconds=high)
    return {"estimate": est, "measured": measured}


def test_a_row_passes_within_2x_inside_the_shown_range_or_as_a_few_seconds():
    assert ea.verdict(_row(10, 19))[1] == "within 2x" and ea.verdict(_row(10, 21))[1] == "MISSED"
    assert ea.verdict(_row(10, 3, low=1, high=32))[1] == "inside the range"
    assert ea.verdict(_row(10, 0.9, low=1, high=32))[1] == "MISSED"
    assert ea.verdict(_row(0.7, 0.1, text="a few seconds"))[1] == "as shown: a few seconds"
    assert ea.verdict(_row(0.7, 6, text="a few seconds"))[1] == "MISSED"


def test_the_committed_table_covers_three_tables_and_aim_with_each_workload_and_every_row_passes():
    text = (ROOT / "docs" / "benchmarks" / "estimates.md").read_text()
    assert "`python -m benchmarks.calibration.estimate_accuracy`" in text
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| table")]
    assert {r.split(" | ")[0][2:] for r in rows} == {"adult", "german_credit", "generated"}
    workloads = {w for r in rows for w in re.findall(r"workload=([\w-]+)", r)}
    assert workloads == {"all-2way", "all-3way", "target"}
    assert {r.split(" | ")[2] for r in rows} == {"baseline", "mst", "aim"}
    assert rows and not any("MISSED" in r for r in rows)


@pytest.mark.slow
def test_a_short_run_through_the_api_writes_the_table(tmp_path):
    out = tmp_path / "estimates.md"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.calibration.estimate_accuracy", "--only", "baseline", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    table = out.read_text()
    assert table.count("| baseline |") == 3 and "3 of 3 pass" in table
