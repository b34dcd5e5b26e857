"""Public schema: what the steward declares public about a table, and the shared encodings.

A :class:`Schema` is PUBLIC metadata confirmed by the data steward: column kinds, numeric bounds,
category lists, numeric bins, and how missing or unknown values are mapped. Mechanisms may use only
these facts about the domain, never bounds or categories computed from the data.

Every record is mapped to exactly one prepared record by a per-record transformation
(:meth:`Schema.prepare`): numbers are clipped to the bounds, missing numbers become the declared
``fill`` value, missing categories become ``MISSING_CATEGORY`` when the column declares it (a missing
marker that is itself a declared category stays that category), unknown (and otherwise missing)
categories become the declared ``other`` category. Rows are never
dropped, so replace-one neighbouring inputs stay replace-one neighbours with the same public row
count n after preparation. (Dropping rows would make n data-dependent; it is deliberately not
offered.)

Encodings shared by all mechanisms:

* :meth:`Schema.to_unit` / :meth:`Schema.from_unit`: numeric columns scaled to [0, 1] on the public
  bounds, categorical columns as integer codes 0..K-1.
* :meth:`Schema.to_cells` / :meth:`Schema.from_cells`: every kept column as a discrete index: the
  category code, or the public cell of a numeric column. A numeric column's cells are its ``bins``
  bins on the bounds (equal-width, or log-spaced with ``scale="log"`` for skewed money and count
  columns; integer columns whose range fits in ``bins`` get one cell per value) followed by one cell
  per declared **special value** (0, a top-code, a sentinel), which is written back exactly. Decoding
  draws inside a bin from a stated public shape: uniform on the column's scale (log-uniform for log
  bins), integers uniform over the bin's integers that are not special values.

:mod:`mechanisms.draft` SUGGESTS a schema from data, marked ``draft``: the steward confirms it first.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from . import dates
from . import rules as rules_mod
from . import safejson
from .accounting import short_repr

KINDS = ("continuous", "integer", "categorical", "excluded")
SCALES = ("linear", "log")
NUMERIC_KINDS = ("continuous", "integer")
DEFAULT_MISSING_MARKERS = ("", "?", "NA")
MAX_ABS_BOUND = 1e15  # numeric bounds: beyond this, float arithmetic on (upper - lower) loses meaning
DEFAULT_BINS = 10
MAX_SPECIAL = 10  # special values per numeric column
MAX_DECIMALS = 12
# Log-spaced bins (Column.unit_transform): the smallest cells are about 1/LOG_SPAN_RATIO of the range wide
# and grow geometrically (public: only the bounds are used).
LOG_SPAN_RATIO = 1000.0
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
    bad = (CONTROL_IN_CELLS if allow_newlines else _CONTROL).search(value)
    if bad:
        raise SchemaError(
            f"{what} {value[:40]!r} contains the control character {bad.group()!r} at position "
            f"{bad.start()}: NUL and control characters are not allowed"
        )
    return value


_CONTROL = re.compile("[\x00-\x1f\x7f]")
CONTROL_IN_CELLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_NAME_CHARS = 200


def check_column_name(name: str) -> str:
    """A column name people can read as it is: no control characters, no invisible format characters
    (bidi overrides such as U+202E, zero-width spaces and joiners), at most 200 characters."""
    check_text(name, "column name")
    hidden = next((c for c in name if unicodedata.category(c) == "Cf"), None)
    if hidden is not None:
        raise SchemaError(
            f"column name {name[:40]!r} contains the invisible character U+{ord(hidden):04X} "
            f"({unicodedata.name(hidden, 'format character')}): rename the column"
        )
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


def _fmt(x: float) -> str:
    """Short numeric labels: 15000 -> 15k, 2500000 -> 2.5M, 0.125 -> 0.125."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.4g}{suffix}"
    return f"{x:.4g}"


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
    special: tuple[float, ...] = ()  # numeric: values modelled as cells of their own, written back exactly
    scale: str = "linear"  # numeric: "linear" (equal-width bins) or "log" (log-spaced bins)
    decimals: int | None = None  # continuous: digits after the point in the exported file (None: all)
    step: float | None = None  # numeric: values are multiples of this from the lower bound (amounts in 10,000s)
    # Dates (mechanisms.dates): an integer count of `granularity` units since 1970, written with `date_format`
    date_format: str | None = None
    granularity: str | None = None
    # Why a date format loaded from a stored, confirmed schema fails the round trip (Schema.from_stored); never
    # written to JSON: confirming the schema again refuses it until the steward fixes the format
    date_problem: str | None = field(default=None, compare=False, repr=False)

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
                    raise SchemaError(
                        f"column {self.name!r}: {attr} must lie within +-{MAX_ABS_BOUND:.0e}, "
                        f"got {attr}={short_repr(v)}"
                    )
            if not self.upper > self.lower:
                raise SchemaError(
                    f"column {self.name!r}: upper must exceed lower, got lower={self.lower}, upper={self.upper}"
                )
            if isinstance(self.bins, bool) or not isinstance(self.bins, int) or not 1 <= self.bins <= 10_000:
                raise SchemaError(f"column {self.name!r}: bins must be an integer in 1..10000, got {self.bins!r}")
            if self.fill is not None and not (self.lower <= self.fill <= self.upper):
                raise SchemaError(
                    f"column {self.name!r}: fill must lie within [{self.lower}, {self.upper}], got {self.fill!r}"
                )
            self._check_numeric_model()
            self._check_date()
        elif self.date_format is not None or self.granularity is not None:
            raise SchemaError(f"column {self.name!r}: a date format and granularity are for date columns")
        elif self.special or self.scale != "linear" or self.decimals is not None or self.step is not None:
            raise SchemaError(f"column {self.name!r}: special values, scale and decimals are for numeric columns")
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
                raise SchemaError(f"column {self.name!r}: other={self.other!r} must be one of the declared categories")

    def _check_numeric_model(self) -> None:
        name = self.name
        if self.scale not in SCALES:
            raise SchemaError(f"column {name!r}: scale must be one of {SCALES}, got {self.scale!r}")
        if self.decimals is not None and (
            isinstance(self.decimals, bool)
            or not isinstance(self.decimals, int)
            or not 0 <= self.decimals <= MAX_DECIMALS
        ):
            raise SchemaError(
                f"column {name!r}: decimals must be an integer in 0..{MAX_DECIMALS}, got {self.decimals!r}"
            )
        if self.decimals is not None and self.kind == "integer":
            raise SchemaError(f"column {name!r}: decimals are for continuous columns (integers have none)")
        if self.step is not None:
            if (
                isinstance(self.step, bool)
                or not isinstance(self.step, (int, float))
                or not self.step > 0
                or not math.isfinite(self.step)
                or (self.upper - self.lower) / self.step > 1e9
            ):
                raise SchemaError(
                    f"column {name!r}: step must be a positive number at most a billionth of the "
                    f"range, got {self.step!r}"
                )
            if self.kind == "integer" and self.step != math.floor(self.step):
                raise SchemaError(
                    f"column {name!r}: the step of an integer column must be an integer, got {self.step!r}"
                )
        if len(self.special) > MAX_SPECIAL:
            raise SchemaError(f"column {name!r}: at most {MAX_SPECIAL} special values, got {len(self.special)}")
        for v in self.special:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SchemaError(f"column {name!r}: special values must be finite numbers, got {v!r}")
            if not self.lower <= v <= self.upper:
                raise SchemaError(f"column {name!r}: special value {v!r} lies outside [{self.lower}, {self.upper}]")
            if self.kind == "integer" and v != math.floor(v):
                raise SchemaError(f"column {name!r}: special values of an integer column must be integers, got {v!r}")
        if len(set(self.special)) != len(self.special):
            raise SchemaError(f"column {name!r}: special values must be unique, got {list(self.special)}")

    def _check_date(self) -> None:
        if self.date_format is None and self.granularity is None:
            return
        if self.kind != "integer" or self.date_format is None or self.granularity is None:
            raise SchemaError(f"column {self.name!r}: a date column needs both a format and a granularity")
        try:
            dates.check_granularity(self.granularity)
            if self.date_problem is None:
                dates.check_format(self.date_format, self.granularity, self.lower, self.upper)
        except dates.DateError as exc:
            raise SchemaError(f"column {self.name!r}: {exc}") from None

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    @property
    def is_date(self) -> bool:
        return self.date_format is not None

    def parse_numbers(self, text: pd.Series) -> pd.Series:
        """A numeric column's (stripped, non-missing) strings as numbers: NaN where one does not parse."""
        if self.is_date:
            return pd.Series(dates.parse(text, self.date_format, self.granularity), index=text.index)
        return pd.to_numeric(text, errors="coerce")

    def format_numbers(self, values: np.ndarray) -> np.ndarray:
        """Numbers as the exported file writes them (dates in the upload's format)."""
        if self.is_date:
            return dates.format_units(values, self.date_format, self.granularity)
        return Schema._finish_numeric(self, np.asarray(values))

    @property
    def n_cells(self) -> int:
        """Number of public cells of this column: categories, or numeric bins plus special values."""
        if self.kind == "categorical":
            return len(self.categories)
        return self.n_bins + len(self.special)

    @property
    def n_bins(self) -> int:
        """Number of regular numeric bins (the special values' cells come after them)."""
        return len(self.bin_edges()) - 1

    def bin_edges(self) -> np.ndarray:
        """Public edges of the regular bins of a numeric column (n_bins + 1 values on [lower, upper])."""
        if self.step is not None and self._steps() <= self.bins:  # one cell per multiple of the step
            return self.lower + (np.arange(self._steps() + 1, dtype=float) - 0.5) * self.step
        if self.kind == "integer" and self._one_bin_per_value():
            lo = math.ceil(self.lower)
            span = int(math.floor(self.upper) - lo) + 1
            return np.arange(lo, lo + max(span, 1) + 1, dtype=float) - 0.5
        if self.scale == "log":
            return self._log_edges()
        return np.linspace(self.lower, self.upper, self.bins + 1)

    def _log_edges(self) -> np.ndarray:
        """Edges evenly spaced on the log scale (see :meth:`unit_transform`). For integer columns the edges
        sit between integers and bins holding no integer are dropped, so every bin decodes to values of
        its own."""
        edges = self.unit_inverse(np.linspace(0.0, 1.0, self.bins + 1))
        edges[0], edges[-1] = self.lower, self.upper
        if self.kind == "integer":
            lo, hi = math.ceil(self.lower), math.floor(self.upper)
            inner = np.ceil(edges[1:-1] - 1e-9)
            edges = np.unique(np.concatenate([[lo], np.clip(inner, lo, hi + 1), [hi + 1]])) - 0.5
        return edges

    def _steps(self) -> int:
        return int(math.floor((self.upper - self.lower) / self.step + 1e-9)) + 1

    def _one_bin_per_value(self) -> bool:
        return int(math.floor(self.upper) - math.ceil(self.lower)) + 1 <= self.bins

    def unit_transform(self, v: np.ndarray) -> np.ndarray:
        """Numeric values to [0, 1] on the public bounds. ``scale="log"`` goes through the signed log
        T(x) = sign(x - p) log1p(|x - p| / c), with the pivot p = 0 when the bounds straddle 0 (else the
        lower bound) and c = (upper - lower) / LOG_SPAN_RATIO: cells grow geometrically away from p."""
        if self.scale != "log":
            return (v - self.lower) / (self.upper - self.lower)
        t_lo, t_hi = self._signed_log(np.float64(self.lower)), self._signed_log(np.float64(self.upper))
        return (self._signed_log(np.asarray(v, dtype=float)) - t_lo) / (t_hi - t_lo)

    def unit_inverse(self, u: np.ndarray) -> np.ndarray:
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        if self.scale != "log":
            return self.lower + u * (self.upper - self.lower)
        p, c = self._log_pivot()
        t_lo, t_hi = self._signed_log(np.float64(self.lower)), self._signed_log(np.float64(self.upper))
        t = t_lo + u * (t_hi - t_lo)
        return np.clip(p + np.sign(t) * c * np.expm1(np.abs(t)), self.lower, self.upper)

    def _log_pivot(self) -> tuple[float, float]:
        p = 0.0 if self.lower < 0 < self.upper else self.lower
        return p, (self.upper - self.lower) / LOG_SPAN_RATIO

    def _signed_log(self, v: np.ndarray) -> np.ndarray:
        p, c = self._log_pivot()
        return np.sign(v - p) * np.log1p(np.abs(v - p) / c)

    def cell_labels(self) -> list[str]:
        """A short label per cell (for charts and reports)."""
        if self.kind == "categorical":
            return list(self.categories)
        edges = self.bin_edges()
        if self.step is not None and self._steps() <= self.bins:
            labels = [_fmt(self.lower + i * self.step) for i in range(len(edges) - 1)]
        elif self.kind == "integer" and self._one_bin_per_value():
            labels = [str(int(round(e + 0.5))) for e in edges[:-1]]
        else:
            labels = [f"[{_fmt(a)}, {_fmt(b)})" for a, b in zip(edges[:-1], edges[1:])]
        return labels + [f"={_fmt(v)}" for v in self.special]

    def to_dict(self) -> dict:
        if self.is_date:
            return self._date_dict()
        d = {"name": self.name, "kind": self.kind}
        if self.is_numeric:
            d.update(lower=self.lower, upper=self.upper, bins=self.bins, fill=self.fill)
            if self.special:  # written only when used, so the fingerprints of existing schemas stay put
                d["special"] = list(self.special)
            if self.scale != "linear":
                d["scale"] = self.scale
            if self.decimals is not None:
                d["decimals"] = self.decimals
            if self.step is not None:
                d["step"] = self.step
        if self.kind == "categorical":
            d.update(categories=list(self.categories), other=self.other)
        return d

    def _date_dict(self) -> dict:
        iso = lambda v: dates.to_iso(v, self.granularity)  # noqa: E731
        d = {
            "name": self.name,
            "kind": "date",
            "lower": iso(self.lower),
            "upper": iso(self.upper),
            "granularity": self.granularity,
            "format": self.date_format,
            "bins": self.bins,
            "fill": iso(self.fill) if self.fill is not None else None,
        }
        if self.special:
            d["special"] = [iso(v) for v in self.special]
        return d

    @classmethod
    def _from_date_dict(cls, d: dict, stored: bool = False) -> "Column":
        """A date column of the schema JSON (ISO bounds) as the integer column it is inside; ``stored``: a format
        that fails the round trip is kept with the reason in ``date_problem`` (Schema.from_stored)."""
        name, granularity = d.get("name"), d.get("granularity", "day")
        unknown = set(d) - {"name", "kind", "lower", "upper", "granularity", "format", "bins", "fill", "special"}
        if unknown:
            raise SchemaError(f"column {name!r}: unknown fields {sorted(unknown)}")
        try:
            units = lambda v: dates.to_units(v, granularity)  # noqa: E731
            special = d.get("special") or []
            if not isinstance(special, list):
                raise SchemaError(f"column {name!r}: special must be a list of dates")
            lower, upper = (units(d[k]) if d.get(k) is not None else None for k in ("lower", "upper"))
            fmt = d.get("format", "%Y-%m-%d")
            problem = None
            if stored:
                try:
                    dates.check_format(fmt, granularity, lower, upper)
                except dates.DateError as exc:
                    problem = str(exc)
            return cls(
                name=name,
                kind="integer",
                lower=lower,
                upper=upper,
                bins=d.get("bins", DEFAULT_BINS),
                fill=units(d["fill"]) if d.get("fill") is not None else None,
                special=tuple(units(v) for v in special),
                date_format=fmt,
                granularity=granularity,
                date_problem=problem,
            )
        except dates.DateError as exc:
            raise SchemaError(f"column {name!r}: {exc}") from None

    @classmethod
    def from_dict(cls, d: dict, stored: bool = False) -> "Column":
        if not isinstance(d, dict):
            raise SchemaError(f"each column must be an object, got {type(d).__name__}")
        if d.get("kind") == "date":
            return cls._from_date_dict(d, stored=stored)
        unknown = set(d) - {
            "name",
            "kind",
            "lower",
            "upper",
            "categories",
            "bins",
            "fill",
            "other",
            "special",
            "scale",
            "decimals",
            "step",
        }
        if unknown:
            raise SchemaError(f"column {d.get('name')!r}: unknown fields {sorted(unknown)}")
        kw = dict(d)
        if "categories" in kw:
            if not isinstance(kw["categories"], (list, tuple)):
                raise SchemaError(f"column {d.get('name')!r}: categories must be a list")
            kw["categories"] = tuple(kw["categories"])
        if "special" in kw:
            if not isinstance(kw["special"], (list, tuple)):
                raise SchemaError(f"column {d.get('name')!r}: special must be a list of numbers")
            kw["special"] = tuple(kw["special"])
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
    # How the missing-value category is written in the exported file (None: the first declared marker,
    # usually the empty cell). Drafts suggest the marker the upload used most.
    missing_output: str | None = None
    rules: tuple = ()  # public consistency rules (mechanisms.rules.Rule)

    def __post_init__(self):
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise SchemaError(f"duplicate column names: {dup}")
        if not self.kept:
            raise SchemaError("the schema keeps no column (all are excluded)")
        if self.missing_output is not None:
            if not isinstance(self.missing_output, str):
                raise SchemaError(f"missing_output must be a string, got {self.missing_output!r}")
            check_text(self.missing_output, "missing-value output marker")
        try:
            rules_mod.check_rules(self)
        except rules_mod.RuleError as exc:
            raise SchemaError(str(exc)) from None

    @property
    def missing_text(self) -> str:
        """What the exported file writes for a missing category."""
        if self.missing_output is not None:
            return self.missing_output
        return self.missing_markers[0] if self.missing_markers else ""

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
        d = {
            "version": 1,
            "draft": self.draft,
            "missing_markers": list(self.missing_markers),
            "columns": [c.to_dict() for c in self.columns],
        }
        if self.missing_output is not None:
            d["missing_output"] = self.missing_output
        if self.rules:
            d["rules"] = [r.to_dict() for r in self.rules]
        return d

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_stored(cls, d: Any) -> "Schema":
        """A schema stored when it was confirmed (a dataset's, a release's): as :meth:`from_dict`, except that a date
        format failing the round trip that confirmation now requires is kept, with the reason in the column's
        ``date_problem`` (:meth:`date_problems`), so that a schema confirmed under older rules still loads;
        confirming it again refuses the format until the steward fixes it."""
        return cls.from_dict(d, stored=True)

    def date_problems(self) -> dict[str, str]:
        """Column name -> why its date format fails the round trip, for the columns of a stored schema."""
        return {c.name: c.date_problem for c in self.columns if c.date_problem is not None}

    @classmethod
    def from_dict(cls, d: Any, stored: bool = False) -> "Schema":
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
        rules = d.get("rules", [])
        if not isinstance(rules, list):
            raise SchemaError("rules must be a list of rule objects")
        try:
            parsed = tuple(rules_mod.Rule.from_dict(r) for r in rules)
        except rules_mod.RuleError as exc:
            raise SchemaError(str(exc)) from None
        return cls(
            columns=tuple(Column.from_dict(c, stored=stored) for c in cols),
            missing_markers=tuple(markers),
            draft=bool(d.get("draft", False)),
            missing_output=d.get("missing_output"),
            rules=parsed,
        )

    @classmethod
    def from_json(cls, text: str) -> "Schema":
        try:
            return cls.from_dict(safejson.loads(text))
        except safejson.JsonLimitError as exc:
            raise SchemaError(f"schema is {'' if str(exc).startswith('not ') else 'refused: '}{exc}") from None

    def confirmed(self) -> "Schema":
        return Schema(
            columns=self.columns,
            missing_markers=self.missing_markers,
            draft=False,
            missing_output=self.missing_output,
            rules=self.rules,
        )

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
                num = c.parse_numbers(txt.where(~is_missing))
                bad = num.isna() & ~is_missing
                if bad.any():
                    example = txt[bad].iloc[0]
                    what = f"dates in the format {c.date_format!r}" if c.is_date else "numbers"
                    raise SchemaMismatch(
                        f"column {c.name!r}: {int(bad.sum())} value(s) are not {what} (e.g. {example[:40]!r})"
                    )
                num = num.replace([np.inf, -np.inf], np.nan)  # infinities count as missing
                is_missing = num.isna()
                if is_missing.any():
                    if c.fill is None:
                        raise SchemaMismatch(
                            f"column {c.name!r}: {int(is_missing.sum())} missing value(s) and no 'fill' declared"
                        )
                    num = num.fillna(c.fill)
                arr = np.clip(num.to_numpy(dtype=float), c.lower, c.upper)
                if c.kind == "integer":
                    arr = np.clip(np.rint(arr), math.ceil(c.lower), math.floor(c.upper))
                out[c.name] = arr
            else:
                txt = s.astype(str).str.strip().where(~s.isna(), "")
                known = txt.isin(c.categories)
                if MISSING_CATEGORY in c.categories:  # a marker that is not a declared category is missing
                    missing = txt.isin(markers) & ~known
                    txt, known = txt.where(~missing, MISSING_CATEGORY), known | missing
                if not known.all():
                    if c.other is None:
                        bad = txt[~known]
                        raise SchemaMismatch(
                            f"column {c.name!r}: {len(bad)} value(s) outside the declared categories "
                            f"(e.g. {bad.iloc[0][:40]!r}) and no 'other' category declared"
                        )
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
                cols.append(c.unit_transform(v.to_numpy(dtype=float)))
            else:
                cols.append(self.category_codes(c, v).astype(float))
        return np.column_stack(cols) if cols else np.empty((len(prepared), 0))

    def from_unit(self, X: np.ndarray) -> pd.DataFrame:
        """Inverse of :meth:`to_unit` (values outside [0,1] are clipped; codes rounded)."""
        X = np.asarray(X, dtype=float)
        out = {}
        for j, c in enumerate(self.kept):
            if c.is_numeric:
                out[c.name] = self._finish_numeric(c, c.unit_inverse(X[:, j]))
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
        """Every kept column as an int64 cell index (category code, public numeric bin or special value)."""
        cols = []
        for c in self.kept:
            v = prepared[c.name]
            if c.is_numeric:
                cols.append(numeric_cells(c, v.to_numpy(dtype=float)))
            else:
                cols.append(self.category_codes(c, v))
        return np.column_stack(cols).astype(np.int64)

    def from_cells(self, cells: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Decode cell indices (post-processing): special values exactly, numeric bins by drawing inside
        the bin (see the module docstring), categories by their label."""
        cells = np.asarray(cells, dtype=np.int64)
        out = {}
        for j, c in enumerate(self.kept):
            idx = np.clip(cells[:, j], 0, c.n_cells - 1)
            if c.is_numeric:
                out[c.name] = self._finish_numeric(c, decode_numeric_cells(c, idx, rng))
            else:
                out[c.name] = np.asarray(c.categories, dtype=object)[idx]
        return pd.DataFrame(out)

    @staticmethod
    def _finish_numeric(c: Column, v: np.ndarray) -> np.ndarray:
        if c.step is not None:  # the nearest multiple of the step (post-processing of a public fact)
            v = np.clip(c.lower + np.rint((np.asarray(v, dtype=float) - c.lower) / c.step) * c.step, c.lower, c.upper)
        if c.kind == "integer":
            return np.clip(np.rint(v), math.ceil(c.lower), math.floor(c.upper)).astype(np.int64)
        if c.decimals == 0:
            return np.rint(v).astype(np.int64)
        if c.decimals is not None:
            return np.round(v, c.decimals)
        return v


def numeric_cells(c: Column, v: np.ndarray) -> np.ndarray:
    """Cell index of each (prepared) value of numeric column ``c``: a special value's own cell, else
    its bin."""
    edges = c.bin_edges()
    idx = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
    for k, s in enumerate(c.special):
        idx = np.where(v == s, len(edges) - 1 + k, idx)
    return idx


def decode_numeric_cells(c: Column, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values for cell indices of numeric column ``c``: special cells give their value; a bin gives a
    draw inside it, uniform on the column's scale; integers uniform over the integers of the bin
    (edges[i] <= k < edges[i+1], the last bin also holds the upper bound) that are not special values,
    so decoding never moves a row to another cell."""
    edges = c.bin_edges()
    nb = len(edges) - 1
    is_bin = idx < nb
    b = np.minimum(idx, nb - 1)
    if c.kind == "integer":
        first = np.maximum(np.ceil(edges[:-1]).astype(np.int64), math.ceil(c.lower))
        last = np.ceil(edges[1:]).astype(np.int64) - 1
        last[-1] = math.floor(c.upper)
        special = np.array(sorted(c.special), dtype=np.int64)
        inside = np.array([int(((special >= f) & (special <= t)).sum()) for f, t in zip(first, last)], dtype=np.int64)
        count = np.maximum(last - first + 1 - inside, 1)
        v = first[b] + np.floor(rng.random(len(idx)) * count[b]).astype(np.int64)
        for s in special:  # skip the special values: the k-th non-special integer of the bin
            v = v + ((v >= s) & (first[b] <= s)).astype(np.int64)
        v = np.minimum(v, np.maximum(last[b], first[b]))
        values = v.astype(float)
    else:
        lo, hi = edges[b], edges[b + 1]
        u = rng.random(len(idx))
        if c.scale == "log":
            ul, uh = c.unit_transform(lo), c.unit_transform(hi)
            values = c.unit_inverse(ul + u * (uh - ul))
        else:
            values = np.clip(lo + u * (hi - lo), c.lower, c.upper)
    if c.special:
        spec = np.asarray(c.special, dtype=float)
        values = np.where(is_bin, values, spec[np.clip(idx - nb, 0, len(spec) - 1)])
    return values


def ordered_labels(labels: list[str]) -> list[str]:
    """Labels in numeric order when every one is an integer code, else sorted as text."""
    if labels and all(re.fullmatch(r"-?\d{1,15}", v) for v in labels):
        return sorted(labels, key=int)
    return sorted(labels)
