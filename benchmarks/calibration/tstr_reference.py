"""The measured model accuracy behind the guided release's "train a model" reference figures.

    python -m benchmarks.calibration.tstr_reference   # the table kept as MEASURED_TSTR in each mechanism's guide.py

Reads every dpportal run recorded in docs/data/ (benchmarks-full.json and the *.jsonl files) on the
tables with a binary target (ROC AUC; california_housing's target has five classes and is scored by
macro F1, so it is left out) and keeps, per mechanism variant, epsilon and table, the median TSTR ROC
AUC over the recorded runs and the train-on-real AUC. tests/mechanisms/guidance/test_model_quality.py checks
that the mechanisms' tables (mechanisms.guidance.model_quality.measured) equal this computation.
"""

from __future__ import annotations

import json
import pprint
import statistics
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data"
BINARY_TABLES = ("adult", "bank_marketing", "credit_default_taiwan", "german_credit")


def variant(row: dict) -> str:
    """AIM with ``workload=target`` is a different mechanism for models; other parameters are merged."""
    if row["mechanism"] == "aim" and (row.get("params") or {}).get("workload") == "target":
        return "aim:target"
    return row["mechanism"]


def recorded_rows() -> list[dict]:
    rows = json.loads((DATA / "benchmarks-full.json").read_text())["results"]
    for path in sorted(DATA.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        r
        for r in rows
        if r.get("family") == "dpportal"
        and r.get("dataset") in BINARY_TABLES
        and r.get("tstr") is not None
        and r.get("trtr") is not None
    ]


def measured() -> dict:
    """{(variant, epsilon): {table: (median TSTR AUC, train-on-real AUC)}}, figures to 3 decimals."""
    runs = defaultdict(list)
    for r in recorded_rows():
        runs[(variant(r), float(r["epsilon"]), r["dataset"])].append((r["tstr"], r["trtr"]))
    out: dict = defaultdict(dict)
    for (name, eps, table), pairs in sorted(runs.items()):
        out[(name, eps)][table] = (
            round(statistics.median(p[0] for p in pairs), 3),
            round(statistics.median(p[1] for p in pairs), 3),
        )
    return dict(out)


if __name__ == "__main__":
    print("MEASURED = " + pprint.pformat(measured(), width=110, sort_dicts=True))
