"""CLI smoke: python -m mechanisms list / schema draft / synthesize, and its one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data import SMALL_SCHEMA

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mechanisms", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_list_prints_a_readable_summary_by_default():
    out = cli("list")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("baseline ") and "\\u" not in out.stdout and not out.stdout.lstrip().startswith("[")
    assert "epsilon only (pure DP)" in out.stdout and "--param memory_mb=..." in out.stdout


def test_list_describes_mechanisms_with_their_parameters():
    out = cli("list", "--json")
    assert out.returncode == 0, out.stderr
    assert "\\u" not in out.stdout and "Kreačić" in out.stdout  # letters, not \u escapes
    mechs = {m["name"]: m for m in json.loads(out.stdout)}
    assert "baseline" in mechs
    assert {"params", "supported_kinds", "needs_delta"} <= set(mechs["baseline"])


def test_schema_draft_is_marked_as_a_draft(files):
    data, _, _ = files
    out = cli("schema", "draft", str(data))
    assert out.returncode == 0, out.stderr
    draft = json.loads(out.stdout)
    assert draft["draft"] is True and draft["suggested_from_data"] is True
    assert [c["name"] for c in draft["columns"]] == ["age", "city", "income", "note"]


def test_synthesize_writes_the_csv_and_prints_the_cost(files):
    data, schema, tmp = files
    out_csv = tmp / "out.csv"
    out = cli(
        "synthesize",
        "baseline",
        "--data",
        str(data),
        "--schema",
        str(schema),
        "--epsilon",
        "1",
        "--rows",
        "40",
        "--out",
        str(out_csv),
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["epsilon"], report["delta"], report["guarantee"], report["rows"]) == (1.0, 0.0, "pure", 40)
    assert "seconds" in report
    assert len(out_csv.read_text().strip().splitlines()) == 41


@pytest.mark.parametrize(
    "args, message",
    [
        (["--epsilon", "-1"], "epsilon must be positive"),
        (["--epsilon", "1", "--mech", "nope"], "unknown mechanism 'nope'"),
        (["--epsilon", "1", "--param", "k=1"], "unknown parameter(s) for 'baseline'"),
        (["--epsilon", "1", "--schema-missing-column"], "column(s) missing from the data: ['zzz']"),
        (["--epsilon", "1", "--draft"], "the schema is a draft"),
    ],
)
def test_errors_exit_non_zero_with_one_line_naming_the_problem(files, args, message, capsys):
    """In-process (the same main() the subprocess runs; quicker than a fresh interpreter per case)."""
    from mechanisms.__main__ import main

    data, schema, tmp = files
    mech = "baseline"
    if "--mech" in args:
        mech = args[args.index("--mech") + 1]
        args = args[: args.index("--mech")]
    if "--schema-missing-column" in args:
        s = json.loads(json.dumps(SMALL_SCHEMA))
        s["columns"].append({"name": "zzz", "kind": "excluded"})
        schema.write_text(json.dumps(s))
        args = [a for a in args if a != "--schema-missing-column"]
    if "--draft" in args:
        schema.write_text(json.dumps({**SMALL_SCHEMA, "draft": True}))
        args = [a for a in args if a != "--draft"]
    code = main(["synthesize", mech, "--data", str(data), "--schema", str(schema), "--out", str(tmp / "o.csv"), *args])
    assert code != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not (tmp / "o.csv").exists()
