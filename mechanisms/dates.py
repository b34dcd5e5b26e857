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


# Spreadsheets run a cell starting with one of these as a formula (mechanisms.io.FORMULA_PREFIXES): a
# format that writes every date as such a cell is refused, so a date column never needs the guard.
FORMULA_STARTS = ("=", "+", "-", "@")
ROUND_TRIP_INNER = 6  # dates between the bounds checked besides the bounds themselves
MAX_FORMAT_LENGTH = 40


def check_format(fmt: str, granularity: str | None = None, lower: int | None = None, upper: int | None = None) -> str:
    """Accept a ``strftime`` format only if dates survive a round trip through it: a few known dates
    (the column's bounds and dates spread between them, or fixed dates from 1970 to 2037 when no
    bounds are given) are written with the format and read back with the parser the upload uses, and
    must come back identical at the granularity (default: day). Refuses, with the reason, a pattern the
    parser cannot read (``%-d``, a stray ``%``, ``%G`` without ``%V``, ``%U`` without a weekday, a
    directive repeated), one that loses part of the date (``%H:%M`` for days, ``%y`` for a range over
    a century), control characters, and a format whose output starts with a formula character
    (= + - @), which a spreadsheet would run."""
    if not isinstance(fmt, str) or not fmt or len(fmt) > MAX_FORMAT_LENGTH or "%" not in fmt:
        raise DateError(
            f"format must be a strftime pattern of at most {MAX_FORMAT_LENGTH} characters such as "
            f"'%Y-%m-%d', got {fmt[:60] if isinstance(fmt, str) else fmt!r}"
        )
    if any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in fmt):
        raise DateError(f"format {fmt!r} contains a control character")
    if fmt.startswith(FORMULA_STARTS):
        raise DateError(
            f"format {fmt!r} starts with {fmt[0]!r}: spreadsheets would run every date as a formula "
            "(drop the leading character)"
        )
    unit = check_granularity(granularity or "day")
    if lower is None or upper is None:
        known = (
            np.array(
                [
                    "1970-01-01T00:00:00",
                    "1999-12-31T23:59:59",
                    "2001-02-03T04:05:06",
                    "2024-02-29T13:14:15",
                    "2037-10-09T20:21:22",
                ],
                dtype="datetime64[s]",
            )
            .astype(f"datetime64[{unit}]")
            .astype(np.int64)
        )
    else:
        span = np.array([lower, upper], dtype=np.int64).astype(f"datetime64[{unit}]")
        if span[0] < np.datetime64(pd.Timestamp.min.ceil("D")) or span[1] > np.datetime64(pd.Timestamp.max.floor("D")):
            raise DateError(
                f"dates must lie between {pd.Timestamp.min.ceil('D').date()} and {pd.Timestamp.max.floor('D').date()}, "
                f"got {to_iso(lower, granularity or 'day')} to {to_iso(upper, granularity or 'day')}"
            )
        known = np.unique(np.linspace(int(lower), int(upper), ROUND_TRIP_INNER + 2).round().astype(np.int64))
    try:
        written = format_units(known, fmt, granularity or "day")
    except (ValueError, OverflowError) as exc:
        raise DateError(f"format {fmt!r} cannot write dates: {str(exc)[:200]}") from None
    if any(str(w).startswith(FORMULA_STARTS) for w in written):
        raise DateError(f"format {fmt!r} writes dates starting with a formula character (= + - @): {written[0]!r}")
    try:
        back = parse(pd.Series(written, dtype=object), fmt, granularity or "day")
    except Exception as exc:  # the parser compiles the pattern to a regex: ValueError, re.error, ...
        raise DateError(f"format {fmt!r} cannot be read back: {str(exc)[:200]}") from None
    lost = ~(back == known)
    if lost.any():
        i = int(np.argmax(lost))
        got = "nothing" if np.isnan(back[i]) else repr(to_iso(back[i], granularity or "day"))
        raise DateError(
            f"format {fmt!r} does not read back the dates it writes: {to_iso(known[i], granularity or 'day')!r} "
            f"is written {written[i]!r} and read back as {got} (the format must hold every part of a "
            f"{granularity or 'day'} date)"
        )
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
