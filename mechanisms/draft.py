"""What the upload suggests: a draft schema computed from the raw data (SUGGESTIONS only).

:func:`draft_schema` suggests column kinds, bounds, bins, special values, scales and category lists
from the data; its output is marked ``draft`` and ``suggested_from_data`` and must be confirmed by the
steward before any mechanism may use it (:mod:`mechanisms.schema` holds the column model it fills in).
:func:`rare_categories` lists the labels the schema page warns about before the steward confirms them.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np
import pandas as pd

from . import dates, derive
from .accounting import zcdp_rho
from .schema import (
    CONTROL_IN_CELLS,
    DEFAULT_BINS,
    DEFAULT_MISSING_MARKERS,
    MAX_ABS_BOUND,
    MISSING_CATEGORY,
    Column,
    Schema,
    SchemaError,
    ordered_labels,
)

MAX_CATEGORIES = 1000  # a categorical column with more levels than this is suggested as excluded
MAX_VALUE_CELLS = 200  # drafts give integer columns with a range up to this many values one cell per value
# ... when the range is also at most what a reference release resolves (below). Finer cells cost the column's
# relations: each measured pair spreads its noise over every cell, so a value's relation to the label rests on
# a cell of tens of rows (credit_adult, 15,000 x 39, AIM for training models: one cell per value of age (74)
# and hours (100) gave a label gap of 0.055, their 20 bins with the point masses exact 0.031, the same 1-way TVD;
# docs/benchmarks/relations.md). Wider columns get bins, their point masses exact as special values.
VALUE_CELLS_OVER_RESOLVABLE = 1
DRAFT_BINS = 20  # drafts' bins for continuous and wide integer columns (full-resolution exports need them)
# ... and at most the cells a reference release can resolve: n / (3 sigma) for the 1-way noise of MST at
# epsilon 1, delta 1e-6 on a table of this width (below it, MST merges cells anyway and the finer ones only
# spread noise: docs/benchmarks/fidelity.md). 32,561 rows x 15 columns: 214 cells; 4,521 x 17: 28.
REFERENCE_EPSILON, REFERENCE_DELTA = 1.0, 1e-6
# Draft heuristics (suggestions only). Their reasons:
CODE_NAME = re.compile(r"(^|[^a-z])(code|codes|recode|cd|id|zip|fips|naics|sic|icd|soc)([^a-z]|$)", re.IGNORECASE)
SPECIAL_MIN_SHARE = 0.005  # a value holding at least 0.5% (and RARE_K rows) of a wide numeric column is a point mass
MAX_DRAFT_SPECIAL = 9  # ... the commonest ones (payments heap on 1,000, 1,500, 2,000, ...), a top code besides
SPECIAL_OVER_MEDIAN = 3  # ... and at least 3x the median count of a value (uniform noise is no point mass)
RARE_K = 10  # categories (and special values) seen in fewer rows than this are flagged or not suggested
LOG_MEDIAN_SHARE = 0.1  # median within 10% of the range from the log pivot (0 or the lower bound): log bins
MAX_DRAFT_DECIMALS = 6
# A long tail of a few rows: the bound is suggested where TAIL_ROWS rows lie beyond it (rounded outward to
# TAIL_DIGITS significant digits) when that cuts at least TAIL_CUT of the range. The rows beyond are written
# at the bound (a top code): a bound at the maximum publishes one person's value, and its empty cells take
# the noise of every release (a money column's top bins at 1.7M drew 53 rows where the data holds 2).
TAIL_ROWS = RARE_K
TAIL_CUT = 0.25
TAIL_DIGITS = 2
STEP_EXCEPTIONS = 0.001  # share of values that may break a suggested step (rounded to it in the output)


def draft_schema(
    raw: pd.DataFrame, *, missing_markers: Sequence[str] = DEFAULT_MISSING_MARKERS, max_categories: int = MAX_CATEGORIES
) -> Schema:
    """Suggest a schema from raw string data. The result has ``draft=True``: every bound, category
    list, special value, scale and number format in it was computed from the data and is NOT public
    until the steward confirms it.

    Numeric columns are suggested at full resolution: integers with a range of at most
    ``MAX_VALUE_CELLS`` values (and what a reference release resolves, :func:`resolvable_cells`) get one
    cell per value; integer columns named like codes (``industry
    code``, ``zip``) become categorical with the codes seen; other numeric columns get ``DRAFT_BINS``
    bins, their point masses as special values, log-spaced bins when skewed, and the number of decimals
    the upload wrote. The missing-value marker written back is the one the upload used most.
    """
    markers = set(missing_markers)
    cols = []
    texts = {name: raw[name].astype(str).str.strip() for name in raw.columns}
    labels_too = marker_labels(texts, markers)
    seen_markers: dict[str, int] = {}
    for name in raw.columns:
        s = texts[name]
        is_marker = s.isin(markers)
        num = pd.to_numeric(s[~is_marker], errors="coerce")
        if labels_too and num.isna().any():  # a text column: the file's other markers are labels here
            is_marker &= ~s.isin(labels_too)
        for m, k in s[is_marker].value_counts().items():
            seen_markers[m] = seen_markers.get(m, 0) + int(k)
        present = s[~is_marker]
        has_missing = len(present) < len(s)
        num = pd.to_numeric(present, errors="coerce")
        finite = num[np.isfinite(num)]
        if len(present) and num.notna().all() and len(finite) == len(num) and present.nunique() > 2:
            integer = bool(np.all(finite == np.round(finite)))
            if not (integer and CODE_NAME.search(str(name)) and finite.nunique() <= max_categories):
                cols.append(
                    _draft_numeric(
                        str(name),
                        present,
                        finite,
                        integer=integer,
                        has_missing=has_missing,
                        max_cells=resolvable_cells(len(raw), len(raw.columns)),
                    )
                )
                continue
            present = finite.astype(np.int64).astype(str)  # codes: categories in numeric order below
        found = dates.detect(present) if num.isna().any() else None
        if found:
            cells = resolvable_cells(len(raw), len(raw.columns))
            cols.append(_draft_date(str(name), present, *found, has_missing=has_missing, max_cells=cells))
            continue
        levels = ordered_labels(present.unique().tolist())
        if not levels or len(levels) > max_categories or any(CONTROL_IN_CELLS.search(v) for v in levels):
            cols.append(Column(name=str(name), kind="excluded"))
            continue
        other = None
        if has_missing:
            levels.append(MISSING_CATEGORY)
            other = MISSING_CATEGORY
        cols.append(Column(name=str(name), kind="categorical", categories=tuple(levels), other=other))
    if not any(c.kind != "excluded" for c in cols):
        raise SchemaError("no usable column found: every column was empty or had too many distinct values")
    output = max(seen_markers, key=seen_markers.get) if seen_markers else None
    draft = Schema(
        columns=tuple(cols),
        missing_markers=tuple(missing_markers),
        draft=True,
        missing_output=output if output != (missing_markers[0] if missing_markers else "") else None,
    )
    return derive.with_suggestions(draft, raw)  # identities that hold in every row, to confirm


def marker_labels(texts: dict[str, pd.Series], markers: set[str]) -> set[str]:
    """The missing markers suggested as labels of text columns: every non-empty marker the file uses but
    the one it uses most. A file spells "missing" one way; a second spelling among a text column's values
    (a census extract with "?" for missing and "NA" as a code of hispanic origin, 76 rows) is a category,
    kept verbatim. Empty cells are always missing; numeric columns read every marker as missing. A
    suggestion: the steward removes the label from the column's categories to read it as missing."""
    used: dict[str, int] = {}
    for s in texts.values():
        for m, k in s[s.isin(markers - {""})].value_counts().items():
            used[m] = used.get(m, 0) + int(k)
    if len(used) < 2:
        return set()
    top = max(sorted(used), key=used.get)
    return set(used) - {top}


