"""The benchmark harness's bookkeeping (benchmarks/harness/compare.py, benchmarks/harness/report.py): run order,
resume, and the best-per-dataset verdicts that docs/benchmarks.md quotes. No release is run here."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness import compare, report
from benchmarks.harness.datasets import DatasetsMissing, dataset_path, datasets_dir
from tests.samples import SAMPLES


def _row(ds, fam, mech, eps, rep, tvd2, tstr, seconds=1.0):
    return {
        "dataset": ds,
        "family": fam,
        "mechanism": mech,
        "epsilon": eps,
        "rep": rep,
        "status": "ok",
        "seconds": seconds,
        "peak_rss_mib": 100.0,
        "tvd_1way": tvd2 / 2,
        "tvd_2way": tvd2,
        "assoc_diff": 0.1,
        "pmse_cart": 0.2,
        "tstr": tstr,
        "trtr": 0.9,
    }


def test_plan_runs_two_whole_repetitions_before_the_slow_peers():
    order = compare.plan(["a", "b"], ["baseline", "dpmerf"], ["mst"], ["aim"], [0.1, 1.0], [1.0], reps=3)
    assert len(order) == 3 * 2 * 2 * 3 + 2  # reps x datasets x epsilons x (2 mechanisms + MST) + AIM per dataset
    slow_at = [i for i, t in enumerate(order) if t[0] == "smartnoise-slow"]
    reps_before = {t[4] for t in order[: slow_at[0]]}
    reps_after = {t[4] for t in order[slow_at[-1] + 1 :]}
    assert reps_before == {0, 1} and reps_after == {2}
    assert [order[i][1:4] for i in slow_at] == [("aim", "a", 1.0), ("aim", "b", 1.0)]
    assert len(set(order)) == len(order)  # no run twice
    every = compare.plan(
        ["a", "b"], ["baseline"], ["mst"], ["aim"], [0.1, 1.0], [0.1, 1.0], reps=3, slow_datasets=["b"], slow_reps=3
    )
    slow = [t for t in every if t[0] == "smartnoise-slow"]
    assert sorted((t[3], t[4]) for t in slow) == [(0.1, 0), (0.1, 1), (0.1, 2), (1.0, 0), (1.0, 1), (1.0, 2)]
    assert {t[2] for t in slow} == {"b"}


def test_summary_compares_best_dpportal_with_best_peer():
    rows = [_row("d", "dpportal", "baseline", 1.0, r, 0.10 + 0.01 * r, 0.60) for r in range(3)]
    rows += [_row("d", "dpportal", "dpmerf", 1.0, r, 0.20, 0.80, seconds=30) for r in range(3)]
    rows += [_row("d", "smartnoise", "mst", 1.0, r, 0.15, 0.70, seconds=50) for r in range(3)]
    rows += [_row("d", "smartnoise", "aim", 1.0, 0, 0.08, 0.75, seconds=900)]
    rows += [
        {
            "dataset": "d",
            "family": "smartnoise",
            "mechanism": "mwem",
            "epsilon": 1.0,
            "rep": 0,
            "status": "error: Unable to allocate 259. PiB",
        }
    ]
    body, best = report.tables(rows)
    line = report.summary(best).splitlines()[2]
    # 2-way TVD: baseline mean 0.11 vs AIM 0.08 -> behind by 0.03; TSTR: dpmerf 0.80 vs AIM 0.75 -> ahead
    assert "baseline 0.110 (1 s)" in line and "aim 0.080 (900 s)" in line and "+0.030 (behind)" in line
    assert "dpmerf 0.800 (30 s)" in line and "aim 0.750 (900 s)" in line and "+0.050 (ahead)" in line
    assert "0.110 ± 0.010" in body  # mean ± sd over the three repetitions
    assert "| SmartNoise mwem | error: Unable to allocate 259. PiB |" in body
    # peak memory is shown only where the run measured its own peak (VmHWM), not an inherited ru_maxrss
    mst_line = next(l for l in body.splitlines() if l.startswith("| SmartNoise mst |"))
    assert mst_line.endswith("| – |")
    rows[0]["rss"] = "hwm"
    base_line = next(l for l in report.tables(rows)[0].splitlines() if l.startswith("| baseline |"))
    assert base_line.endswith("| 100.0 |")


def test_resume_skips_finished_runs_and_report_only_needs_a_log(tmp_path, monkeypatch):
    monkeypatch.setattr(compare, "OUT", tmp_path)
    monkeypatch.setattr(compare, "DATA", SAMPLES)  # the repository's german_credit.csv (all 1,000 records)
    assert compare.main(["--name", "t", "--report-only"]) == 2  # nothing to report: a clear refusal
    done = _row("german_credit", "dpportal", "baseline", 1.0, 0, 0.2, 0.5)
    (tmp_path / "compare-t.jsonl").write_text(json.dumps(done) + "\n")
    ran = []
    monkeypatch.setattr(
        compare,
        "run_task",
        lambda task: (
            ran.append(task)
            or {**_row(task["dataset"], task["family"], task["mechanism"], task["epsilon"], task["rep"], 0.3, 0.5)}
        ),
    )
    monkeypatch.setattr(compare, "BENCH_PY", str(tmp_path / "no-peer-venv"))
    monkeypatch.setattr(report, "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()

    class Inline:  # run the pool's work in this process so the monkeypatched run_task is used
        def __init__(self, max_workers):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, task):
            from concurrent.futures import Future

            f = Future()
            f.set_result(compare.run_task(task))
            return f

    monkeypatch.setattr(compare, "ProcessPoolExecutor", Inline)
    assert (
        compare.main(
            [
                "--name",
                "t",
                "--resume",
                "--datasets",
                "german_credit",
                "--mechanisms",
                "baseline",
                "--epsilons",
                "1",
                "--reps",
                "2",
                "--peers",
            ]
        )
        == 0
    )
    assert [(t["mechanism"], t["rep"]) for t in ran] == [("baseline", 1)]  # rep 0 was in the log
    lines = (tmp_path / "compare-t.jsonl").read_text().splitlines()
    assert len(lines) == 2
    doc = (tmp_path / "compare-t.md").read_text()
    assert "0.250 ± 0.071" in doc  # 2-way TVD over the logged run (0.2) and the new one (0.3)


def test_benchmark_datasets_come_from_the_environment_with_a_clear_message_when_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("DPPORTAL_DATASETS_DIR", str(tmp_path))
    assert datasets_dir() == tmp_path.resolve()
    with pytest.raises(DatasetsMissing, match=r"'adult.csv' not found at .*DPPORTAL_DATASETS_DIR"):
        dataset_path("adult.csv")
    (tmp_path / "adult.csv").write_text("a\n1\n")
    assert dataset_path("adult.csv") == tmp_path.resolve() / "adult.csv"
    assert dataset_path("german_credit.csv", SAMPLES).is_file()
    monkeypatch.setattr(compare, "DATA", tmp_path / "elsewhere")
    with pytest.raises(DatasetsMissing, match="german_credit.csv"):
        compare.prepare_split("german_credit", tmp_path / "work")
