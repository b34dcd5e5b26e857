"""Every registered mechanism: its noisy summary on a worst-case neighbouring pair stays within the claim
(a 99% Clopper-Pearson lower bound at most the claimed epsilon, or mu for Gaussian (epsilon, delta)
claims), and a mutant (noise halved or sensitivity understated) is caught by the same audit.

Fast settings here (about 10 s in all); ``make audit`` runs the same cases at full power
(DPPORTAL_AUDIT=full: 50,000 pilot and 1,000,000 fresh draws per side). See harness.py for the method."""

from __future__ import annotations

import pytest

from mechanisms import registry
from tests.privacy.cases import CASES


def test_every_registered_mechanism_has_an_audit_case():
    missing = sorted(set(registry.names() + ["bounds"]) - set(CASES))  # bounds: the DP bounds estimate
    assert not missing, f"add an audit case to tests/privacy/cases.py for {missing}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_measured_lower_bound_stays_within_the_claim(name):
    lb, claim = CASES[name].run(seed=0)
    assert lb <= claim.value, f"{name}: {claim.kind} lower bound {lb:.3f} exceeds the claim {claim.value:.3f}"
    assert lb > 0.4 * claim.value, f"{name}: the audit has no teeth ({claim.kind} bound {lb:.3f})"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_mutant_is_caught_by_the_same_audit(name, monkeypatch):
    case = CASES[name]
    case.mutant(monkeypatch)
    lb, claim = case.run(seed=1)
    assert lb > claim.value, f"{name}: mutant not caught ({claim.kind} bound {lb:.3f} <= {claim.value:.3f})"


def test_the_gdp_conversion_round_trips_and_matches_a_known_value():
    from scipy.stats import norm

    from tests.privacy.harness import gdp_delta, gdp_mu_for

    assert gdp_delta(1.0, 0.0) == pytest.approx(norm.cdf(0.5) - norm.cdf(-0.5))  # mu-GDP at eps 0: TV
    mu = gdp_mu_for(1.0, 1e-5)
    assert gdp_delta(mu, 1.0) == pytest.approx(1e-5, rel=1e-9) and 0.26 < mu < 0.28