def rare_categories(raw: pd.DataFrame, schema: Schema, k: int = RARE_K) -> dict[str, list[str]]:
    """Per categorical column of a draft, the categories seen in fewer than ``k`` rows of ``raw``.
    Publishing such a label in the schema can reveal that a particular person is in the data (a
    unique occupation, a small country); the schema page warns before the steward confirms it."""
    out = {}
    for c in schema.kept:
        if c.kind != "categorical" or c.name not in raw:
            continue
        counts = raw[c.name].astype(str).str.strip().value_counts()
        rare = [cat for cat in c.categories if cat != MISSING_CATEGORY and counts.get(cat, 0) < k]
        if rare:
            out[c.name] = rare
    return out


def _draft_date(
    name: str, present: pd.Series, fmt: str, granularity: str, *, has_missing: bool, max_cells: int
) -> Column:
    """A date column as the integer it is: one cell per unit (day) when the range fits what the table
    resolves (the integers' rule: at most ``MAX_VALUE_CELLS`` and :func:`resolvable_cells`), else as many
    equal cells as it resolves (``DRAFT_BINS`` to ``MAX_VALUE_CELLS``)."""
    units = dates.parse(present, fmt, granularity)
    lo, hi = dates.draft_bounds(units, granularity)
    cap = min(MAX_VALUE_CELLS, max_cells)
    bins = hi - lo + 1 if hi - lo + 1 <= cap else max(DRAFT_BINS, cap)
    return Column(
        name=name,
        kind="integer",
        lower=lo,
        upper=hi,
        bins=bins,
        fill=lo if has_missing else None,
        date_format=fmt,
        granularity=granularity,
    )


