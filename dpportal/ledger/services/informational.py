"""Informational tighter accounting (PLD composition with dp-accounting), shown BESIDE the basic sum and
never used to admit."""

from __future__ import annotations

import logging
from fractions import Fraction

from ..models import LedgerEntry
from ..units import DELTA_UNIT, EPS_UNIT, format_units, units_to_float

log = logging.getLogger(__name__)

# Informational PLD accounting composes at most this many releases (dp-accounting's PLD
# composition costs ~10-50 ms per release; the page must stay fast).
MAX_INFORMATIONAL_RELEASES = 200


def release_events(report: dict) -> list | None:
    """The typed privacy events a release's report carries (``PrivacyCost.to_dict()["events"]``), or None
    when it has none or they do not parse (the release then enters with its (epsilon, delta))."""
    from mechanisms.accounting import event_from_dict

    raw = (report or {}).get("events")
    if not isinstance(raw, list) or not raw:
        return None
    try:
        return [event_from_dict(e) for e in raw]
    except ValueError:
        return None


def tighter_accounting(dataset) -> dict:
    """PLD and RDP composition (dp-accounting) of the spent releases, shown BESIDE the basic sum.

    A release enters by the typed privacy events its report carries (Gaussian and Laplace noise, noisy
    max, zCDP parts: ``mechanisms.accountants.compose_releases``); a release without events the PLD can
    represent enters with its (epsilon, delta) worst-case PLD. The RDP figure needs events from every
    release. A release whose events account for more than its ledger epsilon is named. Informational only.
    """
    from mechanisms.accountants import compose_releases, events_epsilon

    spends = list(
        LedgerEntry.objects.filter(dataset_id=dataset.pk, kind=LedgerEntry.SPEND)
        .select_related("release")
        .order_by("seq")[: MAX_INFORMATIONAL_RELEASES + 1]
    )
    base = {
        "informational": True,
        "available": False,
        "label": "informational only: admission always uses the basic sum",
    }
    if len(spends) > MAX_INFORMATIONAL_RELEASES:
        return {**base, "reason": f"more than {MAX_INFORMATIONAL_RELEASES} releases"}
    parts = [
        (
            release_events(getattr(e.release, "report", None) or {}),
            units_to_float(e.eps_units, EPS_UNIT),
            units_to_float(e.delta_units, DELTA_UNIT),
        )
        for e in spends
    ]
    if not any(events for events, _, _ in parts):
        return {**base, "reason": "no spent release reports privacy events"}
    total_delta = sum(Fraction(e.delta_units, DELTA_UNIT) for e in spends)
    if total_delta <= 0:
        return {**base, "reason": "no delta spent"}
    exceeding = []
    for e, (events, eps, delta) in zip(spends, parts):
        try:
            if events and events_epsilon(events, delta) > eps * (1 + 1e-9):
                exceeding.append(e.release_id)
        except ValueError:
            pass
    try:
        composed = compose_releases(parts, float(total_delta))
    except Exception as exc:  # informational: never break the page
        log.warning("informational PLD accounting failed for dataset %s: %s", dataset.pk, exc)
        return {**base, "reason": f"accountant failed: {exc}"}
    if exceeding:
        log.warning("dataset %s: releases %s report events above their ledger epsilon", dataset.pk, exceeding)
    basic_units = sum(e.eps_units for e in spends)
    basic = units_to_float(basic_units, EPS_UNIT)
    delta_units = sum(e.delta_units for e in spends)
    # The basic sum is a valid bound at the same total delta. The PLD can answer more, even infinity: a release
    # entered by its (epsilon, delta) holds its delta as infinite loss, and the other PLDs' truncated tails
    # (~1e-16) add to it, so the mass left for the rest is negative. The smaller of the two valid bounds is shown.
    eps = composed["pld_epsilon"]
    eps = eps if eps is not None and eps < basic else basic
    rdp = composed["rdp_epsilon"]
    return {
        **base,
        "available": True,
        "method": "PLD (dp-accounting)",
        "epsilon": round(eps, 6),
        "rdp_epsilon": round(rdp, 6) if rdp is not None else None,
        "delta": float(total_delta),
        "delta_display": format_units(delta_units, DELTA_UNIT),
        "basic_epsilon": basic,
        "basic_epsilon_display": format_units(basic_units, EPS_UNIT),
        "tighter": eps < basic,
        "releases": len(spends),
        "by_events": composed["by_events"],
        "events_above_claim": exceeding,
    }
