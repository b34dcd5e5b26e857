"""Benchmark: web-process memory of concurrent downloads of a large release (goal: growth <= 300 MB).

    nice .venv/bin/python -m benchmarks.system.download_memory [--rows 1000000] [--clients 12]
        [--kind spreadsheet|exact] [--whole]

Writes a synthetic-looking exact CSV of ``--rows`` rows (5 categorical, 6 integer, 1 date column: about
100 bytes a row, so ~100 MB for 1M rows) to a temporary folder, then in a fresh process builds
``--clients`` download responses (dpportal.releases.downloads, as the views do) and consumes them from
as many threads at once, the way a threaded WSGI server sends them to slow clients. A sampler thread
reads the process's resident memory (VmRSS) every 20 ms; the output (JSON) gives the memory before the
downloads, the peak, the growth and the seconds. ``--whole`` builds each spreadsheet-safe file in
memory first (one HttpResponse holding the whole file), for comparison.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

SCHEMA = {
    "columns": [
        *[
            {"name": f"cat{i}", "kind": "categorical", "categories": [f"=level {k}" for k in range(12)]}
            for i in range(5)
        ],
        *[{"name": f"num{i}", "kind": "integer", "lower": -1000, "upper": 100000} for i in range(6)],
        {
            "name": "day",
            "kind": "date",
            "lower": "2000-01-01",
            "upper": "2030-12-31",
            "granularity": "day",
            "format": "%Y-%m-%d",
        },
    ]
}


def write_table(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    chunk = 200_000
    for start in range(0, rows, chunk):
        k = min(chunk, rows - start)
        frame = pd.DataFrame(
            {
                **{f"cat{i}": np.char.add("=level ", rng.integers(0, 12, k).astype(str)) for i in range(5)},
                **{f"num{i}": rng.integers(-1000, 100000, k) for i in range(6)},
                "day": (np.datetime64("2000-01-01") + rng.integers(0, 11000, k)).astype(str),
            }
        )
        frame.to_csv(path, mode="a" if start else "w", header=not start, index=False)


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(path: Path, clients: int, kind: str, whole: bool) -> dict:
    from django.conf import settings

    if not settings.configured:
        settings.configure(DEFAULT_CHARSET="utf-8")
    from django.http import HttpResponse

    from dpportal.releases import downloads
    from mechanisms.io import spreadsheet_safe
    from mechanisms.schema import Schema
    from mechanisms.source import read_raw_csv

    schema = Schema.from_dict(SCHEMA)

    def respond():
        if whole and kind == "spreadsheet":
            resp = HttpResponse(content_type=downloads.CSV_TYPE)
            spreadsheet_safe(read_raw_csv(path, skipinitialspace=False), schema).to_csv(resp, index=False)
            return resp
        return downloads.csv_download(path, "t.csv", schema, spreadsheet=kind == "spreadsheet")

    sent = [0] * clients

    def client(i: int) -> None:
        resp = respond()
        for block in resp:
            sent[i] += len(block)
        resp.close()

    before = rss_bytes()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_bytes())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    return {
        "clients": clients,
        "kind": kind,
        "whole": whole,
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "answered": sum(1 for s in sent if s > 0),
        "bytes_sent_each_mb": round(min(sent) / 1e6, 1),
        "rss_before_mb": round(before / 1e6),
        "rss_peak_mb": round(peak[0] / 1e6),
        "growth_mb": round((peak[0] - before) / 1e6),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--kind", choices=("spreadsheet", "exact"), default="spreadsheet")
    ap.add_argument("--whole", action="store_true")
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # the measuring child's file
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.clients, args.kind, args.whole)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.csv"
        write_table(path, args.rows)
        cmd = [sys.executable, "-m", "benchmarks.system.download_memory", "--measure", str(path)]
        cmd += ["--clients", str(args.clients), "--kind", args.kind] + (["--whole"] if args.whole else [])
        subprocess.run(cmd, check=True)  # a fresh process: its memory holds nothing of the file's writing


if __name__ == "__main__":
    main()