def resolvable_cells(rows: int, columns: int) -> int:
    """Cells per numeric column a reference release resolves (see REFERENCE_EPSILON): at least DEFAULT_BINS."""
    rho = zcdp_rho(REFERENCE_EPSILON, REFERENCE_DELTA)
    sigma = math.sqrt(max(columns, 1) / (rho / 3))  # MST's 1-way noise under replace-one (mechanisms/synthesizers/mst/)
    return max(DEFAULT_BINS, int(rows // (3 * sigma)))


def _draft_numeric(
    name: str, present: pd.Series, finite: pd.Series, *, integer: bool, has_missing: bool, max_cells: int
) -> Column:
    lo, hi = suggested_bounds(name, finite, integer=integer)
    if natural_domain(name, lo, hi, integer=integer) is None:
        lo, hi = tail_bounds(finite, lo, hi, integer=integer)
    kind = "integer" if integer else "continuous"
    fill = lo if has_missing else None
    span = int(hi - lo) + 1 if integer else 0
    value_cells = min(MAX_VALUE_CELLS, VALUE_CELLS_OVER_RESOLVABLE * max_cells)
    if integer and span <= value_cells:
        return Column(name=name, kind=kind, lower=lo, upper=hi, bins=max(DEFAULT_BINS, span), fill=fill)
    counts = finite.value_counts()
    least = max(SPECIAL_MIN_SHARE * len(finite), RARE_K, SPECIAL_OVER_MEDIAN * float(counts.median()))
    special = tuple(float(v) for v, k in counts.head(MAX_DRAFT_SPECIAL).items() if k >= least and lo <= v <= hi)
    top = top_code(finite, counts)
    special += (top,) if top is not None and top not in special else ()
    rest = finite[~finite.isin(special)]
    pivot = 0.0 if lo < 0 < hi else lo
    skewed = len(rest) > 0 and abs(float(rest.median()) - pivot) / (hi - lo) < LOG_MEDIAN_SHARE
    step = _draft_step(finite, lo) if integer else None
    if step is not None and (hi - lo) / step + 1 <= value_cells:
        return Column(name=name, kind=kind, lower=lo, upper=hi, bins=int((hi - lo) / step) + 1, fill=fill, step=step)
    decimals = None
    if not integer:
        frac = present.str.extract(r"^[-+]?\d*\.(\d+)$", expand=False).dropna()
        decimals = min(int(frac.str.len().max()), MAX_DRAFT_DECIMALS) if len(frac) else 0
        if present.str.contains("[eE]").any():
            decimals = None  # scientific notation: keep every digit
    return Column(
        name=name,
        kind=kind,
        lower=lo,
        upper=hi,
        bins=min(DRAFT_BINS, max_cells),
        fill=fill,
        special=tuple(int(v) if integer else v for v in special),
        scale="log" if skewed else "linear",
        decimals=decimals,
        step=step,
    )


# Natural domains (public knowledge a statistician would name): a column whose name says what it counts and
# whose values all lie in the domain is suggested the domain. Names are matched lower-case, with every run of
# characters other than letters and digits read as a space.
NATURAL_DOMAINS = (
    (re.compile(r"\bhours?\b.*\b(week|wk)\b|\bhrs? per (week|wk)\b"), 0, 99, True, "hours per week"),
    (re.compile(r"\bweeks?\b"), 0, 52, True, "weeks in a year"),
    (re.compile(r"\bmonth\b"), 1, 12, True, "month of the year"),
    (re.compile(r"\b(weekday|day of (the )?week)\b"), 1, 7, True, "day of the week"),
    (re.compile(r"\bday\b"), 1, 31, True, "day of the month"),
    (re.compile(r"\bhour\b"), 0, 23, True, "hour of the day"),
    (re.compile(r"\b(percent|percentage|pct)\b|%"), 0, 100, False, "a percentage"),
    (re.compile(r"\b(probability|proportion|fraction)\b"), 0, 1, False, "a proportion"),
)
NATURAL_MIN_SPAN = 0.5  # ... and whose values span at least half of it (a 1-4 rate named "pct" is no percentage)
TOP_CODE_GAP = 0.25  # a point mass at the maximum this share of the range above the next value: a top code


def natural_domain(name: str, lo: float, hi: float, *, integer: bool) -> tuple[float, float, str] | None:
    """The natural domain (lower, upper, what it is) of a column named ``name`` whose values lie in
    [lo, hi], or None: weeks worked 0-52, hours per week 0-99, month 1-12, a percentage 0-100, ... when
    the values span at least ``NATURAL_MIN_SPAN`` of it (a domain for integers also needs integer values;
    hours per week above 99 get 0-168, the hours in a week; a zero-based weekday 0-6). Public knowledge,
    suggested for the steward to confirm."""
    text = re.sub(r"[^a-z0-9%]+", " ", name.lower())
    for pattern, low, high, whole, what in NATURAL_DOMAINS:
        if not pattern.search(text) or (whole and not integer):
            continue
        if what == "hours per week" and hi > high:
            high = 168
        if what == "day of the week" and lo == 0:
            low, high = 0, 6
        if low <= lo and hi <= high and hi - lo >= NATURAL_MIN_SPAN * (high - low):
            return float(low), float(high), what
    return None


def suggested_bounds(name: str, finite: pd.Series, *, integer: bool) -> tuple[float, float]:
    """Suggested bounds of a numeric column: its natural domain when the name and values make it obvious
    (:func:`natural_domain`), else the data's minimum and maximum (a top code at the maximum stays the upper
    bound, so no value above what the data holds is suggested). A SUGGESTION computed from the data: the
    steward confirms it as public knowledge or replaces it."""
    lo, hi = np.clip([float(finite.min()), float(finite.max())], -MAX_ABS_BOUND / 10, MAX_ABS_BOUND / 10)
    natural = natural_domain(name, lo, hi, integer=integer)
    if natural is not None:
        return natural[0], natural[1]
    if integer:
        return float(math.floor(lo)), float(math.ceil(hi))
    return float(lo), float(hi)


def tail_bounds(finite: pd.Series, lo: float, hi: float, *, integer: bool) -> tuple[float, float]:
    """Bounds ``lo``, ``hi`` (the data's extremes) brought in over a long tail of a few rows: where
    ``TAIL_ROWS`` rows lie beyond the TAIL_ROWS-th most extreme value, rounded outward to ``TAIL_DIGITS``
    significant digits, when that cuts at least ``TAIL_CUT`` of the range (payments up to 1,684,259 with
    the tenth largest at 384,986: 390,000). A top code at the maximum (:func:`top_code`) stays the bound.
    The rows beyond are written at the bound, as a census top-codes them. A SUGGESTION from the data."""
    values = np.sort(finite.to_numpy(dtype=float))
    if len(values) < 20 * TAIL_ROWS:
        return lo, hi
    new_hi = min(_round_out(values[-TAIL_ROWS], up=True), hi)
    new_lo = max(_round_out(values[TAIL_ROWS - 1], up=False), lo)
    if top_code(finite) is not None or hi - new_hi < TAIL_CUT * (new_hi - lo):
        new_hi = hi
    if lo - new_lo > -TAIL_CUT * (hi - new_lo):
        new_lo = lo
    if integer:
        new_lo, new_hi = float(math.floor(new_lo)), float(math.ceil(new_hi))
    return (new_lo, new_hi) if new_hi > new_lo else (lo, hi)


def _round_out(v: float, *, up: bool) -> float:
    """``v`` rounded away from the bulk (up for an upper bound) to ``TAIL_DIGITS`` significant digits."""
    if v == 0:
        return 0.0
    unit = 10.0 ** (math.floor(math.log10(abs(v))) - TAIL_DIGITS + 1)
    return float((math.ceil if up else math.floor)(v / unit) * unit)


def top_code(finite: pd.Series, counts: pd.Series | None = None) -> float | None:
    """The maximum as a top code to suggest as a special value, or None: a point mass (at least ``RARE_K``
    rows and ``SPECIAL_OVER_MEDIAN`` times the median count of a value) that is written as nines (99, 999,
    99999) or lies ``TOP_CODE_GAP`` of the range above the next value (capital gains: 99999 in 48 rows,
    the next value 41,310)."""
    counts = finite.value_counts() if counts is None else counts
    top = float(finite.max())
    held = int(counts.get(top, 0))
    if held < max(RARE_K, SPECIAL_OVER_MEDIAN * float(counts.median())) or len(counts) < 3:
        return None
    below = finite[finite < top]
    lo, nxt = float(finite.min()), float(below.max())
    nines = top >= 9 and float(top).is_integer() and set(str(int(top))) == {"9"}
    return top if nines or top - nxt >= TOP_CODE_GAP * (top - lo) else None


def _draft_step(finite: pd.Series, lower: float) -> float | None:
    """The largest power of ten (10 or more) that the values (from the lower bound) are multiples of, all
    but STEP_EXCEPTIONS of them (a stray entry such as 327,680 among credit limits in 10,000s)."""
    offsets = (finite - lower).abs()
    step = None
    for e in range(1, 10):
        if np.mean(np.mod(offsets, 10**e) != 0) > STEP_EXCEPTIONS:
            break
        step = float(10**e)
    return step
