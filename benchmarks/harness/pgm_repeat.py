"""Repetitions of the grid's closest AIM comparisons: one draw per cell cannot separate a 0.001 gap.

    python -m benchmarks.harness.pgm_repeat               # make bench-pgm-repeat: the default cells, 5 repetitions
    python -m benchmarks.harness.pgm_repeat --only bank_marketing:0.1 --reps 3
    python -m benchmarks.harness.pgm_repeat --resume               # continue an interrupted run
    python -m benchmarks.harness.pgm_repeat --report-only

The goal grid (``benchmarks.harness.pgm_compare --plan grid``, docs/benchmarks/pgm.md) runs every comparison
once. Where dpportal's AIM and SmartNoise's AIM differ by less than one release's spread, that single
draw decides the goal's yes/no. This runs ``--reps`` pairs per cell, each pair started together, one
thread per process, exactly as the grid does (``benchmarks.harness.compare.run_task``: same public bins, same
evaluation), and reports mean, standard deviation and every draw, so the comparison is made on means.

Results: benchmarks/out/pgm-repeat.jsonl (appended as they finish), copied to docs/data/benchmarks-repeat.jsonl
when the run ends; report benchmarks/out/pgm-repeat.md (docs/benchmarks/pgm.md: ``python -m benchmarks.report``).
A run without --resume starts a new log, so a trial with --only replaces the committed rows: restore them
with git before committing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

from benchmarks.harness.compare import ONE_THREAD, OUT, ROOT, prepare_split, run_task
from benchmarks.harness.pgm_compare import pgm_task

# The grid's AIM cells where the 2-way TVDs were within 0.01 of each other or the time ratio within
# 10% of the goal's 1/5 (docs/benchmarks/pgm.md).
DEFAULT_CELLS = ("bank_marketing:0.1", "california_housing_numeric:0.1", "credit_default_taiwan:0.1")
PAIR = (("dpportal", "aim"), ("smartnoise", "aim"))
RAW = ROOT / "docs" / "data" / "benchmarks-repeat.jsonl"  # the committed copy of the run's rows


def _key(row: dict) -> tuple:
    return row["dataset"], float(row["epsilon"]), row["family"], int(row["rep"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=list(DEFAULT_CELLS), help="DATASET:EPSILON cells")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "pgm-repeat.jsonl"
    done: dict = {}
    if a.report_only and not log.exists() and RAW.exists():  # a fresh clone: the committed rows
        log = RAW
    if (a.resume or a.report_only) and log.exists():
        done = {_key(r): r for r in map(json.loads, filter(str.strip, log.read_text().splitlines()))}
    elif log.exists():
        log.unlink()
    cells = [(d, float(e)) for d, e in (s.split(":") for s in a.only)]
    if not a.report_only:
        os.environ.update(ONE_THREAD)
        work = OUT / "work-pgm-repeat"
        with log.open("a") as fh, ProcessPoolExecutor(max_workers=2) as pool:
            for ds, eps in cells:
                tr, te, _schema, target = prepare_split(ds, work)
                n = len(pd.read_csv(tr, usecols=[0]))
                for rep in range(a.reps):
                    tasks = [
                        pgm_task(
                            ds,
                            fam,
                            mech,
                            eps,
                            {},
                            split=(tr, te, target, n),
                            rep=rep,
                            out=work / f"{ds}-{mech}-{fam}-{eps}-{rep}.csv",
                            timeout=a.timeout,
                            dpportal_timeout=a.timeout,
                        )
                        for fam, mech in PAIR
                    ]
                    tasks = [t for t in tasks if _key(t) not in done]
                    started = time.strftime("%H:%M:%S")
                    for fut in [pool.submit(run_task, t) for t in tasks]:
                        row = fut.result()
                        row["started"] = started
                        done[_key(row)] = row
                        fh.write(json.dumps(row) + "\n")
                        fh.flush()
                        print(json.dumps(row), flush=True)
        RAW.write_text(log.read_text())
    write_report(
        [r for r in done.values() if (r["dataset"], float(r["epsilon"])) in set(cells)],
        " ".join(
            [
                "python -m benchmarks.harness.pgm_repeat",
                *(x for x in (argv if argv is not None else sys.argv[1:]) if x != "--report-only"),
            ]
        ),
    )
    return 0


def summarise(rows: list[dict]) -> list[dict]:
    """Per (dataset, epsilon): each family's mean and standard deviation of 2-way TVD, wall seconds and
    peak MiB over its finished repetitions, and the goals judged on the means."""
    out = []
    cells = sorted({(r["dataset"], float(r["epsilon"])) for r in rows})
    for ds, eps in cells:
        fam = {}
        for f in ("dpportal", "smartnoise"):
            ok = [
                r
                for r in rows
                if (r["dataset"], float(r["epsilon"]), r["family"]) == (ds, eps, f) and r.get("status") == "ok"
            ]
            if ok:
                fam[f] = {
                    k: (statistics.fmean(r[k] for r in ok), statistics.stdev(r[k] for r in ok) if len(ok) > 1 else 0.0)
                    for k in ("tvd_2way", "seconds", "peak_rss_mib")
                }
                fam[f]["draws"] = [r["tvd_2way"] for r in sorted(ok, key=lambda r: r["rep"])]
                anon = [r.get("peak_anon_mib") for r in ok]
                fam[f]["peak_anon_mib"] = statistics.fmean(anon) if all(anon) else None  # older rows lack it
        row = {"dataset": ds, "epsilon": eps, **fam}
        if len(fam) == 2:
            ours, peer = fam["dpportal"], fam["smartnoise"]
            row["tvd_goal"] = ours["tvd_2way"][0] <= peer["tvd_2way"][0]
            row["time_ratio"] = peer["seconds"][0] / ours["seconds"][0]
            row["memory_ratio"] = peer["peak_rss_mib"][0] / ours["peak_rss_mib"][0]
        out.append(row)
    return out


def private(o: dict, p: dict) -> str:
    if not (o.get("peak_anon_mib") and p.get("peak_anon_mib")):
        return "-"
    return f"{o['peak_anon_mib']:.0f} / {p['peak_anon_mib']:.0f} (1/{p['peak_anon_mib'] / o['peak_anon_mib']:.1f})"


def summary_table(rows: list[dict]) -> list[str]:
    lines = [
        "Each repetition is one release of each, "
        "started together, one thread each on the 2-core machine. 2-way TVD: mean total variation distance "
        "over all pairs of columns on the public bins (lower is better). Goals (judged on the "
        "means): TVD at most SmartNoise's, at most 1/5 of its wall time, at most 1/2 of its peak memory. "
        'Peak memory is the process\'s resident high-water mark (VmHWM); "private" is the sampled peak of its '
        "anonymous memory (RssAnon: heap, arrays, compiled code, without the shared libraries' code pages), "
        "shown where the runs recorded it.",
        "",
        "| dataset | epsilon | dpportal aim 2-way TVD | SmartNoise aim | TVD goal | dpportal s | SmartNoise s | "
        "time ratio | dpportal MiB | SmartNoise MiB | memory ratio | private MiB (dpportal / SmartNoise) | "
        "draws (dpportal / SmartNoise) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summarise(rows):
        if "dpportal" not in s or "smartnoise" not in s:
            continue
        o, p = s["dpportal"], s["smartnoise"]
        lines.append(
            f"| {s['dataset']} | {s['epsilon']:g} | {o['tvd_2way'][0]:.4f} ± {o['tvd_2way'][1]:.4f} | "
            f"{p['tvd_2way'][0]:.4f} ± {p['tvd_2way'][1]:.4f} | {'yes' if s['tvd_goal'] else '**no**'} | "
            f"{o['seconds'][0]:.1f} | {p['seconds'][0]:.1f} | 1/{s['time_ratio']:.1f} "
            f"{'yes' if s['time_ratio'] >= 5 else '**no**'} | {o['peak_rss_mib'][0]:.0f} | "
            f"{p['peak_rss_mib'][0]:.0f} | "
            f"1/{s['memory_ratio']:.1f} {'yes' if s['memory_ratio'] >= 2 else '**no**'} | "
            f"{private(o, p)} | "
            f"{' '.join(f'{x:.3f}' for x in o['draws'])} / {' '.join(f'{x:.3f}' for x in p['draws'])} |"
        )
    return lines


def write_report(rows: list[dict], command: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ["# AIM against SmartNoise AIM, repeated", "", f"Produced by `{command}`.", "", *summary_table(rows)]
    (OUT / "pgm-repeat.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
