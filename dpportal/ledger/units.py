"""Exact budget arithmetic and the ledger's hash chain, without Django.

Budgets are stored as integers ("units") so that the cap check is one integer comparison inside
one SQL UPDATE, identical on PostgreSQL and SQLite, and never a float sum (DP Creator's
9 x (1/9) = 1.0000000000000002 > 1.0 bug).

- epsilon: ``EPS_UNIT`` = lcm(1..16) x 10**9 = 720,720,000,000,000 units per 1.0, exact for any
  decimal with up to 9 places and for every 1/k with k <= 16 (and their sums), so 9 x 1/9 fills a
  cap of 1 exactly.
- delta: ``DELTA_UNIT`` = 10**18 units per 1.0 (exact for decimals down to 1e-18).

Rounding is always in the steward's favour: a requested COST is rounded UP to whole units (a
value like 1/17 is charged a hair more, never less) and a CAP is rounded DOWN. Both fit in a
signed 64-bit BigIntegerField: epsilon caps are limited to ``MAX_EPSILON_CAP``.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from decimal import Decimal
from fractions import Fraction

from mechanisms.accounting import exact

EPS_UNIT = 720720 * 10**9  # lcm(1..16) * 1e9: exact for 9-place decimals and 1/k, k <= 16
DELTA_UNIT = 10**18  # exact for decimals down to 1e-18
MAX_EPSILON_CAP = Fraction(10_000)  # 10_000 * EPS_UNIT = 7.2e18 < 2**63 - 1 = 9.22e18
MAX_DELTA_CAP = Fraction(1)
GENESIS_HASH = "0" * 64


def _parse(value, name: str) -> Fraction:
    try:
        return exact(value)
    except ValueError as exc:
        if "between" in str(exc) or "at most" in str(exc):  # a bound of exact(): repeat it
            raise ValueError(f"{name}: {exc}") from None
        raise ValueError(f"{name} must be a number like 0.5 or 1/9, got {name}={value!r}") from None


def epsilon_cost_units(value) -> int:
    """A requested epsilon (string, number) -> whole units, rounded UP; must be positive."""
    eps = _parse(value, "epsilon")
    if eps <= 0:
        raise ValueError(f"epsilon must be positive, got epsilon={value!r}")
    if eps > MAX_EPSILON_CAP:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON_CAP}, got epsilon={value!r}")
    return math.ceil(eps * EPS_UNIT)


def delta_cost_units(value) -> int:
    """A requested delta -> whole units, rounded UP; must be in [0, 1)."""
    d = _parse(value if value not in (None, "") else 0, "delta")
    if d < 0 or d >= 1:
        raise ValueError(f"delta must be in [0, 1), got delta={value!r}")
    return math.ceil(d * DELTA_UNIT)


def epsilon_cap_units(value) -> int:
    """An epsilon cap -> whole units, rounded DOWN; must be in [0, MAX_EPSILON_CAP]."""
    eps = _parse(value, "epsilon cap")
    if eps < 0 or eps > MAX_EPSILON_CAP:
        raise ValueError(f"epsilon cap must be between 0 and {MAX_EPSILON_CAP}, got epsilon={value!r}")
    return math.floor(eps * EPS_UNIT)


def delta_cap_units(value) -> int:
    """A delta cap -> whole units, rounded DOWN; must be in [0, 1) (a cap of 1 would promise nothing)."""
    d = _parse(value if value not in (None, "") else 0, "delta cap")
    if d < 0 or d >= MAX_DELTA_CAP:
        raise ValueError(f"delta cap must be in [0, 1), got delta={value!r}")
    return math.floor(d * DELTA_UNIT)


def units_to_fraction(units: int, unit: int) -> Fraction:
    return Fraction(int(units), unit)


def format_units(units: int, unit: int) -> str:
    """Exact and readable: '0.3', '2/3', '1e-5'; parses back with ``mechanisms.accounting.exact``."""
    f = units_to_fraction(units, unit)
    if f == 0:
        return "0"
    twos = fives = 0
    den = f.denominator
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:  # not a terminating decimal: the exact fraction is the honest display
        return f"{f.numerator}/{f.denominator}"
    places = max(twos, fives)
    d = Decimal(int(f * 10**places)).scaleb(-places)
    if abs(f) < Fraction(1, 10**4):
        return format(d.normalize(), "e")
    return format(d, "f")


def units_to_float(units: int, unit: int) -> float:
    return float(units_to_fraction(units, unit))


# ----------------------------------------------------------------------------------------------
# Hash chain


def canonical_time(dt: datetime) -> str:
    """UTC, microseconds, fixed format: survives a round trip through PostgreSQL and SQLite."""
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_json(obj) -> str:
    """Sorted keys, no whitespace, ASCII only, no NaN: one byte string per value."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def chain_hash(fields: dict, prev_hash: str) -> str:
    """sha256 over the canonical JSON of an entry's immutable fields plus the previous hash."""
    payload = canonical_json({"entry": fields, "prev": prev_hash})
    return hashlib.sha256(payload.encode("ascii")).hexdigest()
