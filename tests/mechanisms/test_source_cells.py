"""TableSource.cells(): the chunked encoding gives schema.to_cells(prepare(whole table)), compactly."""

import numpy as np
import pandas as pd
import pytest

from mechanisms.schema import Column, Schema, SchemaMismatch
from mechanisms.source import TableSource, cell_dtype, cells_bytes, read_raw_csv

SCHEMA = Schema(
    columns=(
        Column("age", "integer", lower=0, upper=100, bins=10, fill=40, special=(99,)),
        Column("pay", "continuous", lower=0, upper=1000, bins=7, scale="log", fill=0),
        Column("id", "excluded"),
        Column("city", "categorical", categories=("a", "b", "(missing)"), other="(missing)"),
    ),
    missing_markers=("", "?"),
)


def _raw(n: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.choice(["17", " 45", "99", "?", "130", "-3", "62.4"], n),
            "pay": rng.choice(["0", "12.5", "999", "", "1e4", "7"], n),
            "id": [str(i) for i in range(n)],
            "city": rng.choice(["a", "b", " b", "?", "zz", ""], n),
        }
    )


@pytest.mark.parametrize("chunk", [7, 64, 10_000])
def test_chunked_cells_equal_the_whole_table_encoding(tmp_path, chunk):
    raw = _raw(300)
    path = tmp_path / "t.csv"
    raw.to_csv(path, index=False)
    whole = SCHEMA.to_cells(SCHEMA.prepare(read_raw_csv(path)))
    from_file = TableSource(SCHEMA, path=path, n=300).cells(chunk)
    from_frame = TableSource(SCHEMA, frame=raw).cells(chunk)
    assert from_file.dtype == np.uint8 and from_file.shape == (300, 3)
    np.testing.assert_array_equal(from_file, whole)
    np.testing.assert_array_equal(from_frame, whole)
    # a broken encoding (one chunk's distinct values mapped with another chunk's factorization) is caught
    broken = from_file.copy()
    broken[:chunk] = np.roll(broken[:chunk], 1, axis=0)
    assert not np.array_equal(broken, whole) or chunk >= 300


def test_chunked_cells_refuse_a_wrong_row_count_and_bad_values_with_the_whole_message(tmp_path):
    raw = _raw(50)
    path = tmp_path / "t.csv"
    raw.to_csv(path, index=False)
    with pytest.raises(SchemaMismatch, match="holds 50 records but its public row count is n=40"):
        TableSource(SCHEMA, path=path, n=40).cells(16)
    with pytest.raises(SchemaMismatch, match="holds 50 records but its public row count is n=60"):
        TableSource(SCHEMA, path=path, n=60).cells(16)
    bad = raw.assign(pay=raw["pay"].where(raw.index != 33, "lots"))
    with pytest.raises(SchemaMismatch, match=r"column 'pay': 1 value\(s\) are not numbers \(e.g. 'lots'\)"):
        TableSource(SCHEMA, frame=bad).cells(16)


def test_cell_dtype_and_planned_bytes_grow_with_the_cells():
    assert cell_dtype(SCHEMA) == np.uint8
    wide = Schema(columns=(Column("c", "categorical", categories=tuple(f"k{i}" for i in range(300))),))
    assert cell_dtype(wide) == np.uint16
    # 10M x 3 one-byte cells + one chunk of text: well under the text table's 80 bytes a cell
    assert 30e6 < cells_bytes(SCHEMA, 10_000_000) < 30e6 + 200_000 * 4 * 80 + 200_000 * 48 + 1
