"""Reading a real or synthetic table onto the public scale for evaluation (either download, or a
mechanism's output)."""

from __future__ import annotations

import pandas as pd

from ..schema import MISSING_CATEGORY, Schema

from ..source import read_raw_csv


def undo_formula_guard(schema: Schema, raw: pd.DataFrame) -> pd.DataFrame:
    """Strip the quote :func:`mechanisms.io.spreadsheet_safe` put before risky categorical cells (a
    cell that is itself a declared category is left alone), so either download can be evaluated."""
    from ..io import FORMULA_PREFIXES

    out = raw.copy()
    names = {c.name for c in schema.columns}
    out.columns = [
        str(c)[1:] if str(c).startswith("'") and str(c)[1:] in names and str(c)[1:].startswith(FORMULA_PREFIXES) else c
        for c in out.columns
    ]  # the header row is guarded too
    for c in schema.kept:
        if c.kind == "categorical" and c.name in out:
            s = out[c.name]
            mask = s.str.startswith("'") & s.str[1:].str.startswith(FORMULA_PREFIXES) & ~s.isin(c.categories)
            if mask.any():
                out[c.name] = s.where(~mask, s.str[1:])
    return out


def load_prepared(schema: Schema, path: str, *, synthetic: bool = False) -> pd.DataFrame:
    try:
        raw = read_raw_csv(path)
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror}") from None
    return prepare_table(schema, raw, synthetic=synthetic)


def prepare_table(schema: Schema, raw: pd.DataFrame, *, synthetic: bool) -> pd.DataFrame:
    """A table (CSV strings, a prepared frame or a mechanism's output) on the public scale. Excluded
    columns, which are never synthesized and dropped by preparation, are filled with blanks first;
    for a synthetic table the CSV formula guard is undone."""
    raw = raw.astype(str)
    if synthetic:
        raw = undo_formula_guard(schema, raw)
        marks = {schema.missing_text.strip(), ""}  # the output marker (mechanisms.io); empty cells of older files
        for c in schema.kept:
            if c.kind == "categorical" and MISSING_CATEGORY in c.categories and c.name in raw:
                raw[c.name] = raw[c.name].where(~raw[c.name].str.strip().isin(marks), MISSING_CATEGORY)
    for c in schema.columns:
        if c.kind == "excluded" and c.name not in raw:
            raw[c.name] = ""
    return schema.prepare(raw)
