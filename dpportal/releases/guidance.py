"""Guided release: the recommendation and the accuracy curve for a dataset, from PUBLIC inputs only.

The web page and the API call :func:`recommendation_for`. It reads the dataset's confirmed schema,
its public row count n and the remaining budget, never the raw file (tested: the view works with
the raw file unreadable, and two tables with the same schema and n get the same answer). The math
lives in :mod:`mechanisms.recommend`.
"""

from __future__ import annotations

import math
from typing import Mapping

from dpportal.ledger import services as ledger
from mechanisms import recommend as rec
from mechanisms import registry

MAX_EPSILON = 100.0  # the mechanisms' own upper bound (mechanisms.accounting.check_epsilon)
DEFAULT_EPSILON = 1.0
DEFAULT_DELTA = 1e-6  # offered when the budget has room for it: approximate-DP mechanisms need delta > 0
AMOUNT_MAX_CHARS = 40


class GuidanceError(ValueError):
    """Bad purpose or amount; the message names it."""


def parse_amount(value, name: str, *, default: float, low: float = 0.0, low_open: bool, high: float,
                 high_open: bool) -> float:
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


def default_delta(budget: dict) -> float:
    """delta offered for the recommendation: 1e-6 if the budget's remaining delta allows it, else 0."""
    remaining = budget["delta"]["remaining_float"] if budget.get("set") else 0.0
    return DEFAULT_DELTA if remaining >= DEFAULT_DELTA else 0.0


def purpose_from(query: Mapping, schema) -> rec.Purpose:
    try:
        purpose = rec.Purpose.parse(query.get("purpose") or "explore", target=query.get("target") or None,
                                    pairs=query.get("pairs") or None,
                                    larger_than_memory=str(query.get("larger_than_memory", "")).lower()
                                    in ("1", "true", "on", "yes"))
        purpose.check(schema)
    except ValueError as exc:
        raise GuidanceError(str(exc)) from None
    return purpose


def recommendation_for(dataset, query: Mapping, *, mechanism: str | None = None) -> dict:
    """Recommendation, predictions of every supporting mechanism, and the accuracy curve of
    ``mechanism`` (default: the recommended one) with the remaining budget. Raises GuidanceError."""
    schema = dataset.confirmed_schema()
    if schema is None:
        raise GuidanceError("confirm the dataset's schema before asking for a recommendation")
    budget = ledger.remaining(dataset)
    epsilon = parse_amount(query.get("epsilon"), "epsilon", default=DEFAULT_EPSILON, low_open=True,
                           high=MAX_EPSILON, high_open=False)
    delta = parse_amount(query.get("delta"), "delta", default=default_delta(budget), low_open=False, high=1.0,
                         high_open=True)
    purpose = purpose_from(query, schema)
    result = rec.recommend(schema, n=dataset.n_rows, epsilon=epsilon, delta=delta, purpose=purpose)
    out = result.to_dict()
    chosen = mechanism if mechanism in registry.supporting(schema) else result.recommended
    out["curve"] = _curve(chosen, schema, dataset.n_rows, delta, purpose, query) if chosen else None
    out["budget"] = {"set": budget["set"], "epsilon_remaining": budget["epsilon"]["remaining"],
                     "delta_remaining": budget["delta"]["remaining"]}
    return out


def _curve(name: str, schema, n: int, delta: float, purpose: rec.Purpose, query: Mapping) -> dict:
    points = rec.accuracy_curve(name, schema, n=n, delta=delta, purpose=purpose)
    curve = {"mechanism": name, "points": [p for p in points if p["score"] is not None]}
    target = query.get("target_error")
    if target not in (None, ""):
        goal = parse_amount(target, "target_error", default=0.1, low_open=True, high=1.0, high_open=True)
        curve["target_error"] = goal
        curve["smallest_epsilon"] = rec.smallest_epsilon(name, schema, n=n, delta=delta, purpose=purpose,
                                                         target=goal)
    return curve
