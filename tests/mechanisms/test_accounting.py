"""Exact composition and cost records."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mechanisms.accounting import PrivacyCost, compose_basic, exact, split_budget


def test_nine_ninths_compose_to_exactly_one():
    eps, delta = compose_basic([("1/9", 0)] * 9)
    assert eps == 1 and delta == 0
    # the float trap the ledger must avoid: summing floats overshoots
    assert exact("0.1") * 10 == 1


@pytest.mark.parametrize("bad", ["nan", "inf", "abc", "1/0", float("nan"), True, None])
def test_exact_rejects_non_numbers(bad):
    with pytest.raises(ValueError):
        exact(bad)


def test_split_never_exceeds_the_total():
    for eps in (1.0, 0.3, 1 / 3, 7.1):
        parts = split_budget(eps, [1, 2, 3, 0.5, 7])
        assert sum(Fraction(p) for p in parts) <= Fraction(eps)
        assert abs(sum(parts) - eps) < 1e-12


def test_privacy_cost_validates_itself():
    with pytest.raises(ValueError, match="pure guarantee has delta = 0"):
        PrivacyCost(epsilon=1.0, delta=1e-5, guarantee="pure")
    with pytest.raises(ValueError, match="epsilon must be positive"):
        PrivacyCost(epsilon=-1.0)
    c = PrivacyCost(epsilon=1.0, delta=1e-6, guarantee="approximate", caveats=("x",))
    assert c.to_dict()["caveats"] == ["x"] and "replace-one" in c.to_dict()["neighbouring"]


def test_a_choice_named_auto_is_a_value_not_an_empty_field():
    from mechanisms.base import ParamSpec

    spec = ParamSpec("reference", "choice", "auto", "help", choices=("auto", "uniform"))
    assert spec.coerce("auto") == "auto"
    opt = ParamSpec("w", "int", None, "help", optional=True)
    assert opt.coerce("auto") is None
    with pytest.raises(ValueError, match="'reference' must be one of"):
        spec.coerce("nope")
