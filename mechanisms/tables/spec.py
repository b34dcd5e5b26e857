"""The steward's list of crosstabs: parsed and checked against the public schema only.

Text form (the CLI's ``--table`` and the release parameter): tables separated by ``;``, columns by ``,``,
1 to 3 columns per table, e.g. ``sex,income;age/5,education,income``. ``age/5`` groups a numeric column's
regular cells into coarser public bins of 5 consecutive cells (special values keep their own cells). A
column has one resolution in every table that names it (the tables must agree on its cells).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..schema import Schema

MAX_TABLE_COLUMNS = 3
MAX_TABLES = 50
MAX_TABLE_CELLS = 1_000_000  # one published table
MAX_TOTAL_CELLS = 5_000_000  # all tables' cells together (the residuals have fewer)


@dataclass(frozen=True)
class TableSpec:
    """The tables (column tuples, in the order given) and each named column's grouping (1: the schema's
    own cells)."""

    tables: tuple[tuple[str, ...], ...]
    groups: tuple[tuple[str, int], ...]

    @property
    def group(self) -> dict[str, int]:
        return dict(self.groups)

    @property
    def columns(self) -> list[str]:
        out: list[str] = []
        for t in self.tables:
            out.extend(c for c in t if c not in out)
        return out

    def text(self) -> str:
        g = self.group
        return ";".join(",".join(c if g[c] == 1 else f"{c}/{g[c]}" for c in t) for t in self.tables)

    # -- the columns' cells at the tables' resolution (public) ----------------------------------------
    def size(self, schema: Schema, column: str) -> int:
        c, k = schema.column(column), self.group[column]
        if k == 1:
            return c.n_cells
        return math.ceil(c.n_bins / k) + len(c.special)

    def sizes(self, schema: Schema) -> dict[str, int]:
        return {c: self.size(schema, c) for c in self.columns}

    def cell_map(self, schema: Schema, column: str) -> np.ndarray:
        """The table cell of each of the schema's cells of ``column`` (identity without grouping)."""
        c, k = schema.column(column), self.group[column]
        idx = np.arange(c.n_cells)
        if k == 1:
            return idx
        regular = math.ceil(c.n_bins / k)
        return np.where(idx < c.n_bins, idx // k, regular + idx - c.n_bins)

    def labels(self, schema: Schema, column: str) -> list[str]:
        c, k = schema.column(column), self.group[column]
        names = c.cell_labels()
        if k == 1:
            return names
        out = []
        for start in range(0, c.n_bins, k):
            first, last = names[start], names[min(start + k, c.n_bins) - 1]
            if first == last:
                out.append(first)
            elif first.startswith("[") and last.startswith("["):
                out.append(f"{first.split(',')[0]},{last.split(',', 1)[1]}")
            else:
                out.append(f"{first}-{last}")
        return out + names[c.n_bins :]


def parse_tables(text: str, schema: Schema) -> TableSpec:
    """Parse and check the tables against the schema (ValueError naming the problem). Empty text: every
    kept column's 1-way table."""
    text = (text or "").strip()
    if not text:
        return TableSpec(tuple((c,) for c in schema.names), tuple((c, 1) for c in schema.names))
    tables: list[tuple[str, ...]] = []
    groups: dict[str, int] = {}
    for part in text.split(";"):
        names = [p.strip() for p in part.split(",") if p.strip()]
        if not names:
            raise ValueError(f"tables: an empty table in {text!r} (tables are separated by ';', columns by ',')")
        if len(names) > MAX_TABLE_COLUMNS:
            raise ValueError(f"tables: a table has at most {MAX_TABLE_COLUMNS} columns, got {len(names)}: {part!r}")
        cols = []
        for name in names:
            col, k = _grouped(name, schema)
            if groups.setdefault(col, k) != k:
                raise ValueError(
                    f"tables: column {col!r} is named at two resolutions ({groups[col]} and {k} cells per group): "
                    "a column has the same cells in every table"
                )
            cols.append(col)
        if len(set(cols)) < len(cols):
            raise ValueError(f"tables: a table names a column twice: {part!r}")
        if tuple(cols) in tables or any(sorted(cols) == sorted(t) for t in tables):
            raise ValueError(f"tables: the table {part!r} is named twice")
        tables.append(tuple(cols))
    if len(tables) > MAX_TABLES:
        raise ValueError(f"tables: at most {MAX_TABLES} tables, got {len(tables)}")
    spec = TableSpec(tuple(tables), tuple(sorted(groups.items())))
    sizes = spec.sizes(schema)
    cells = [math.prod(sizes[c] for c in t) for t in tables]
    for t, k in zip(tables, cells):
        if k > MAX_TABLE_CELLS:
            raise ValueError(
                f"tables: the table {','.join(t)} has {k:,} cells, above the limit of {MAX_TABLE_CELLS:,}: group "
                "a numeric column into coarser bins (column/k) or choose fewer columns"
            )
    if sum(cells) > MAX_TOTAL_CELLS:
        raise ValueError(f"tables: {sum(cells):,} cells in all, above the limit of {MAX_TOTAL_CELLS:,}")
    return spec


def _grouped(name: str, schema: Schema) -> tuple[str, int]:
    col, _, k = name.partition("/")
    col = col.strip()
    if col not in schema.names:
        raise ValueError(f"tables: {col!r} is not a kept column of the schema (kept: {', '.join(schema.names)})")
    if not k:
        return col, 1
    if not k.strip().isdigit() or int(k) < 2 or int(k) > 10_000:
        raise ValueError(f"tables: {name!r}: the grouping after '/' must be a whole number from 2 to 10000")
    column = schema.column(col)
    if not column.is_numeric:
        raise ValueError(
            f"tables: {name!r}: only numeric columns can be grouped into coarser bins ({col} is {column.kind})"
        )
    return col, int(k)
