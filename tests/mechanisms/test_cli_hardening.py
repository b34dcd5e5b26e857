"""The command line under hostile or careless use: a seeded run carries no DP label, and bad files and
arguments get one line naming the problem (exit 2), never a traceback."""

from __future__ import annotations

import json

import pytest

from mechanisms.__main__ import main
from mechanisms.runner import SEEDED_GUARANTEE

from tests.data import SMALL_CSV


def synth(files, *extra, out=None):
    data, schema, tmp = files
    return main(
        [
            "synthesize",
            "baseline",
            "--data",
            str(data),
            "--schema",
            str(schema),
            "--epsilon",
            "1",
            "--out",
            str(out or tmp / "o.csv"),
            *extra,
        ]
    )


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


def test_a_huge_schema_file_is_refused_without_reading_it_whole(files, capsys):
    assert (
        main(
            [
                "synthesize",
                "baseline",
                "--data",
                str(files[0]),
                "--schema",
                "/dev/zero",
                "--epsilon",
                "1",
                "--out",
                str(files[2] / "o.csv"),
            ]
        )
        == 2
    )
    assert "is larger than the limit of 5,242,880 bytes" in one_error(capsys)
    assert not (files[2] / "o.csv").exists()


@pytest.mark.parametrize(
    "rows, message",
    [
        ("0", "--rows must be between 1 and 1,000,000"),
        ("-5", "--rows must be between 1 and 1,000,000"),
        ("100000000", "--rows must be between 1 and 1,000,000"),
    ],
)
def test_row_counts_are_bounded(files, capsys, rows, message):
    assert synth(files, "--rows", rows) == 2
    assert message in one_error(capsys) and not (files[2] / "o.csv").exists()


def test_the_row_limit_follows_the_setting(files, capsys, monkeypatch):
    monkeypatch.setenv("DPPORTAL_MAX_SYNTHETIC_ROWS", "5")
    assert synth(files, "--rows", "6") == 2
    assert "between 1 and 5 (DPPORTAL_MAX_SYNTHETIC_ROWS), got 6" in one_error(capsys)
    assert synth(files) == 2  # the default (n = 6 rows) is over it too
    assert "got 6" in one_error(capsys)
    assert synth(files, "--rows", "5") == 0


HEADER_CASES = {
    "duplicate": ("age,age,income,note\n", "duplicate column names in the header: 'age' and 'age'"),
    "blank": ("age,,income,note\n", "column(s) [2] have an empty name"),
    "bidi": ("age,ci\u202ety,income,note\n", "invisible character U+202E"),
    "zero-width": ("age,ci\u200bty,income,note\n", "invisible character U+200B"),
    "nfc-nfd": ("age,caf\u00e9,cafe\u0301,note\n", "column names that look identical"),
}


@pytest.mark.parametrize("case", sorted(HEADER_CASES))
def test_headers_the_web_refuses_are_refused(files, capsys, case):
    header, message = HEADER_CASES[case]
    data = files[0]
    data.write_text(header + "".join(SMALL_CSV.splitlines(keepends=True)[1:]), encoding="utf-8")
    assert synth(files) == 2
    assert message in one_error(capsys)
    assert main(["schema", "draft", str(data)]) == 2
    assert message in one_error(capsys)


def test_nul_cells_are_refused(files, capsys):
    data = files[0]
    lines = SMALL_CSV.splitlines(keepends=True)
    data.write_bytes("".join(lines[:3]).encode() + b"34,Par\x00is,1,x\n" + "".join(lines[3:]).encode())
    assert synth(files) == 2
    assert "contains NUL bytes" in one_error(capsys)


@pytest.mark.parametrize(
    "where, message",
    [
        ("missing/o.csv", "does not exist"),
        ("", "is a directory"),
        ("ro/o.csv", "is not writable"),
        ("/proc/version", "--out '/proc/version'"),
    ],
)
def test_an_unwritable_out_is_refused_before_reading_data(files, capsys, where, message):
    import os

    tmp = files[2]
    (tmp / "ro").mkdir()
    os.chmod(tmp / "ro", 0o500)
    try:
        if os.access(tmp / "ro", os.W_OK) and where.startswith("ro"):
            pytest.skip("running as a user who can write anywhere (the /proc case covers a failed write)")
        assert synth(files, out=tmp / where) == 2
        assert message in one_error(capsys)
    finally:
        os.chmod(tmp / "ro", 0o700)


@pytest.mark.parametrize("value", ["1_0", "\u0661", "nan"])
def test_recommend_parses_amounts_as_everywhere_else(files, capsys, value):
    assert main(["recommend", "--schema", str(files[1]), "--rows", "100", "--epsilon", value]) == 2
    assert one_error(capsys).startswith("error: epsilon: expected a")
