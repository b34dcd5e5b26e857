"""Safe output of synthetic tables."""

from __future__ import annotations

import pandas as pd

from .schema import MISSING_CATEGORY

# OWASP CSV injection: cells starting with these are interpreted as formulas by spreadsheets.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0")


def neutralize_cell(text: str) -> str:
    """One text cell: a leading single quote if a spreadsheet would run it as a formula."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def neutralize_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """Prefix a single quote to string cells that a spreadsheet would run as a formula, the header
    row included (a column named ``=HYPERLINK(...)`` is a cell too; the manifest keeps true names).

    Only string (object) columns are touched; numeric columns are left exactly as they are, so a
    negative number stays a number.
    """
    out = df.copy()
    out.columns = [neutralize_cell(str(c)) for c in out.columns]
    for name in out.columns:
        col = out[name]
        if col.dtype == object:
            s = col.astype(str)
            mask = s.str.startswith(FORMULA_PREFIXES)
            if mask.any():
                out[name] = s.where(~mask, "'" + s)
    return out


def missing_as_empty(df: pd.DataFrame) -> pd.DataFrame:
    """The missing-value category (``schema.MISSING_CATEGORY``) written as an empty cell, as missing
    values are spelled in the uploaded CSV, not as the text "(missing)"."""
    out = df.copy()
    for name in out.columns:
        if out[name].dtype == object:
            out[name] = out[name].where(out[name] != MISSING_CATEGORY, "")
    return out


def write_synthetic_csv(df: pd.DataFrame, path_or_buf) -> None:
    neutralize_formulas(missing_as_empty(df)).to_csv(path_or_buf, index=False)
