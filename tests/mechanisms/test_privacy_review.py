"""Privacy review regressions (docs/privacy-model.md): what leaves a fit besides the noisy summary.

* Progress messages and fractions are written to the release row while the job runs: they must not
  depend on the private data (only on n, d, epsilon, the schema and the parameters). Checked by
  fitting neighbouring tables (one record replaced, chosen so that the number of non-empty cells
  changes) and comparing the whole progress trace.
* The public row count n must be the number of records the mechanism reads: ``TableSource`` refuses
  a file whose records do not add up to the n it was given (before this check a single-column file
  with a whitespace-only line was counted as a record at upload but skipped by the CSV reader, so a
  mechanism saw n - 1 records while treating n as public).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.baseline import Baseline
from mechanisms.kdtree import KDTreeAdaptive, KDTreeGrid
from mechanisms.noise import Noise
from mechanisms.privhp import PrivHP
from mechanisms.schema import Column, Schema, SchemaMismatch, TableSource

SCHEMA = Schema(columns=(Column("x", "continuous", lower=0.0, upper=1.0),
                         Column("y", "continuous", lower=0.0, upper=1.0),
                         Column("c", "categorical", categories=("a", "b"))))


def _neighbours(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: all records in a small corner; D': one record replaced by a far-away one (a new cell)."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0.0, 0.05, n), rng.uniform(0.0, 0.05, n)
    d = pd.DataFrame({"x": x.astype(str), "y": y.astype(str), "c": np.where(x > 0.025, "a", "b")})
    d2 = d.copy()
    d2.iloc[0] = ["0.97", "0.93", "a"]
    return d, d2


def _trace(cls, frame: pd.DataFrame, **params) -> tuple[list, dict]:
    trace: list[tuple[float, str]] = []
    mech = cls(SCHEMA, epsilon=1.0, noise=Noise.seeded(7), progress=lambda f, s: trace.append((f, s)), **params)
    mech.fit(TableSource.from_frame(SCHEMA, frame))
    return trace, mech.privacy_cost().details


@pytest.mark.parametrize("cls,params", [
    (Baseline, {}),
    (KDTreeGrid, {"width": 0.1, "threshold": 3.0}),
    (KDTreeAdaptive, {"levels_independent": 2, "levels_adaptive": 4, "threshold": 3.0}),
    (PrivHP, {"depth": 8}),
])
def test_progress_messages_do_not_depend_on_the_data(cls, params):
    d, d2 = _neighbours()
    trace, _ = _trace(cls, d, **params)
    trace2, _ = _trace(cls, d2, **params)
    assert trace, "the mechanism reports progress"
    assert trace == trace2  # e.g. kdtree-grid once printed the number of non-empty cells


@pytest.mark.parametrize("cls,params", [
    (Baseline, {}),
    (KDTreeGrid, {"width": 0.1, "threshold": 3.0}),
    (PrivHP, {"depth": 8}),
])
def test_privacy_details_do_not_depend_on_the_data(cls, params):
    d, d2 = _neighbours()
    assert _trace(cls, d, **params)[1] == _trace(cls, d2, **params)[1]


def _write(tmp_path, text: str):
    path = tmp_path / "one_column.csv"
    path.write_text(text)
    return path


ONE = Schema(columns=(Column("v", "continuous", lower=0.0, upper=10.0, fill=0.0),))


def test_a_source_refuses_records_that_do_not_add_up_to_the_public_n(tmp_path):
    # the upload counter (csv module) counts the whitespace-only line as a record with a missing value;
    # pandas' reader skips it as a blank line: 3 public rows, 2 records read
    path = _write(tmp_path, "v\n1\n   \n2\n")
    with pytest.raises(SchemaMismatch, match="n=3"):
        TableSource(ONE, path=path, n=3).frame()
    with pytest.raises(SchemaMismatch, match="n=3"):
        for _ in TableSource(ONE, path=path, n=3).chunks(1000):
            pass


def test_a_source_with_a_consistent_n_reads_every_record(tmp_path):
    path = _write(tmp_path, "v\n1\n\n2\n3\n")  # a truly blank line is not a record for either counter
    src = TableSource(ONE, path=path, n=3)
    assert len(src.frame()) == 3
    assert sum(len(ch) for ch in TableSource(ONE, path=path, n=3).chunks(2)) == 3
    assert TableSource(ONE, path=path).n == 3  # counted by the same reader
