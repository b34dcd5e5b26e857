"""Are the headline's far-off flags right? A real sample in place of the file must not be flagged; a
release that loses the label's relationships must be (docs/evaluation.md, "Quality score").

Controls: for each size, ``splits`` seeded samples of the table are each cut into a reference half and two
quarters, one standing for the file, the other for the floor. Counted: the splits where a pair or a label
gap is far off, with the sampling term (:func:`mechanisms.evaluation.fidelity.worst_pairs`) and with 3x
the measured floor only; and the measured floors against what sampling alone gives. Releases: each
mechanism is fitted on the whole table at ``--epsilon`` and its file, as many rows as the floor, checked
against a reference half (the synthesizer saw those rows, as in the web worker's evaluation).

    python -m benchmarks.harness.quality_flags [--table adult] [--target income]
        [--sizes 32561:4 4000:20 1000:20] [--mechanisms mst aim] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import pandas as pd

from benchmarks.harness.datasets import dataset_path
from mechanisms.draft import draft_schema
from mechanisms.evaluation import fidelity
from mechanisms.io import write_synthetic_csv
from mechanisms.noise import Noise
from mechanisms.runner import build, run
from mechanisms.schema import Schema
from mechanisms.source import TableSource, read_raw_csv


def far_by_floor_only(rep: dict) -> tuple[bool, bool]:
    """Whether a pair, and a label gap, is 3x its measured floor and above the absolute threshold."""
    two = rep["two_way"]
    pair = any(
        s >= fidelity.FAR_OFF_FACTOR * f and s > fidelity.FAR_OFF_PAIR_TVD
        for s, f in zip(two["synthetic"], two["floor"])
    )
    gap = any(
        c["synthetic"] >= fidelity.FAR_OFF_FACTOR * c["floor"] and c["synthetic"] > fidelity.FAR_OFF_LABEL_GAP
        for c in (rep["label_gap"] or {}).get("columns", [])
    )
    return pair, gap


def controls(schema: Schema, table: pd.DataFrame, target: str, rows: int, splits: int) -> dict:
    flagged = {"pair": 0, "gap": 0, "pair_floor_only": 0, "gap_floor_only": 0}
    floors, sampling = [], []
    for s in range(splits):
        raw = table.sample(min(rows, len(table)), random_state=s).reset_index(drop=True)
        reference, rest = fidelity.split_reference(raw, len(raw), seed=s)
        floor, other = rest.iloc[: len(rest) // 2], rest.iloc[len(rest) // 2 :]
        rep = fidelity.report(
            schema, reference, other.reset_index(drop=True), floor.reset_index(drop=True), target=target, seed=s
        )
        gaps = (rep["label_gap"] or {}).get("columns", [])
        flagged["pair"] += bool(rep["worst_pairs"] and rep["worst_pairs"][0]["far_off"])
        flagged["gap"] += bool(gaps and gaps[0]["far_off"])
        pair, gap = far_by_floor_only(rep)
        flagged["pair_floor_only"] += pair
        flagged["gap_floor_only"] += gap
        floors += [c["floor"] for c in gaps]
        sampling += [c["sampling"] for c in gaps]
    return {
        "rows": min(rows, len(table)),
        "splits": splits,
        **flagged,
        "label_gap_floor_mean": float(np.mean(floors)),
        "label_gap_sampling_mean": float(np.mean(sampling)),
    }


def release(schema: Schema, table: pd.DataFrame, target: str, mechanism: str, epsilon: float) -> dict:
    reference, floor = fidelity.split_reference(table, len(table), seed=5)
    params = {"target": target} if mechanism == "aim" else {}
    delta = 0.0 if mechanism == "baseline" else 1e-5
    mech = build(mechanism, schema, epsilon=epsilon, delta=delta, noise=Noise.seeded(3), n=len(table), params=params)
    buf = io.StringIO()
    write_synthetic_csv(run(mech, TableSource.from_frame(schema, table), len(floor)).synthetic, buf, schema)
    buf.seek(0)
    synthetic = read_raw_csv(buf, skipinitialspace=False).astype(str)
    q = fidelity.quality(fidelity.report(schema, reference, synthetic, floor, target=target, seed=5))
    return {"mechanism": mechanism, "score": q["score"], "far_off": q["far_off"], "warnings": q["warnings"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="adult")
    ap.add_argument("--target", default=None, help="default: the last column")
    ap.add_argument("--sizes", nargs="*", default=["32561:4", "4000:20", "1000:20"], help="rows:splits")
    ap.add_argument("--mechanisms", nargs="*", default=[])
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    table = read_raw_csv(dataset_path(f"{args.table}.csv")).astype(str)
    target = args.target or table.columns[-1]
    schema = draft_schema(table).confirmed()
    for size in args.sizes:
        rows, splits = (int(v) for v in size.split(":"))
        print(controls(schema, table, target, rows, splits))
    for mechanism in args.mechanisms:
        print(release(schema, table, target, mechanism, args.epsilon))


if __name__ == "__main__":
    main()
