"""Privacy costs and their composition.

A :class:`PrivacyCost` is the plain-data record of what one release spends. Budgets compose by
basic sequential composition (sum of epsilons, sum of deltas), computed exactly with
:class:`fractions.Fraction` from the decimal strings users type, so 9 x (1/9) never exceeds 1.

Neighbouring datasets throughout dpportal: one record REPLACED by another (bounded DP); the row
count n is public.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Iterable

NEIGHBOURING = "replace-one (bounded DP): neighbouring tables differ in one replaced record; the row count is public"
GUARANTEES = ("pure", "approximate")


def exact(value) -> Fraction:
    """Parse an epsilon/delta exactly: '0.1' -> 1/10, '1/9' -> 1/9, floats by their decimal repr."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        return Fraction(Decimal(repr(value)))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"expected a finite number, got {value!r}")
        return Fraction(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            if "/" in text:
                num, den = text.split("/", 1)
                return Fraction(int(num), int(den))
            d = Decimal(text)
        except (InvalidOperation, ValueError, ZeroDivisionError):
            raise ValueError(f"expected a number, got {value!r}") from None
        if not d.is_finite():
            raise ValueError(f"expected a finite number, got {value!r}")
        return Fraction(d)
    raise ValueError(f"expected a number, got {value!r}")


def check_epsilon(epsilon, *, maximum: float = 100.0) -> float:
    eps = exact(epsilon)
    if eps <= 0:
        raise ValueError(f"epsilon must be positive, got epsilon={epsilon!r}")
    if eps > maximum:
        raise ValueError(f"epsilon must be at most {maximum}, got epsilon={epsilon!r}")
    return float(eps)


def check_delta(delta, *, required: bool) -> float:
    d = exact(delta if delta is not None else 0)
    if d < 0 or d >= 1:
        raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
    if required and d == 0:
        raise ValueError("this mechanism needs a positive delta (approximate DP), got delta=0")
    if not required and d != 0:
        raise ValueError(f"this mechanism is pure epsilon-DP and takes no delta, got delta={delta!r}")
    return float(d)


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends, with the honest fine print."""

    epsilon: float
    delta: float = 0.0
    guarantee: str = "pure"
    caveats: tuple[str, ...] = ()
    neighbouring: str = NEIGHBOURING
    details: dict = field(default_factory=dict)  # e.g. budget split, noise scales (public)

    def __post_init__(self):
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be positive, got epsilon={self.epsilon!r}")
        if not (0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got delta={self.delta!r}")
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"guarantee must be one of {GUARANTEES}, got {self.guarantee!r}")
        if self.guarantee == "pure" and self.delta != 0:
            raise ValueError("a pure guarantee has delta = 0")

    def to_dict(self) -> dict:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "guarantee": self.guarantee,
            "caveats": list(self.caveats),
            "neighbouring": self.neighbouring,
            "details": self.details,
        }


def compose_basic(costs: Iterable[tuple]) -> tuple[Fraction, Fraction]:
    """Basic sequential composition, exact: sums of (epsilon, delta) pairs."""
    eps, delta = Fraction(0), Fraction(0)
    for e, d in costs:
        eps += exact(e)
        delta += exact(d)
    return eps, delta


def split_budget(epsilon: float, weights: Iterable[float]) -> list[float]:
    """Split epsilon in proportion to weights so that the parts never sum above epsilon."""
    w = [float(x) for x in weights]
    if not w or any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {w}")
    total = sum(w)
    parts = [epsilon * x / total for x in w]
    # float rounding can make the exact sum a hair larger than epsilon: nudge parts down until it is not
    budget = Fraction(epsilon)
    while sum(Fraction(p) for p in parts) > budget:
        i = max(range(len(parts)), key=parts.__getitem__)
        parts[i] = math.nextafter(parts[i], 0.0)
    return parts
