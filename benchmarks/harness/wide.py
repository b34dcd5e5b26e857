"""Wide tables built from the shared datasets, which have at most 25 columns: two tables' records side by side
(row i of one next to row i of the other, both shuffled with the seed), columns prefixed by their table. Each
half keeps its own relations; across halves the columns are independent by construction.

* ``credit_adult``: credit_default_taiwan (24 kept columns) then adult (15): 39 columns, 30,000 rows, the
  adult income label last, so that the label's relations (education, sex, marital status, occupation, age,
  hours) sit among many columns that do not predict it, as in a census extract.
* ``bank_credit``: bank_marketing (17) then credit_default_taiwan (24): 41 columns, 4,521 rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.harness.datasets import dataset_path
from mechanisms.source import read_raw_csv

WIDE = {"credit_adult": ("credit_default_taiwan", "adult"), "bank_credit": ("bank_marketing", "credit_default_taiwan")}
PREFIX = {"credit_default_taiwan": "credit", "adult": "adult", "bank_marketing": "bank"}
DROP = {"credit_default_taiwan": ("ID",)}  # identifiers, excluded by any steward


def raw_side_by_side(name: str, seed: int) -> pd.DataFrame:
    """The raw CSV strings of wide table ``name``: as many rows as its smaller half, each half shuffled."""
    left, right = WIDE[name]
    frames = [read_raw_csv(dataset_path(f"{t}.csv")).drop(columns=list(DROP.get(t, ()))) for t in (left, right)]
    n = min(len(f) for f in frames)
    rng = np.random.default_rng(seed)
    parts = []
    for table, frame in zip((left, right), frames):
        pick = rng.permutation(len(frame))[:n]
        parts.append(frame.iloc[pick].reset_index(drop=True).add_prefix(PREFIX[table] + "_"))
    return pd.concat(parts, axis=1)


def split(raw: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two disjoint random halves: the table a mechanism is fitted on, and the real rows it is scored against."""
    order = np.random.default_rng(seed + 1).permutation(len(raw))
    half = len(raw) // 2
    a = raw.iloc[np.sort(order[:half])].reset_index(drop=True)
    b = raw.iloc[np.sort(order[half:])].reset_index(drop=True)
    return a, b
