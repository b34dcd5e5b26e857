"""A census-like extract of any size: 42 columns resampled from three public tables.

Columns: credit_default_taiwan's 24 (its identifier dropped), adult's 15, and bank_marketing's job,
marital status and balance (42 in all, each prefixed by its table). Each table's rows are drawn with
replacement, independently per table, so every column keeps its own table's distribution and the
relations within each table; the three tables are unrelated to one another, as in a wide extract whose
blocks come from different surveys.

    python -m benchmarks.system.big_table --rows 1000000 --out benchmarks/out/big/t1m.csv

writes the CSV (in blocks of 500,000 rows, so memory stays bounded whatever ``--rows``) and, beside it,
``<name>.schema.json``: the matching public schema, built from the repository's schemas for the three
tables (benchmarks/schemas).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.harness.datasets import dataset_path
from mechanisms.source import read_raw_csv

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "benchmarks" / "schemas"
# (table, prefix, columns kept: None = all but the dropped)
PARTS = (
    ("credit_default_taiwan", "credit", None),
    ("adult", "adult", None),
    ("bank_marketing", "bank", ("job", "marital", "balance")),
)
DROP = {"credit_default_taiwan": ("ID",)}
BLOCK = 500_000


def sources() -> list[tuple[str, str, object]]:
    out = []
    for table, prefix, keep in PARTS:
        frame = read_raw_csv(dataset_path(f"{table}.csv")).drop(columns=list(DROP.get(table, ())))
        if keep is not None:
            frame = frame[list(keep)]
        out.append((table, prefix, frame))
    return out


def schema_dict(parts) -> dict:
    columns = []
    for table, prefix, frame in parts:
        spec = {c["name"]: c for c in json.loads((SCHEMAS / f"{table}.json").read_text())["columns"]}
        for name in frame.columns:
            columns.append({**spec[name], "name": f"{prefix}_{name}"})
    return {"version": 1, "missing_markers": ["", "?"], "columns": columns}


def write(rows: int, out: Path, seed: int = 0) -> Path:
    parts = sources()
    out.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    header = ",".join(f"{p}_{c}" for _, p, f in parts for c in f.columns)
    arrays = [(f.to_numpy(dtype=object)) for _, _, f in parts]
    with open(out, "w", newline="") as fh:
        fh.write(header + "\n")
        for start in range(0, rows, BLOCK):
            k = min(BLOCK, rows - start)
            block = np.concatenate([a[rng.integers(0, len(a), k)] for a in arrays], axis=1)
            fh.write("\n".join(map(",".join, block)))
            fh.write("\n")
    out.with_suffix(".schema.json").write_text(json.dumps(schema_dict(parts), indent=1))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "big" / "table.csv")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    path = write(args.rows, args.out, args.seed)
    print(f"{path}: {args.rows:,} rows, {path.stat().st_size / 2**20:,.0f} MiB")


if __name__ == "__main__":
    main()
