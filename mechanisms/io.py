"""Output of synthetic tables: the exact analysis file, and a spreadsheet-safe variant of it.

The analysis CSV is verbatim: header and column order as uploaded (excluded columns are not
synthesized), category labels exactly as confirmed (``- 50000`` stays ``- 50000``), the missing-value
category written with the schema's output marker (:attr:`Schema.missing_text`, by default the marker
the upload used), integers as integers, continuous values with the declared number of decimals.

Spreadsheets run cells starting with ``= + - @`` (and tab, CR, NUL) as formulas (OWASP "CSV
injection"). Rewriting such cells would change the data, so the guard is a separate download:
:func:`spreadsheet_safe` prefixes a single quote to those text cells and header names; numeric columns
are left alone (a negative number stays a number). Date columns are text written in the upload's
format and are guarded like categories; a format whose dates start with = + - @ is refused when the
schema is confirmed (:func:`mechanisms.dates.check_format`), so the guard there never fires for a
confirmed schema.
"""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from .schema import MISSING_CATEGORY, Schema
from .source import read_raw_csv

# OWASP CSV injection: cells starting with these are interpreted as formulas by spreadsheets.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0")
SPREADSHEET_NOTE = (
    "spreadsheet-safe variant: text cells and header names starting with = + - @, tab, CR or NUL "
    "are prefixed with a single quote (') so that spreadsheets do not run them as formulas; "
    "numeric columns are unchanged. The analysis CSV holds the exact values."
)


def neutralize_cell(text: str) -> str:
    """One text cell: a leading single quote if a spreadsheet would run it as a formula."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def neutralize_formulas(df: pd.DataFrame, text_columns=None) -> pd.DataFrame:
    """Prefix a single quote to text cells that a spreadsheet would run as a formula, the header row
    included (a column named ``=HYPERLINK(...)`` is a cell too). Only ``text_columns`` (default: the
    object columns) are touched; numeric columns are left exactly as they are."""
    out = df.copy()
    names = list(out.columns)
    text = [c for c in names if out[c].dtype == object] if text_columns is None else list(text_columns)
    for name in text:
        s = out[name].astype(str)
        mask = s.str.startswith(FORMULA_PREFIXES)
        if mask.any():
            out[name] = s.where(~mask, "'" + s)
    out.columns = [neutralize_cell(str(c)) for c in names]
    return out


def export_frame(df: pd.DataFrame, schema: Schema | None = None) -> pd.DataFrame:
    """The synthetic frame as it is written: the missing-value category as the output marker."""
    marker = schema.missing_text if schema is not None else ""
    out = df.copy()
    for name in out.columns:
        if out[name].dtype == object:
            out[name] = out[name].where(out[name] != MISSING_CATEGORY, marker)
    for c in schema.kept if schema is not None else ():
        if c.is_numeric and c.name in out and (c.is_date or out[c.name].dtype.kind == "f"):
            out[c.name] = c.format_numbers(out[c.name].to_numpy())  # integers as integers, decimals, dates
    return out


def write_synthetic_csv(df: pd.DataFrame, path_or_buf, schema: Schema | None = None) -> None:
    """The exact analysis CSV (see the module docstring)."""
    export_frame(df, schema).to_csv(path_or_buf, index=False)


def spreadsheet_safe(raw: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The spreadsheet-safe variant of an exported table read back as strings: categorical and date
    columns (dates are text in the upload's format) and the header guarded, numeric columns untouched."""
    text = [c.name for c in schema.kept if (c.kind == "categorical" or c.is_date) and c.name in raw]
    return neutralize_formulas(raw, text_columns=text)


SPREADSHEET_CHUNK_ROWS = 10_000  # rows held at once while the spreadsheet-safe variant is written


def iter_spreadsheet_csv(exact_path, schema: Schema, chunk_rows: int = SPREADSHEET_CHUNK_ROWS) -> Iterator[str]:
    """The spreadsheet-safe variant of an exported CSV as text pieces of ``chunk_rows`` rows each (the
    header with the first), so that it can be streamed with bounded memory: the same text as writing
    the whole table at once."""
    with read_raw_csv(exact_path, skipinitialspace=False, chunksize=chunk_rows) as reader:
        first = True
        for chunk in reader:
            yield spreadsheet_safe(chunk, schema).to_csv(index=False, header=first)
            first = False
    if first:  # a header and no rows: pandas yields no chunk
        yield spreadsheet_safe(read_raw_csv(exact_path, skipinitialspace=False, nrows=0), schema).to_csv(index=False)


def write_spreadsheet_csv(exact_path, path_or_buf, schema: Schema) -> None:
    """The spreadsheet-safe variant written piece by piece to a file object or a path."""
    if not hasattr(path_or_buf, "write"):
        with open(path_or_buf, "w", encoding="utf-8", newline="") as fh:
            return write_spreadsheet_csv(exact_path, fh, schema)
    for piece in iter_spreadsheet_csv(exact_path, schema):
        path_or_buf.write(piece)
