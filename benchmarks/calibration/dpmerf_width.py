"""Check: does DP-MERF's run-time line hold on wide tables? (a short measurement, about a minute)

    nice .venv/bin/python -m benchmarks.calibration.dpmerf_width [--rows 20000] [--epochs 60]

Fits DP-MERF (one torch thread, seeded noise) on the first ``--rows`` rows of adult (15 columns, 104
category levels) and on the same rows widened to 33 columns (adult's categorical columns twice more
under new names: 312 levels, hidden widths (132, 66) instead of (60, 30)), and prints, for each, the CPU
seconds of the generator's training, of the whole fit, and the run-time model's estimate. The line's
work measure (``epochs x batch x features + n x features``) is the same for both tables; the measured
ratio wide / adult says how much the width adds that the line does not count. CPU seconds, not wall
seconds, so that other work on the machine does not count (it still inflates them somewhat: compare the
two tables of one run, not runs on differently loaded machines); a small warm-up fit first, so that
neither table pays torch's one-time imports.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import pandas as pd

from mechanisms import resources
from mechanisms.guidance import runtime
from mechanisms.noise import Noise
from mechanisms.runner import build
from mechanisms.schema import Schema
from mechanisms.source import TableSource, read_raw_csv

DATA = "/work/shared/datasets/adult.csv"
SCHEMA = "benchmarks/schemas/adult.json"


def tables(rows: int) -> dict[str, tuple[pd.DataFrame, dict]]:
    raw = read_raw_csv(DATA, nrows=rows)
    with open(SCHEMA) as fh:
        schema = json.load(fh)
    cat = [c for c in schema["columns"] if c.get("kind") == "categorical"]
    parts, cols = [raw], list(schema["columns"])
    for k in (1, 2):
        parts.append(raw[[c["name"] for c in cat]].rename(columns=lambda n, k=k: f"{n}_{k}"))
        cols += [{**c, "name": f"{c['name']}_{k}"} for c in cat]
    return {"adult": (raw, schema), "adult widened": (pd.concat(parts, axis=1), {**schema, "columns": cols})}


def measure(raw: pd.DataFrame, schema_dict: dict, epochs: int) -> dict:
    schema = Schema.from_dict(schema_dict).confirmed()
    mech = build(
        "dpmerf", schema, epsilon=1.0, delta=1e-5, noise=Noise.seeded(0), n=len(raw), params={"epochs": epochs}
    )
    est = runtime.estimate("dpmerf", n=len(raw), schema=schema, params=mech.params, threads=1)
    train = mech._train
    spent = {}

    def timed(*args, **kwargs):
        c0 = time.process_time()
        out = train(*args, **kwargs)
        spent["train_cpu_s"] = time.process_time() - c0
        return out

    mech._train = timed
    c0 = time.process_time()
    mech.fit(TableSource.from_frame(schema, raw))
    return {
        "columns": len(schema.kept),
        "category_levels": sum(mech._cat_sizes),
        "hidden": list(mech.hidden),
        "fit_cpu_s": round(time.process_time() - c0, 2),
        "train_cpu_s": round(spent["train_cpu_s"], 2),
        "estimated_s": round(est.seconds, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--epochs", type=int, default=60)
    args = ap.parse_args()
    os.environ["DPMERF_TORCH_THREADS"] = "1"
    resources.limit_threads(1)
    data = tables(args.rows)
    measure(data["adult"][0].head(500), data["adult"][1], 5)  # warm-up: torch's first optimizer imports its compiler
    out = {name: measure(raw, schema, args.epochs) for name, (raw, schema) in data.items()}
    out["train_ratio_wide_over_adult"] = round(out["adult widened"]["train_cpu_s"] / out["adult"]["train_cpu_s"], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
