"""Benchmark: accepting a schema with large public rules (goal: well under a second).

    nice .venv/bin/python -m benchmarks.system.rules_check [--categories 20000] [--rules 20] [--values 2000]

Two categorical columns of 20,000 categories each and 20 forbid rules listing 2,000 categories of each
column (about 1.2 MB of schema JSON): the schema is parsed and checked (:func:`mechanisms.rules.check_rules`
runs when the schema is built) and then the rules are applied to a 100,000-row frame. Prints JSON with
the JSON size and the seconds of each step.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

from mechanisms import rules
from mechanisms.schema import Schema


def schema_dict(categories: int, n_rules: int, values: int) -> dict:
    cats = [f"c{k}" for k in range(categories)]
    rng = np.random.default_rng(0)
    forbid = [
        {"forbid": {col: [cats[i] for i in rng.choice(categories, values, replace=False)] for col in ("a", "b")}}
        for _ in range(n_rules)
    ]
    columns = [{"name": col, "kind": "categorical", "categories": cats} for col in ("a", "b")]
    return {"columns": columns, "rules": forbid}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--categories", type=int, default=20_000)
    ap.add_argument("--rules", type=int, default=20)
    ap.add_argument("--values", type=int, default=2_000)
    args = ap.parse_args()
    d = schema_dict(args.categories, args.rules, args.values)
    text = json.dumps(d)
    t0 = time.perf_counter()
    schema = Schema.from_json(text)
    t1 = time.perf_counter()
    rng = np.random.default_rng(1)
    cats = np.asarray(d["columns"][0]["categories"], dtype=object)
    frame = pd.DataFrame({c: cats[rng.integers(0, len(cats), 100_000)] for c in ("a", "b")})
    bad = rules.violations(schema, frame)
    t2 = time.perf_counter()
    print(
        json.dumps(
            {
                "schema_bytes": len(text),
                "accept_s": round(t1 - t0, 3),
                "apply_100k_rows_s": round(t2 - t1, 3),
                "rows_breaking_a_rule": int(bad.sum()),
            }
        )
    )


if __name__ == "__main__":
    main()
