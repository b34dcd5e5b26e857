"""Public schema: what the steward declares public about a table, and the shared encodings.

A :class:`Schema` is PUBLIC metadata confirmed by the data steward: column kinds, numeric bounds,
category lists, numeric bins, and how missing or unknown values are mapped. Mechanisms may use only
these facts about the domain, never bounds or categories computed from the data.

Every record is mapped to exactly one prepared record by a per-record transformation
(:meth:`Schema.prepare`): numbers are clipped to the bounds, missing numbers become the declared
``fill`` value, unknown or missing categories become the declared ``other`` category. Rows are never
dropped, so replace-one neighbouring inputs stay replace-one neighbours with the same public row
count n after preparation. (Dropping rows would make n data-dependent; it is deliberately not
offered.)

Encodings shared by all mechanisms:

* :meth:`Schema.to_unit` / :meth:`Schema.from_unit`: numeric columns scaled to [0, 1] on the public
  bounds, categorical columns as integer codes 0..K-1.
* :meth:`Schema.to_cells` / :meth:`Schema.from_cells`: every kept column as a discrete index: the
  category code, or the public bin of a numeric column (``bins`` equal-width bins on the bounds;
  integer columns with a small range get one bin per value). Decoding draws uniformly inside a bin.

:func:`draft_schema` SUGGESTS a schema from data. Its output is marked ``draft`` and
``suggested_from_data``; it must be confirmed by the steward before any mechanism may use it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from . import safejson
from .accounting import short_repr

KINDS = ("continuous", "integer", "categorical", "excluded")
NUMERIC_KINDS = ("continuous", "integer")
DEFAULT_MISSING_MARKERS = ("", "?", "NA")
MAX_ABS_BOUND = 1e15  # numeric bounds: beyond this, float arithmetic on (upper - lower) loses meaning
MAX_CATEGORIES = 1000  # a categorical column with more levels than this is suggested as excluded
DEFAULT_BINS = 10
# The category a draft gives to missing values of a categorical column. Synthetic tables write it back
# as an empty cell (mechanisms.io), the usual spelling of "missing" in a CSV.
MISSING_CATEGORY = "(missing)"


class SchemaError(ValueError):
    """The schema itself is invalid (bad bounds, unknown kind, ...)."""


def check_text(value: str, what: str, *, allow_newlines: bool = False) -> str:
    """Refuse NUL and other control characters in a short text field (names, markers, categories):
    PostgreSQL cannot store NUL at all (a 500 there, silent on SQLite), and control characters in a
    name or marker are never intended. Quoted cells may hold newlines and tabs, so categories
    (which mirror cell values) may keep those. Raises SchemaError naming the field and the character."""
    bad = (_CONTROL_IN_CELLS if allow_newlines else _CONTROL).search(value)
    if bad:
        raise SchemaError(f"{what} {value[:40]!r} contains the control character {bad.group()!r} at position "
                          f"{bad.start()}: NUL and control characters are not allowed")
    return value


_CONTROL = re.compile("[\x00-\x1f\x7f]")
_CONTROL_IN_CELLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_NAME_CHARS = 200


def check_column_name(name: str) -> str:
    """A column name people can read as it is: no control characters, no invisible format characters
    (bidi overrides such as U+202E, zero-width spaces and joiners), at most 200 characters."""
    check_text(name, "column name")
    hidden = next((c for c in name if unicodedata.category(c) == "Cf"), None)
    if hidden is not None:
        raise SchemaError(f"column name {name[:40]!r} contains the invisible character U+{ord(hidden):04X} "
                          f"({unicodedata.name(hidden, 'format character')}): rename the column")
    if len(name) > MAX_NAME_CHARS:
        raise SchemaError(f"column names may be at most {MAX_NAME_CHARS} characters, got {name[:40]!r}...")
    return name


def check_header(header: Sequence[str]) -> None:
    """A header row the web upload and the command line both accept: every name non-empty and readable
    (``check_column_name``), no duplicates, and no two names that differ only in their Unicode form
    (NFC/NFD, compatibility characters: they look identical)."""
    empty = [i + 1 for i, h in enumerate(header) if not h.strip()]
    if empty:
        raise SchemaError(f"column(s) {empty} have an empty name in the header row")
    for h in header:
        check_column_name(h)
    seen: dict[str, str] = {}
    for h in header:
        key = unicodedata.normalize("NFKC", h)
        if key in seen:
            what = "duplicate column names" if seen[key] == h else "column names that look identical"
            raise SchemaError(f"{what} in the header: {seen[key][:40]!r} and {h[:40]!r}")
        seen[key] = h


class SchemaMismatch(ValueError):
    """The data does not fit the schema (missing column, undeclared category without 'other', ...)."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] = ()
    bins: int = DEFAULT_BINS
    fill: float | None = None  # numeric: public value that replaces a missing number
    other: str | None = None  # categorical: declared category for unknown / missing values

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"column name must be a non-empty string, got {self.name!r}")
        check_column_name(self.name)
        if self.kind not in KINDS:
            raise SchemaError(f"column {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind in NUMERIC_KINDS:
            for attr in ("lower", "upper"):
                v = getattr(self, attr)
                if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise SchemaError(f"column {self.name!r}: numeric columns need finite {attr}, got {v!r}")
                if isinstance(v, float) and not math.isfinite(v):
                    raise SchemaError(f"column {self.name!r}: numeric columns need finite {attr}, got {v!r}")
                if abs(v) > MAX_ABS_BOUND:  # compared before any float(): a huge JSON integer cannot overflow
                    raise SchemaError(f"column {self.name!r}: {attr} must lie within +-{MAX_ABS_BOUND:.0e}, "
                                      f"got {attr}={short_repr(v)}")
            if not self.upper > self.lower:
                raise SchemaError(
                    f"column {self.name!r}: upper must exceed lower, got lower={self.lower}, upper={self.upper}")
            if isinstance(self.bins, bool) or not isinstance(self.bins, int) or not 1 <= self.bins <= 10_000:
                raise SchemaError(f"column {self.name!r}: bins must be an integer in 1..10000, got {self.bins!r}")
            if self.fill is not None and not (self.lower <= self.fill <= self.upper):
                raise SchemaError(
                    f"column {self.name!r}: fill must lie within [{self.lower}, {self.upper}], got {self.fill!r}")
        if self.kind == "categorical":
            if len(self.categories) == 0:
                raise SchemaError(f"column {self.name!r}: categorical columns need at least one category")
            if len(set(self.categories)) != len(self.categories):
                raise SchemaError(f"column {self.name!r}: categories must be unique")
            if any(not isinstance(c, str) for c in self.categories):
                raise SchemaError(f"column {self.name!r}: categories must be strings")
            for c in self.categories:
                check_text(c, f"column {self.name!r}: category", allow_newlines=True)
            if self.other is not None and self.other not in self.categories:
                raise SchemaError(
                    f"column {self.name!r}: other={self.other!r} must be one of the declared categories")

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    @property
    def n_cells(self) -> int:
        """Number of public cells (categories or numeric bins) of this column."""
        if self.kind == "categorical":
            return len(self.categories)
        if self.kind == "integer":
            span = int(math.floor(self.upper) - math.ceil(self.lower)) + 1
            if span <= self.bins:
                return max(span, 1)
        return self.bins

    def bin_edges(self) -> np.ndarray:
        """Public bin edges of a numeric column (n_cells + 1 values on [lower, upper])."""
        if self.kind == "integer" and self._one_bin_per_value():
            lo = math.ceil(self.lower)
            return np.arange(lo, lo + self.n_cells + 1, dtype=float) - 0.5
        return np.linspace(self.lower, self.upper, self.n_cells + 1)

    def _one_bin_per_value(self) -> bool:
        return int(math.floor(self.upper) - math.ceil(self.lower)) + 1 <= self.bins

    def to_dict(self) -> dict:
        d = {"name": self.name, "kind": self.kind}
        if self.is_numeric:
            d.update(lower=self.lower, upper=self.upper, bins=self.bins, fill=self.fill)
        if self.kind == "categorical":
            d.update(categories=list(self.categories), other=self.other)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Column":
        if not isinstance(d, dict):
            raise SchemaError(f"each column must be an object, got {type(d).__name__}")
        unknown = set(d) - {"name", "kind", "lower", "upper", "categories", "bins", "fill", "other"}
        if unknown:
            raise SchemaError(f"column {d.get('name')!r}: unknown fields {sorted(unknown)}")
        kw = dict(d)
        if "categories" in kw:
            if not isinstance(kw["categories"], (list, tuple)):
                raise SchemaError(f"column {d.get('name')!r}: categories must be a list")
            kw["categories"] = tuple(kw["categories"])
        for key in ("lower", "upper", "fill"):
            if isinstance(kw.get(key), str):
                raise SchemaError(f"column {d.get('name')!r}: {key} must be a number, got {kw[key]!r}")
        try:
            return cls(**kw)
        except TypeError as exc:
            raise SchemaError(f"column {d.get('name')!r}: {exc}") from None


@dataclass(frozen=True)
class Schema:
    columns: tuple[Column, ...]
    missing_markers: tuple[str, ...] = DEFAULT_MISSING_MARKERS
    draft: bool = False

    def __post_init__(self):
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise SchemaError(f"duplicate column names: {dup}")
        if not self.kept:
            raise SchemaError("the schema keeps no column (all are excluded)")

    # -- views -----------------------------------------------------------------------------------
    @property
    def kept(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind != "excluded")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.kept]

    @property
    def kinds(self) -> set[str]:
        return {c.kind for c in self.kept}

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def cell_sizes(self) -> list[int]:
        return [c.n_cells for c in self.kept]

    # -- (de)serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "version": 1,
            "draft": self.draft,
            "missing_markers": list(self.missing_markers),
            "columns": [c.to_dict() for c in self.columns],
        }

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: Any) -> "Schema":
        if not isinstance(d, dict):
            raise SchemaError("schema must be a JSON object")
        cols = d.get("columns")
        if not isinstance(cols, list) or not cols:
            raise SchemaError("schema needs a non-empty 'columns' list")
        markers = d.get("missing_markers", list(DEFAULT_MISSING_MARKERS))
        if not isinstance(markers, list) or any(not isinstance(m, str) for m in markers):
            raise SchemaError("missing_markers must be a list of strings")
        for m in markers:
            check_text(m, "missing-value marker")
        return cls(columns=tuple(Column.from_dict(c) for c in cols), missing_markers=tuple(markers),
                   draft=bool(d.get("draft", False)))

    @classmethod
    def from_json(cls, text: str) -> "Schema":
        try:
            return cls.from_dict(safejson.loads(text))
        except safejson.JsonLimitError as exc:
            raise SchemaError(f"schema is {'' if str(exc).startswith('not ') else 'refused: '}{exc}") from None

    def confirmed(self) -> "Schema":
        return Schema(columns=self.columns, missing_markers=self.missing_markers, draft=False)

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the confirmed schema (for manifests)."""
        d = self.to_dict()
        d.pop("draft", None)
        return hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    # -- preparing raw data ------------------------------------------------------------------------
    def check_columns(self, header: Sequence[str]) -> None:
        missing = [c.name for c in self.columns if c.name not in header]
        if missing:
            raise SchemaMismatch(f"column(s) missing from the data: {missing}")

    def prepare(self, raw: pd.DataFrame) -> pd.DataFrame:
        """Map raw string cells to the public domain, one record at a time (see module docstring).

        Returns a frame with the kept columns only: floats for numeric columns (clipped, integer
        columns rounded), category strings for categorical ones.
        """
        self.check_columns(list(raw.columns))
        out = {}
        markers = set(self.missing_markers)
        for c in self.kept:
            s = raw[c.name]
            if c.is_numeric:
                txt = s.astype(str).str.strip()
                is_missing = txt.isin(markers) | s.isna()
                num = pd.to_numeric(txt.where(~is_missing), errors="coerce")
                bad = num.isna() & ~is_missing
                if bad.any():
                    example = txt[bad].iloc[0]
                    raise SchemaMismatch(
                        f"column {c.name!r}: {int(bad.sum())} value(s) are not numbers (e.g. {example[:40]!r})")
                num = num.replace([np.inf, -np.inf], np.nan)  # infinities count as missing
                is_missing = num.isna()
                if is_missing.any():
                    if c.fill is None:
                        raise SchemaMismatch(
                            f"column {c.name!r}: {int(is_missing.sum())} missing value(s) and no 'fill' declared")
                    num = num.fillna(c.fill)
                arr = np.clip(num.to_numpy(dtype=float), c.lower, c.upper)
                if c.kind == "integer":
                    arr = np.clip(np.rint(arr), math.ceil(c.lower), math.floor(c.upper))
                out[c.name] = arr
            else:
                txt = s.astype(str).str.strip().where(~s.isna(), "")
                known = txt.isin(c.categories)
                if not known.all():
                    if c.other is None:
                        bad = txt[~known]
                        raise SchemaMismatch(
                            f"column {c.name!r}: {len(bad)} value(s) outside the declared categories "
                            f"(e.g. {bad.iloc[0][:40]!r}) and no 'other' category declared")
                    txt = txt.where(known, c.other)
                out[c.name] = txt.to_numpy(dtype=object)
        return pd.DataFrame(out, index=raw.index)

    # -- unit-cube encoding --------------------------------------------------------------------------
    def to_unit(self, prepared: pd.DataFrame) -> np.ndarray:
        """Numeric columns to [0,1] on the public bounds, categorical columns to codes (as float)."""
        cols = []
        for c in self.kept:
            v = prepared[c.name]
            if c.is_numeric:
                cols.append((v.to_numpy(dtype=float) - c.lower) / (c.upper - c.lower))
            else:
                cols.append(self.category_codes(c, v).astype(float))
        return np.column_stack(cols) if cols else np.empty((len(prepared), 0))

    def from_unit(self, X: np.ndarray) -> pd.DataFrame:
        """Inverse of :meth:`to_unit` (values outside [0,1] are clipped; codes rounded)."""
        X = np.asarray(X, dtype=float)
        out = {}
        for j, c in enumerate(self.kept):
            if c.is_numeric:
                v = c.lower + np.clip(X[:, j], 0.0, 1.0) * (c.upper - c.lower)
                out[c.name] = self._finish_numeric(c, v)
            else:
                codes = np.clip(np.rint(X[:, j]), 0, len(c.categories) - 1).astype(int)
                out[c.name] = np.asarray(c.categories, dtype=object)[codes]
        return pd.DataFrame(out)

    @staticmethod
    def category_codes(c: Column, values) -> np.ndarray:
        lookup = {cat: i for i, cat in enumerate(c.categories)}
        return pd.Series(values).map(lookup).to_numpy(dtype=np.int64)

    # -- discrete (cell) encoding ----------------------------------------------------------------------
    def to_cells(self, prepared: pd.DataFrame) -> np.ndarray:
        """Every kept column as an int64 cell index (category code or public numeric bin)."""
        cols = []
        for c in self.kept:
            v = prepared[c.name]
            if c.is_numeric:
                edges = c.bin_edges()
                idx = np.searchsorted(edges, v.to_numpy(dtype=float), side="right") - 1
                cols.append(np.clip(idx, 0, c.n_cells - 1))
            else:
                cols.append(self.category_codes(c, v))
        return np.column_stack(cols).astype(np.int64)

    def from_cells(self, cells: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Decode cell indices; numeric values drawn uniformly inside their public bin (post-processing)."""
        cells = np.asarray(cells, dtype=np.int64)
        out = {}
        for j, c in enumerate(self.kept):
            idx = np.clip(cells[:, j], 0, c.n_cells - 1)
            if c.kind == "integer":
                # uniform over the integers that to_cells puts in the bin: edges[i] <= k < edges[i+1]
                # (the last bin also holds the upper bound), so decoding never moves a row to another bin
                edges = c.bin_edges()
                first = np.ceil(edges[:-1]).astype(np.int64)
                last = np.ceil(edges[1:]).astype(np.int64) - 1
                last[-1] = math.floor(c.upper)
                first = np.maximum(first, math.ceil(c.lower))
                lo, hi = first[idx], np.maximum(last[idx], first[idx])
                out[c.name] = lo + np.floor(rng.random(len(idx)) * (hi - lo + 1)).astype(np.int64)
            elif c.is_numeric:
                edges = c.bin_edges()
                lo, hi = edges[idx], edges[idx + 1]
                v = np.clip(lo + rng.random(len(idx)) * (hi - lo), c.lower, c.upper)
                out[c.name] = self._finish_numeric(c, v)
            else:
                out[c.name] = np.asarray(c.categories, dtype=object)[idx]
        return pd.DataFrame(out)

    @staticmethod
    def _finish_numeric(c: Column, v: np.ndarray) -> np.ndarray:
        if c.kind == "integer":
            return np.clip(np.rint(v), math.ceil(c.lower), math.floor(c.upper)).astype(np.int64)
        return v


