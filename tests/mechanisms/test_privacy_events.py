"""Typed privacy events (mechanisms.accounting): every mechanism reports what its noise is, the events
survive JSON, and the accountants read them. Fixed seeds; the broken variants (a wrong sigma, a scale
that is too small) are caught."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from mechanisms import registry
from mechanisms.accounting import (
    ComposedEvent,
    EpsilonDeltaEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyCost,
    SubsampledEvent,
    ZCDPEvent,
    event_from_dict,
    event_to_dict,
    gaussian_pld_epsilon,
    gaussian_rdp_epsilon,
    zcdp_epsilon,
)
from mechanisms.accountants import check_events, compose_releases, events_epsilon
from mechanisms.noise import Noise
from mechanisms.runner import build
from mechanisms.source import TableSource
from tests.privacy.cases import CASES

MECHANISMS = sorted(name for name in CASES if CASES[name].mechanism in registry.names())


def _fitted_cost(name: str) -> PrivacyCost:
    case = CASES[name]
    mech = build(
        case.mechanism,
        case.schema,
        epsilon=case.epsilon,
        delta=case.delta,
        params=case.params,
        noise=Noise.seeded(0),
        n=len(case.frame),
    )
    if case.mechanism != "dpmerf":  # DP-MERF's noise is fixed before its fit (and the fit trains a network)
        mech.fit(TableSource(case.schema, frame=case.frame))
    return mech.privacy_cost()


def test_every_registered_mechanism_is_covered():
    assert {CASES[n].mechanism for n in MECHANISMS} == set(registry.names())


@pytest.mark.parametrize("name", MECHANISMS)
def test_each_mechanism_reports_events_that_account_for_its_claim_and_survive_json(name):
    cost = _fitted_cost(name)
    assert cost.events, name
    eps = check_events(cost)  # never above the claim ...
    assert eps >= 0.999 * cost.epsilon, (name, eps)  # ... and the whole of it: the events describe the spend
    stored = json.loads(json.dumps(cost.to_dict()))  # as the release record holds it
    assert tuple(event_from_dict(e) for e in stored["events"]) == cost.events


def test_mst_events_are_its_measurements_and_tree_selection():
    cost = _fitted_cost("mst")
    gaussian = [e for e in cost.events if isinstance(e, GaussianEvent)]
    assert gaussian and all(e.sensitivity == pytest.approx(math.sqrt(2)) and e.discrete for e in gaussian)
    rho = sum(e.rho for e in cost.events)
    assert rho == pytest.approx(cost.details["zcdp_rho"], rel=1e-9)
    assert zcdp_epsilon(rho, cost.delta) == pytest.approx(cost.epsilon, rel=1e-6)


def test_a_wrong_sigma_or_scale_is_caught():
    cost = _fitted_cost("mst")
    halved = tuple(
        dataclasses.replace(e, sigma=e.sigma / 2) if isinstance(e, GaussianEvent) else e for e in cost.events
    )
    with pytest.raises(ValueError, match="above the claimed epsilon"):
        check_events(dataclasses.replace(cost, events=halved))
    lap = _fitted_cost("baseline")
    smaller = tuple(dataclasses.replace(e, scale=e.scale * 0.9) for e in lap.events)
    with pytest.raises(ValueError, match="above the claimed epsilon"):
        check_events(dataclasses.replace(lap, events=smaller))


def test_the_broken_baseline_reports_the_scale_it_uses_and_is_caught(monkeypatch):
    CASES["baseline"].mutant(monkeypatch)  # the audit's mutant: every noise scale halved
    with pytest.raises(ValueError, match="above the claimed epsilon"):
        check_events(_fitted_cost("baseline"))


def test_events_round_trip_and_bad_json_is_refused():
    e = ComposedEvent(
        (
            GaussianEvent(3.0, math.sqrt(2), count=4, discrete=True, label="marginals"),
            ExponentialEvent(0.1, count=3),
            LaplaceEvent(2.0, 2.0),
            ZCDPEvent(0.01),
            EpsilonDeltaEvent(0.5, 1e-7),
            SubsampledEvent(0.1, GaussianEvent(1.0, 1.0)),
        )
    )
    assert event_from_dict(json.loads(json.dumps(event_to_dict(e)))) == e
    for bad in (
        {"kind": "gaussian", "sigma": 0, "sensitivity": 1},
        {"kind": "nope"},
        [1],
        {"kind": "zcdp", "rho": 1, "x": 2},
    ):
        with pytest.raises(ValueError):
            event_from_dict(bad)
    with pytest.raises(ValueError, match="event objects"):
        PrivacyCost(1.0, events=({"kind": "laplace"},))


def test_the_accountants_agree_with_the_gaussian_calibration():
    nm, delta = 2.0, 1e-6
    events = [GaussianEvent(nm * 3.0, 3.0, count=5)]  # noise multiplier 2, five releases
    assert events_epsilon(events, delta) <= gaussian_rdp_epsilon(nm, delta, count=5) * (1 + 1e-12)
    out = compose_releases([(events, 100.0, delta)], delta)
    assert out["by_events"] == 1
    assert out["pld_epsilon"] == pytest.approx(gaussian_pld_epsilon(nm, delta, count=5), rel=1e-3)
    pure = compose_releases([(None, 1.0, 0.0), ([LaplaceEvent(2.0, 1.0)], 0.5, 0.0)], 1e-6)
    assert pure["by_events"] == 1 and pure["rdp_epsilon"] is None  # one release without events: no RDP figure
    assert pure["pld_epsilon"] <= 1.5


def test_the_schema_estimates_report_their_events():
    from mechanisms import bounds, categories

    frame = CASES["bounds"].frame
    found = bounds.estimate_bounds([frame], list(frame.columns), epsilon=0.5, noise=Noise.seeded(0), markers=[""], n=30)
    assert check_events(bounds.privacy_cost(0.5, found)) == pytest.approx(0.5)
    frame = CASES["categories"].frame
    found = categories.discover_categories(
        [frame], list(frame.columns), epsilon=0.5, delta=1e-6, noise=Noise.seeded(0), markers=[""]
    )
    cost = categories.privacy_cost(0.5, 1e-6, found)
    assert cost.events == (EpsilonDeltaEvent(0.5, 1e-6, label=cost.events[0].label),)
