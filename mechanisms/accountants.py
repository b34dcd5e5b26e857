"""What a release's typed privacy events compose to: the epsilon an accountant certifies for them
(pure sum, zCDP, RDP through ``dp_accounting``), a privacy loss distribution for the ledger's informational
view, and the check that a mechanism's events cover its claimed epsilon.

The events themselves (``LaplaceEvent``, ``GaussianEvent``, ...) and :class:`~mechanisms.accounting.PrivacyCost`
live in :mod:`mechanisms.accounting`; the ledger's caps never use these figures (basic composition, exact
arithmetic: ``accounting.compose_basic``).
"""

from __future__ import annotations

import math

from .accounting import (
    ComposedEvent,
    EpsilonDeltaEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyCost,
    ZCDPEvent,
    flat_events,
    zcdp_epsilon,
)


def _dp_event(event):
    """The ``dp_accounting`` event of one of ours (noise multipliers: noise / sensitivity), for the RDP
    accountant. A pure epsilon-DP part enters as (epsilon^2 / 2)-zCDP (Bun & Steinke 2016)."""
    from dp_accounting import dp_event as d

    if isinstance(event, ComposedEvent):
        return d.ComposedDpEvent([_dp_event(e) for e in event.events])
    if isinstance(event, LaplaceEvent):
        one = d.LaplaceDpEvent(event.scale / event.sensitivity)
    elif isinstance(event, GaussianEvent):
        one = d.GaussianDpEvent(event.noise_multiplier)
    elif isinstance(event, ExponentialEvent):
        one = d.ZCDpEvent(event.epsilon**2 / 8)
    elif isinstance(event, ZCDPEvent):
        one = d.ZCDpEvent(event.rho)
    elif isinstance(event, EpsilonDeltaEvent) and event.delta == 0:
        one = d.ZCDpEvent(event.epsilon**2 / 2)
    else:
        raise ValueError(f"a {event.kind} event has no RDP curve here (replace-one neighbours)")
    return one if event.count == 1 else d.SelfComposedDpEvent(one, event.count)


def events_rdp_epsilon(events, delta: float) -> float:
    """epsilon at ``delta`` of ``events`` composed, by the RDP accountant of ``dp_accounting``.
    ValueError for an event without an RDP curve (subsampled under replace-one, (epsilon, delta) parts)."""
    from dp_accounting import rdp

    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) for RDP accounting, got delta={delta!r}")
    accountant = rdp.RdpAccountant()
    accountant.compose(_dp_event(ComposedEvent(tuple(events))))
    return float(accountant.get_epsilon(delta))


def events_pure_epsilon(events) -> float | None:
    """The basic-composition epsilon of pure events (Laplace, exponential, (epsilon, 0)), or None when
    any part is not pure epsilon-DP."""
    total = 0.0
    for e in flat_events(events):
        if isinstance(e, (LaplaceEvent, ExponentialEvent)):
            total += e.count * (e.sensitivity / e.scale if isinstance(e, LaplaceEvent) else e.epsilon)
        elif isinstance(e, EpsilonDeltaEvent) and e.delta == 0:
            total += e.count * e.epsilon
        else:
            return None
    return total


def events_pld(events):
    """The privacy loss distribution of ``events`` composed (``dp_accounting``), or None when a part has
    none here (zCDP without a finer description, subsampled under replace-one). Gaussian and Laplace
    parts enter as the continuous mechanisms with their noise multiplier (informational: the discrete
    samplers' losses are close to, not certified below, these); exponential and (epsilon, delta) parts
    by their (epsilon, delta)."""
    from dp_accounting.pld import common, privacy_loss_distribution as pld_lib

    out = None
    for e in flat_events(events):
        if isinstance(e, GaussianEvent):
            one = pld_lib.from_gaussian_mechanism(e.noise_multiplier, sensitivity=1.0)
        elif isinstance(e, LaplaceEvent):
            one = pld_lib.from_laplace_mechanism(e.scale / e.sensitivity, sensitivity=1.0)
        elif isinstance(e, (ExponentialEvent, EpsilonDeltaEvent)):
            params = common.DifferentialPrivacyParameters(e.epsilon, getattr(e, "delta", 0.0))
            one = pld_lib.from_privacy_parameters(params)
        else:
            return None
        one = one.self_compose(e.count) if e.count > 1 else one
        out = one if out is None else out.compose(one)
    return out


