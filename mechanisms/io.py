"""Safe output of synthetic tables."""

from __future__ import annotations

import pandas as pd

# OWASP CSV injection: cells starting with these are interpreted as formulas by spreadsheets.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0")


def neutralize_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """Prefix a single quote to string cells that a spreadsheet would run as a formula.

    Only string (object) columns are touched; numeric columns are left exactly as they are, so a
    negative number stays a number.
    """
    out = df.copy()
    for name in out.columns:
        col = out[name]
        if col.dtype == object:
            s = col.astype(str)
            mask = s.str.startswith(FORMULA_PREFIXES)
            if mask.any():
                out[name] = s.where(~mask, "'" + s)
    return out


def write_synthetic_csv(df: pd.DataFrame, path_or_buf) -> None:
    neutralize_formulas(df).to_csv(path_or_buf, index=False)
