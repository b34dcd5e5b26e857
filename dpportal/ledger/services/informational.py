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


def _gaussian_multipliers(report: dict) -> list[float]:
    """Noise multipliers (sigma / L2 sensitivity) of the Gaussian mechanisms a release declares in
    its privacy report ``details``: ``gaussian_noise_multipliers`` (a list), or
    ``noise_multiplier`` / ``noise_multiplier_sigma`` (DP-MERF) with an optional count
    ``gaussian_count`` / ``gaussian_releases`` (DP-MERF)."""
    details = (report or {}).get("details") or {}
    listed = details.get("gaussian_noise_multipliers")
    if isinstance(listed, list):
        return [float(x) for x in listed if isinstance(x, (int, float)) and x > 0]
    nm = details.get("noise_multiplier", details.get("noise_multiplier_sigma"))
    if isinstance(nm, (int, float)) and not isinstance(nm, bool) and nm > 0:
        count = details.get("gaussian_count", details.get("gaussian_releases", 1))
        count = count if isinstance(count, int) and count > 0 else 1
        return [float(nm)] * count
    return []


def tighter_accounting(dataset) -> dict:
    """PLD composition (dp-accounting) of the spent releases, shown BESIDE the basic sum.

    Gaussian-based releases that declare their noise multiplier enter as Gaussian PLDs (the
    continuous Gaussian, as in ``mechanisms.accounting.gaussian_pld_epsilon``); every other
    release enters with its (epsilon, delta) worst-case PLD. Informational only.
    """
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
    gaussian = [(e, _gaussian_multipliers(getattr(e.release, "report", None) or {})) for e in spends]
    if not any(m for _, m in gaussian):
        return {**base, "reason": "no Gaussian-based release declares its noise multiplier"}
    total_delta = sum(Fraction(e.delta_units, DELTA_UNIT) for e in spends)
    if total_delta <= 0:
        return {**base, "reason": "no delta spent"}
    try:
        from dp_accounting.pld import common, privacy_loss_distribution as pld_lib

        pld = None
        for e, multipliers in gaussian:
            if multipliers:
                parts = [pld_lib.from_gaussian_mechanism(m, sensitivity=1.0) for m in multipliers]
            else:
                parts = [
                    pld_lib.from_privacy_parameters(
                        common.DifferentialPrivacyParameters(
                            units_to_float(e.eps_units, EPS_UNIT), units_to_float(e.delta_units, DELTA_UNIT)
                        )
                    )
                ]
            for p in parts:
                pld = p if pld is None else pld.compose(p)
        eps = float(pld.get_epsilon_for_delta(float(total_delta)))
    except Exception as exc:  # informational: never break the page
        log.warning("informational PLD accounting failed for dataset %s: %s", dataset.pk, exc)
        return {**base, "reason": f"accountant failed: {exc}"}
    basic_units = sum(e.eps_units for e in spends)
    basic = units_to_float(basic_units, EPS_UNIT)
    delta_units = sum(e.delta_units for e in spends)
    return {
        **base,
        "available": True,
        "method": "PLD (dp-accounting)",
        "epsilon": round(eps, 6),
        "delta": float(total_delta),
        "delta_display": format_units(delta_units, DELTA_UNIT),
        "basic_epsilon": basic,
        "basic_epsilon_display": format_units(basic_units, EPS_UNIT),
        "tighter": eps < basic,
        "releases": len(spends),
    }
