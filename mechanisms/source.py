"""Reading private tables: raw CSV cells as strings, and the source a mechanism's ``fit`` reads.

:func:`read_raw_csv` reads every cell as text (no type guessing, no NA conversion), so the public
:class:`~mechanisms.schema.Schema` alone decides how a cell is interpreted. :class:`TableSource` is the
private input of ``fit``: the public row count ``n`` and the rows prepared by
:meth:`~mechanisms.schema.Schema.prepare`, whole or in chunks, or the cell indices of
:meth:`~mechanisms.schema.Schema.to_cells` encoded in chunks (:meth:`TableSource.cells`).

Chunked encoding: a mechanism that only counts cells (baseline, MST, AIM) never needs the table's text.
``cells()`` reads ``CELL_CHUNK_ROWS`` rows at a time as strings, and encodes each kept column of the chunk
through its distinct values: ``pd.factorize`` (hashing in C) gives each row the index of its string among
the chunk's distinct strings, :meth:`~mechanisms.schema.Schema.prepare` and ``to_cells`` run on those
distinct strings only (both map one cell at a time, so the result is the same as on the whole column), and
the row's cell is looked up by its index. The table is held as one n x d array of the smallest unsigned
integer type that holds every column's cells (1 byte a cell when no column has over 256 cells, against
about 60 bytes for a cell held as a Python string): peak memory is that array plus one chunk of text
(:func:`cells_bytes`).
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pandas as pd

from .schema import Schema, SchemaMismatch

CELL_CHUNK_ROWS = 200_000  # rows of text held at once while encoding cells
CHUNK_TEXT_BYTES = 80  # one cell of a chunk as text: the Python str (~50-60) and its share of the object column


def cell_dtype(schema: Schema) -> np.dtype:
    """The smallest unsigned integer type holding every kept column's cell indices."""
    top = max(schema.cell_sizes, default=1)
    return np.dtype(next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if top - 1 <= np.iinfo(t).max))


def cells_bytes(schema: Schema, n: int, chunk_rows: int = CELL_CHUNK_ROWS) -> int:
    """Peak memory of :meth:`TableSource.cells` for ``n`` rows: the n x d cell array, one chunk of text
    (every column, kept or not) and the chunk's encoding (two int64 index arrays per column)."""
    rows = min(int(n), chunk_rows)
    d = len(schema.kept)
    return int(n) * d * cell_dtype(schema).itemsize + rows * (len(schema.columns) * CHUNK_TEXT_BYTES + 16 * d)


def read_raw_csv(path, *, nrows: int | None = None, chunksize: int | None = None, **kw):
    """Read a CSV with every cell as a string (no pandas type guessing, no NA conversion)."""
    kw.setdefault("skipinitialspace", True)
    return pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, nrows=nrows, chunksize=chunksize, **kw)


class TableSource:
    """Private input handed to a mechanism's ``fit``: a public row count and the prepared rows.

    ``frame()`` returns the whole prepared table; ``chunks(size)`` streams it (PrivHP reads only
    through ``chunks`` so the table never has to fit in memory).
    """

    def __init__(
        self,
        schema: Schema,
        *,
        frame: pd.DataFrame | None = None,
        path=None,
        n: int | None = None,
        read_kw: dict | None = None,
    ):
        if (frame is None) == (path is None):
            raise ValueError("give exactly one of frame= or path=")
        self.schema = schema
        self._frame = frame
        self._path = path
        self._read_kw = read_kw or {}
        self._prepared: pd.DataFrame | None = None
        if frame is not None:
            self.n = len(frame)
        elif n is not None:
            self.n = int(n)
        else:
            self.n = sum(len(ch) for ch in read_raw_csv(path, chunksize=200_000, **self._read_kw))

    @classmethod
    def from_frame(cls, schema: Schema, raw: pd.DataFrame) -> "TableSource":
        return cls(schema, frame=raw)

    def frame(self) -> pd.DataFrame:
        if self._prepared is None:
            raw = self._frame if self._frame is not None else read_raw_csv(self._path, **self._read_kw)
            self._check_n(len(raw))
            self._prepared = self.schema.prepare(raw)
        return self._prepared

    def cells(self, size: int = CELL_CHUNK_ROWS) -> np.ndarray:
        """Every kept column's cell index, n x d (the values of ``schema.to_cells(self.frame())``), encoded
        ``size`` rows at a time (module docstring) into the type of :func:`cell_dtype`."""
        out = np.empty((self.n, len(self.schema.kept)), dtype=cell_dtype(self.schema))
        for start, block in self._encoded(size):
            out[start : start + len(block)] = block
        return out

    def check(self, size: int = CELL_CHUNK_ROWS, progress: Callable[[int], None] | None = None) -> None:
        """Encode every record as :meth:`cells` does, keeping nothing: raises SchemaMismatch (naming the
        problem) where a record does not fit the schema or the records do not add up to ``n``. Memory:
        one chunk of ``size`` rows. ``progress(rows)`` is told the records checked after each chunk."""
        for start, block in self._encoded(size):
            if progress is not None:
                progress(start + len(block))

    def _encoded(self, size: int) -> Iterator[tuple[int, np.ndarray]]:
        singles = [Schema(columns=(c,), missing_markers=self.schema.missing_markers) for c in self.schema.kept]
        dtype = cell_dtype(self.schema)
        seen = 0
        for raw in self._raw_chunks(size):
            self.schema.check_columns(list(raw.columns))
            if seen + len(raw) > self.n:  # more records than n: counted only, _check_n below refuses them
                seen += len(raw)
                continue
            block = np.empty((len(raw), len(singles)), dtype=dtype)
            for j, single in enumerate(singles):
                name = single.kept[0].name
                codes, distinct = pd.factorize(raw[name].to_numpy(dtype=object), use_na_sentinel=False)
                try:
                    distinct_cells = single.to_cells(single.prepare(pd.DataFrame({name: distinct})))[:, 0]
                except SchemaMismatch:
                    self.schema.prepare(raw)  # the whole chunk's message (how many rows, an example)
                    raise
                block[:, j] = distinct_cells[codes]
            yield seen, block
            seen += len(raw)
        self._check_n(seen)

    def _raw_chunks(self, size: int) -> Iterator[pd.DataFrame]:
        if self._frame is not None:
            for start in range(0, len(self._frame), size):
                yield self._frame.iloc[start : start + size]
        else:
            yield from read_raw_csv(self._path, chunksize=size, **self._read_kw)

    def chunks(self, size: int = 100_000) -> Iterator[pd.DataFrame]:
        if self._frame is not None:
            for start in range(0, len(self._frame), size):
                yield self.schema.prepare(self._frame.iloc[start : start + size])
        else:
            seen = 0
            for raw in read_raw_csv(self._path, chunksize=size, **self._read_kw):
                seen += len(raw)
                yield self.schema.prepare(raw)
            self._check_n(seen)

    def _check_n(self, records: int) -> None:
        """n is public and every sensitivity assumes the mechanism reads exactly n records: refuse a
        file whose records do not add up to it (e.g. a counter that disagrees with this reader on
        whitespace-only lines). The web app reads every chunk when the schema is confirmed, so this
        fires there, before any release."""
        if records != self.n:
            raise SchemaMismatch(
                f"the file holds {records} records but its public row count is n={self.n} "
                f"(a whitespace-only line in a one-column file is not read as a record: "
                f"write missing values with a declared missing marker)"
            )
