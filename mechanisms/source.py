"""Reading private tables: raw CSV cells as strings, and the source a mechanism's ``fit`` reads.

:func:`read_raw_csv` reads every cell as text (no type guessing, no NA conversion), so the public
:class:`~mechanisms.schema.Schema` alone decides how a cell is interpreted. :class:`TableSource` is the
private input of ``fit``: the public row count ``n`` and the rows prepared by
:meth:`~mechanisms.schema.Schema.prepare`, whole or in chunks.
"""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from .schema import Schema, SchemaMismatch


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
