"""Amounts typed on the guided release page and in recommendation queries: parsed as floats with their
bounds checked before any exact arithmetic (bounded work for any input), the defaults offered, and
what an amount means in words. Public inputs only (the budget's remaining amounts, n)."""

from __future__ import annotations

import math

from mechanisms.accounting import MAX_AMOUNT_CHARS as AMOUNT_MAX_CHARS
from mechanisms.accounting import MAX_EPSILON
from mechanisms.guidance import glossary

DEFAULT_EPSILON = 1.0


class GuidanceError(ValueError):
    """Bad purpose or amount; the message names it."""


def parse_amount(
    value, name: str, *, default: float, low: float = 0.0, low_open: bool, high: float, high_open: bool
) -> float:
    """A float parsed BEFORE any exact arithmetic, its bounds checked (bounded work for any input)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    text = str(value).strip()
    if len(text) > AMOUNT_MAX_CHARS:
        raise GuidanceError(f"{name} is too long ({len(text)} characters); write a plain number like 0.5")
    try:
        v = float(text)
    except ValueError:
        raise GuidanceError(f"{name} must be a number, got {name}={text!r}") from None
    above = v > low if low_open else v >= low
    below = v < high if high_open else v <= high
    if not (math.isfinite(v) and above and below):
        interval = ("(" if low_open else "[") + f"{low:g}, {high:g}" + (")" if high_open else "]")
        raise GuidanceError(f"{name} must be in {interval}, got {name}={text!r}")
    return v


DELTA_SHARE = 0.5  # a preset delta takes at most this share of the remaining delta (room for later releases)


def default_delta(budget: dict, n: int) -> float:
    """delta offered for the recommendation: the power of ten at or below 1/(10 n) (delta much smaller
    than 1/n, the usual advice; n is public), at most half the budget's remaining delta (so that later
    releases can still use an approximate mechanism); 0 without one."""
    remaining = budget["delta"]["remaining_float"] if budget.get("set") else 0.0
    suggested = 10.0 ** -math.ceil(math.log10(10 * max(int(n), 1)))
    return min(suggested, float(f"{remaining * DELTA_SHARE:.3g}")) if remaining > 0 else 0.0


def delta_note(budget: dict, value) -> dict | None:
    """What a release with delta ``value`` leaves of the remaining delta, in words; ``exhausts`` when it
    would leave none (no later release could use an approximate mechanism). None without a delta budget
    or a positive delta that parses."""
    try:
        delta = float(str(value)[:AMOUNT_MAX_CHARS])
    except ValueError:
        return None
    remaining = budget["delta"]["remaining_float"] if budget.get("set") else 0.0
    if not (math.isfinite(delta) and delta > 0 and remaining > 0):
        return None
    left = remaining - delta
    if left <= remaining * 1e-9:
        return {
            "exhausts": True,
            "text": f"This release would use all the remaining δ ({remaining:g}): afterwards "
            f"{glossary.approximate_mechanisms()} can no longer run on this dataset. Use a smaller δ, e.g. "
            f"{remaining * DELTA_SHARE:.3g}, to keep room for them.",
        }
    return {"exhausts": False, "text": f"Leaves δ {left:.3g} of the remaining {remaining:g} for later releases."}


def default_epsilon(budget: dict) -> float:
    """1, or the remaining epsilon when less is left (never 0: the curve still shows what it would buy)."""
    remaining = budget["epsilon"]["remaining_float"] if budget.get("set") else 0.0
    return min(DEFAULT_EPSILON, remaining) if remaining > 0 else DEFAULT_EPSILON


def epsilon_in_words(value) -> str:
    """What ε means in plain words, with the factor e^ε for this value ('' when it does not parse)."""
    try:
        eps = float(str(value)[:AMOUNT_MAX_CHARS])
    except ValueError:
        return ""
    if not (math.isfinite(eps) and 0 < eps <= MAX_EPSILON):
        return ""
    factor = math.exp(eps)
    times = f"{factor:.3g}" if factor < 1e6 else "more than a million"
    return (
        f"ε {eps:g} means: adding or removing any one person's record changes the chance of any result "
        f"by at most a factor of {times} (e^ε). Smaller ε: more private, more noise."
    )