def pld_from_parameters(epsilon: float, delta: float):
    """The worst-case privacy loss distribution of an (epsilon, delta)-DP release."""
    from dp_accounting.pld import common, privacy_loss_distribution as pld_lib

    return pld_lib.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon, delta))


def compose_releases(releases, delta: float) -> dict:
    """Tighter composition of several releases on one table, beside the basic sum (informational).

    ``releases``: (events or None, epsilon, delta) per release. PLD: a release whose every event has a
    privacy loss distribution here (:func:`events_pld`) enters by its events, any other by its (epsilon,
    delta). RDP: only when every release's events have an RDP curve (:func:`events_rdp_epsilon`).
    Returns {"pld_epsilon", "rdp_epsilon" (or None), "by_events": releases that entered by their events}."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got delta={delta!r}")
    pld, by_events, all_events = None, 0, []
    for events, eps, dlt in releases:
        one = events_pld(events) if events else None
        if one is None:
            one = pld_from_parameters(float(eps), float(dlt))
        else:
            by_events += 1
        pld = one if pld is None else pld.compose(one)
        all_events = None if all_events is None or not events else all_events + list(events)
    rdp_eps = None
    if all_events:
        try:
            rdp_eps = events_epsilon(all_events, delta)
        except ValueError:
            rdp_eps = None
    return {
        "pld_epsilon": float(pld.get_epsilon_for_delta(delta)) if pld is not None else None,
        "rdp_epsilon": rdp_eps,
        "by_events": by_events,
    }


def events_zcdp_rho(events) -> float | None:
    """The total rho of ``events`` when every part has a zCDP bound here (Gaussian, exponential, zCDP),
    else None."""
    total = []
    for e in flat_events(events):
        if not isinstance(e, (GaussianEvent, ExponentialEvent, ZCDPEvent)):
            return None
        total.append(e.rho if not isinstance(e, ZCDPEvent) else e.count * e.rho)
    return math.fsum(total)


def events_epsilon(events, delta: float) -> float:
    """The epsilon ``events`` account for at ``delta``: the basic sum for pure parts; otherwise the smaller
    of the RDP accountant's value and, when every part has a zCDP bound, the Canonne-Kamath-Steinke
    conversion of their summed rho (:func:`zcdp_epsilon`, tight for zCDP: the accountant's finite grid of
    orders is a little looser). ValueError when the events cannot be accounted at this delta."""
    pure = events_pure_epsilon(events)
    if pure is not None:
        return pure
    if not 0 < delta < 1:
        raise ValueError("events that are not pure epsilon-DP need a delta in (0, 1)")
    candidates = []
    rho = events_zcdp_rho(events)
    if rho is not None and rho > 0:
        candidates.append(zcdp_epsilon(rho, delta))
    try:
        candidates.append(events_rdp_epsilon(events, delta))
    except ValueError:
        if not candidates:
            raise
    return min(candidates)


def check_events(cost: PrivacyCost, *, tolerance: float = 1e-9) -> float:
    """The epsilon ``cost.events`` account for at ``cost.delta`` (:func:`events_epsilon`); ValueError when
    there are none, or when it exceeds the claimed epsilon by more than ``tolerance`` (relative): a claim
    the described noise does not cover (a wrong sigma, a sensitivity understated)."""
    if not cost.events:
        raise ValueError("the cost reports no privacy events")
    eps = events_epsilon(cost.events, cost.delta)
    if eps > cost.epsilon * (1 + tolerance):
        raise ValueError(f"the events account for epsilon={eps:.6g}, above the claimed epsilon={cost.epsilon:g}")
    return eps
