"""The benchmark pages, from the runs committed in docs/data/: ``python -m benchmarks.report`` (``make bench-docs``).

Writes docs/benchmarks/full.md (every mechanism and SmartNoise peer on six tables), docs/benchmarks/pgm.md
(AIM, MST and the Gaussian baseline against SmartNoise's) and docs/benchmarks/fidelity.md (the downloaded
file at full resolution). No release runs here: each section names the command that produced its rows."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness import fidelity, pgm_compare, pgm_repeat, report

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
DOCS = ROOT / "docs" / "benchmarks"

# (data file, title, command that produced its rows, what the section shows)
PGM_SECTIONS = [
    (
        "benchmarks-grid.jsonl",
        "The grid: six tables x epsilon 0.1 / 1 / 10",
        "python -m benchmarks.harness.pgm_compare --plan grid --name grid --timeout 900",
        "AIM, MST and the Gaussian baseline against SmartNoise's AIM and MST, each pair started together. adult and "
        "credit_default_taiwan at 1 and 10 with AIM: SmartNoise AIM past the 900 s limit; adult at 10 again with "
        "`--timeout 6000 --resume --only adult:10 --labels aim --redo aim --redo-peers`.",
    ),
    (
        "benchmarks-repeat.jsonl",
        "The grid's closest AIM cells, 5 repetitions",
        "python -m benchmarks.harness.pgm_repeat",
        None,
    ),
    (
        "benchmarks-aim-cells.jsonl",
        "AIM on adult and credit_default_taiwan at epsilon 1",
        "python -m benchmarks.harness.pgm_compare --plan issue --name aim-cells --timeout 600 --only adult:1 "
        'credit_default_taiwan:1 --labels aim "aim target" mst mst-r1',
        "adult: AIM's 2-way TVD and, with `workload=target`, TSTR; credit_default_taiwan (24 columns): AIM's time "
        "against SmartNoise MST's in the same run (SmartNoise AIM does not finish in 600 s).",
    ),
    (
        "benchmarks-aim-alone.jsonl",
        "dpportal's AIM alone, one thread",
        "python -m benchmarks.harness.pgm_compare --plan grid --name aim-alone --family dpportal --labels aim",
        "Each of the grid's AIM releases alone on the idle machine (no peer beside it), with the paper's plan (one "
        "marginal per round); AIM's default plan now fits a time budget (docs/mechanisms/aim.md, 'Time budget').",
    ),
]


def _jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def pgm_page() -> str:
    lines = [
        "# AIM, MST and the Gaussian baseline against SmartNoise",
        "",
        "Written by `python -m benchmarks.report` from docs/data/; summary and findings in "
        "[../benchmarks.md](../benchmarks.md), the method in [../mechanisms/aim.md](../mechanisms/aim.md). "
        + pgm_compare.INTRO,
    ]
    for name, title, command, what in PGM_SECTIONS:
        rows = _jsonl(name)
        lines += [
            "",
            f"## {title}",
            "",
            f"Command: `{command}`; rows: docs/data/{name}." + (f" {what}" if what else ""),
            "",
        ]
        if name == "benchmarks-repeat.jsonl":
            lines += pgm_repeat.summary_table(rows)
            continue
        lines += pgm_compare.rows_table(pgm_compare.latest_rows(DATA / name))
        if name == "benchmarks-grid.jsonl":
            lines += pgm_compare.grid_summary(pgm_compare.latest_rows(DATA / name))
    return "\n".join(lines) + "\n"


def main() -> int:
    DOCS.mkdir(parents=True, exist_ok=True)
    report.write_report(DATA / "benchmarks-full.json", doc=DOCS / "full.md")
    (DOCS / "pgm.md").write_text(pgm_page())
    print(f"wrote {DOCS / 'pgm.md'}")
    latest = {}
    for r in _jsonl("benchmarks-fidelity.jsonl"):
        latest[(r["table"], r["model"], r["mechanism"], tuple(r.get("params") or ()), r.get("repeat", 0))] = r
    fidelity.write_doc(
        fidelity.mean_over_repeats(list(latest.values())),
        "python -m benchmarks.harness.fidelity --tables ... (appends to docs/data/benchmarks-fidelity.jsonl); "
        "python -m benchmarks.report",
        doc=DOCS / "fidelity.md",
    )
    print(f"wrote {DOCS / 'fidelity.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
