"""The command line under hostile or careless use: a seeded run carries no DP label, and bad files and
arguments get one line naming the problem (exit 2), never a traceback."""

from __future__ import annotations

import json

import pytest

from mechanisms.__main__ import main
from mechanisms.runner import SEEDED_GUARANTEE

from .data import SMALL_CSV, SMALL_SCHEMA


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "people.csv"
    data.write_text(SMALL_CSV)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SMALL_SCHEMA))
    return data, schema, tmp_path


def synth(files, *extra, out=None):
    data, schema, tmp = files
    return main(["synthesize", "baseline", "--data", str(data), "--schema", str(schema), "--epsilon", "1",
                 "--out", str(out or tmp / "o.csv"), *extra])


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_seeded_run_says_it_is_not_differentially_private(files, capsys):
    tmp = files[2]
    assert synth(files, "--seed", "1", "--rows", "20", out=tmp / "a.csv") == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["guarantee"] == SEEDED_GUARANTEE and report["differentially_private"] is False
    assert report["guarantee_with_secure_noise"] == "pure" and "NOT differentially private" in captured.err
    assert synth(files, "--seed", "1", "--rows", "20", out=tmp / "b.csv") == 0
    assert (tmp / "a.csv").read_bytes() == (tmp / "b.csv").read_bytes()  # reproducible: hence no DP label
    capsys.readouterr()
    assert synth(files, "--rows", "20") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["guarantee"] == "pure" and "differentially_private" not in report
