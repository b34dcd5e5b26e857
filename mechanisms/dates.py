"""Date and datetime columns: a public granularity and format over an integer count of time units.

In the schema JSON a date column reads ``{"kind": "date", "lower": "1990-01-01", "upper": "2025-12-31",
"granularity": "day", "format": "%d/%m/%Y"}``: ISO bounds, a granularity (year, month, day, hour,
minute, second) and the ``strftime`` format the upload writes. Inside, it is an ``integer`` column
counting granularity units since 1970-01-01 (so every mechanism handles it as an integer with public
bounds); :meth:`mechanisms.schema.Schema.prepare` parses the upload's strings into that count and the
export writes the synthetic counts back in the upload's format.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

UNITS = {"year": "Y", "month": "M", "day": "D", "hour": "h", "minute": "m", "second": "s"}
# Formats a draft recognises (date only first; the first that reads every value wins).
DRAFT_FORMATS = (
    ("%Y-%m-%d", "day"),
    ("%d/%m/%Y", "day"),
    ("%m/%d/%Y", "day"),
    ("%Y/%m/%d", "day"),
    ("%d.%m.%Y", "day"),
    ("%Y-%m-%d %H:%M:%S", "second"),
    ("%Y-%m-%dT%H:%M:%S", "second"),
    ("%Y-%m", "month"),
)


class DateError(ValueError):
    """A date bound, granularity or format is invalid; the message names it."""


def check_granularity(granularity: str) -> str:
    if granularity not in UNITS:
        raise DateError(f"granularity must be one of {list(UNITS)}, got {granularity!r}")
    return UNITS[granularity]


def to_units(text: str, granularity: str) -> int:
    """An ISO date or datetime ("2020-01-31", "2020-01-31T12:00:00") as a count of units since 1970."""
    unit = check_granularity(granularity)
    try:
        return int(np.datetime64(str(text).strip().replace(" ", "T"), unit).astype(np.int64))
    except ValueError:
        raise DateError(f"not an ISO date (YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SS): {str(text)[:40]!r}") from None


def to_iso(units: float, granularity: str) -> str:
    return str(np.datetime64(int(units), check_granularity(granularity)))


def parse(values: pd.Series, fmt: str, granularity: str) -> np.ndarray:
    """Strings in the upload's format to unit counts (float, NaN where a value does not parse)."""
    unit = check_granularity(granularity)
    stamps = pd.to_datetime(values, format=fmt, errors="coerce")
    out = np.full(len(values), np.nan)
    ok = stamps.notna().to_numpy()
    out[ok] = stamps[ok].to_numpy(dtype="datetime64[ns]").astype(f"datetime64[{unit}]").astype(np.int64)
    return out


def format_units(units: np.ndarray, fmt: str, granularity: str) -> np.ndarray:
    """Unit counts back to strings in the upload's format."""
    unit = check_granularity(granularity)
    stamps = np.asarray(units, dtype=np.int64).astype(f"datetime64[{unit}]").astype("datetime64[ns]")
    return pd.DatetimeIndex(stamps).strftime(fmt).to_numpy(dtype=object)


def check_format(fmt: str) -> str:
    if not isinstance(fmt, str) or not fmt or len(fmt) > 40 or "%" not in fmt:
        raise DateError(f"format must be a strftime pattern such as '%Y-%m-%d', got {fmt!r}")
    try:
        pd.Timestamp("2001-02-03 04:05:06").strftime(fmt)
    except ValueError as exc:
        raise DateError(f"format {fmt!r} is not a valid strftime pattern: {exc}") from None
    return fmt


def detect(present: pd.Series) -> tuple[str, str] | None:
    """The (format, granularity) every value of a column reads with, or None (a draft suggestion)."""
    if present.empty or not present.str.contains(r"\d", regex=True).all():
        return None
    head = present.head(200)
    for fmt, granularity in DRAFT_FORMATS:
        if (
            pd.to_datetime(head, format=fmt, errors="coerce").notna().all()
            and pd.to_datetime(present, format=fmt, errors="coerce").notna().all()
        ):
            return fmt, granularity
    return None


def draft_bounds(units: np.ndarray, granularity: str) -> tuple[int, int]:
    """Suggested bounds: the data's range widened to whole calendar years (not the exact extremes)."""
    unit = check_granularity(granularity)
    lo = np.datetime64(int(np.nanmin(units)), unit).astype("datetime64[Y]")
    hi = np.datetime64(int(np.nanmax(units)), unit).astype("datetime64[Y]") + 1
    return int(lo.astype(f"datetime64[{unit}]").astype(np.int64)), int(
        hi.astype(f"datetime64[{unit}]").astype(np.int64)
    ) - 1