# ------------------------------------------------------------------------------------------------
# Reading tables
# ------------------------------------------------------------------------------------------------

def read_raw_csv(path, *, nrows: int | None = None, chunksize: int | None = None, **kw):
    """Read a CSV with every cell as a string (no pandas type guessing, no NA conversion)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, nrows=nrows,
                       chunksize=chunksize, skipinitialspace=True, **kw)


class TableSource:
    """Private input handed to a mechanism's ``fit``: a public row count and the prepared rows.

    ``frame()`` returns the whole prepared table; ``chunks(size)`` streams it (PrivHP reads only
    through ``chunks`` so the table never has to fit in memory).
    """

    def __init__(self, schema: Schema, *, frame: pd.DataFrame | None = None, path=None,
                 n: int | None = None, read_kw: dict | None = None):
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
                yield self.schema.prepare(self._frame.iloc[start:start + size])
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
            raise SchemaMismatch(f"the file holds {records} records but its public row count is n={self.n} "
                                 f"(a whitespace-only line in a one-column file is not read as a record: "
                                 f"write missing values with a declared missing marker)")


# ------------------------------------------------------------------------------------------------
# Drafting a schema from data (SUGGESTIONS only: the steward must confirm them as public)
# ------------------------------------------------------------------------------------------------

NICE_MANTISSAS = (1, 2, 5)  # round steps: 1, 2, 5, 10, 20, 50, ... times a power of ten


def round_step(span: float) -> float:
    """The largest 1-2-5 number (1, 2, 5, 10, 20, ...) at most half of ``span`` (> 0)."""
    target = span / 2
    exp = math.floor(math.log10(target))
    best = 10.0 ** (exp - 1)
    for e in (exp - 1, exp):
        for m in NICE_MANTISSAS:
            if m * 10.0 ** e <= target * (1 + 1e-12):
                best = max(best, m * 10.0 ** e)
    return best


def round_bounds(lo: float, hi: float, *, integer: bool, bins: int = DEFAULT_BINS) -> tuple[float, float]:
    """Suggested public bounds for data in [lo, hi], rounded OUTWARD to round numbers so that a hurried
    confirmation does not publish the exact extremes (e.g. ages 17-90 -> 0-100).

    Rule: the step is the largest 1-2-5 number at most half the data's range (range 73 -> step 20;
    range 1.2M -> 500k); the lower bound is rounded down and the upper bound up to a multiple of it.
    Each end moves by less than one step, so the bounds span less than twice the data's range. Integer columns holding at most
    ``bins`` distinct values (codes of a scale such as 1-5, one bin per value) keep their exact bounds:
    widening them would only add empty cells; review them like every suggestion. Still a SUGGESTION
    computed from the data: the steward confirms it as public knowledge or replaces it.
    """
    if hi <= lo:
        return (float(math.floor(lo)) - 1.0, float(math.ceil(hi)) + 1.0) if integer else (lo - 1.0, hi + 1.0)
    if integer and math.floor(hi) - math.ceil(lo) + 1 <= bins:
        return float(math.floor(lo)), float(math.ceil(hi))
    step = round_step(hi - lo)
    digits = max(0, -math.floor(math.log10(step))) + 1  # clean decimals: 0.30000000000000004 -> 0.3
    lower = round(math.floor(lo / step) * step, digits)
    upper = round(math.ceil(hi / step) * step, digits)
    lower = lower if lower <= lo else round(lower - step, digits)  # float rounding never cuts the data off
    upper = upper if upper >= hi else round(upper + step, digits)
    if integer:
        lower, upper = float(math.floor(lower)), float(math.ceil(upper))
    return float(lower), float(upper)


def draft_schema(raw: pd.DataFrame, *, missing_markers: Sequence[str] = DEFAULT_MISSING_MARKERS,
                 max_categories: int = MAX_CATEGORIES) -> Schema:
    """Suggest a schema from raw string data. The result has ``draft=True``: every bound and
    category list in it was computed from the data and is NOT public until the steward confirms it.
    """
    markers = set(missing_markers)
    cols = []
    for name in raw.columns:
        s = raw[name].astype(str).str.strip()
        present = s[~s.isin(markers)]
        has_missing = len(present) < len(s)
        num = pd.to_numeric(present, errors="coerce")
        finite = num[np.isfinite(num)]
        if len(present) and num.notna().all() and len(finite) == len(num) and present.nunique() > 2:
            integer = bool(np.all(finite == np.round(finite)))
            lo, hi = round_bounds(*np.clip([float(finite.min()), float(finite.max())], -MAX_ABS_BOUND / 10,
                                           MAX_ABS_BOUND / 10), integer=integer)  # within the bound limit
            kind = "integer" if integer else "continuous"
            cols.append(Column(name=str(name), kind=kind, lower=lo, upper=hi,
                               fill=lo if has_missing else None))
            continue
        levels = sorted(present.unique().tolist())
        if not levels or len(levels) > max_categories or any(_CONTROL_IN_CELLS.search(v) for v in levels):
            cols.append(Column(name=str(name), kind="excluded"))
            continue
        other = None
        if has_missing:
            levels.append(MISSING_CATEGORY)
            other = MISSING_CATEGORY
        cols.append(Column(name=str(name), kind="categorical", categories=tuple(levels), other=other))
    if not any(c.kind != "excluded" for c in cols):
        raise SchemaError("no usable column found: every column was empty or had too many distinct values")
    return Schema(columns=tuple(cols), missing_markers=tuple(missing_markers), draft=True)
