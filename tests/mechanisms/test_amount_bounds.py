"""Amounts and JSON are bounded before any arithmetic (microseconds, not minutes)."""

from __future__ import annotations

import time
from decimal import Decimal
from fractions import Fraction

import pytest

from mechanisms import safejson
from mechanisms.accounting import check_delta, check_epsilon, exact
from mechanisms.base import ParamSpec


@pytest.mark.parametrize(
    "value",
    [
        "1e30000000",
        "-1e30000000",
        "1e-400",
        "1e400",
        "1e31",
        "1e-31",
        10**31,
        1e308,
        5e-324,
        Decimal("1e999999"),
        "9" * 41,
        "1/" + "9" * 38,
        Fraction(1, 10**40),
        10**100000,
    ],
    ids=lambda v: f"{type(v).__name__}-{str(v)[:12] if not isinstance(v, int) or v < 10**50 else 'huge'}",
)
def test_out_of_range_amounts_are_refused_in_microseconds(value):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="between 1e-30 and 1e30|at most 40"):
        exact(value)
    assert time.perf_counter() - t0 < 0.01


@pytest.mark.parametrize(
    "value, expected",
    [
        ("0.1", Fraction(1, 10)),
        ("1/9", Fraction(1, 9)),
        ("1e-30", Fraction(1, 10**30)),
        ("1e30", Fraction(10**30)),
        ("0e-1000", Fraction(0)),
        (0.5, Fraction(1, 2)),
        (3, Fraction(3)),
        (" 2 ", Fraction(2)),
    ],
)
def test_amounts_in_range_are_exact(value, expected):
    assert exact(value) == expected


def test_the_bound_is_what_refuses_a_slow_parse():
    """The broken variant: without the exponent check, Fraction(Decimal('1e3000000')) is slow."""
    t0 = time.perf_counter()
    Fraction(Decimal("1e300000"))  # 1/100 of the attack, unbounded: measurably slower than the bounded refusal
    unbounded = time.perf_counter() - t0
    t0 = time.perf_counter()
    with pytest.raises(ValueError):
        exact("1e300000")
    assert time.perf_counter() - t0 < unbounded


def test_epsilon_and_delta_floats_stay_positive_and_finite():
    assert check_epsilon("1e-30") == 1e-30
    assert check_delta("1e-30", required=True) == 1e-30
    for bad in ("1e-400", "0e5", "-1e-400"):
        with pytest.raises(ValueError):
            check_epsilon(bad)


@pytest.mark.parametrize("value", [10**400, "1e-400", "1e400", -(10**31), "x" * 201], ids=range(5))
def test_float_parameters_are_bounded(value):
    with pytest.raises(ValueError, match="'w'"):
        ParamSpec("w", "float", 1.0, "width").coerce(value)


@pytest.mark.parametrize("value", [10**16, "9" * 5000, 1e400], ids=range(3))
def test_int_parameters_are_bounded(value):
    with pytest.raises(ValueError, match="'k'"):
        ParamSpec("k", "int", 1, "k").coerce(value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[" * 50_000 + "]" * 50_000, "deeper"),
        ("[" * 33 + "]" * 33, "deeper"),
        ('{"a": 1' + "0" * 5000 + "}", "limit is 100"),
        ('{"a": 1' + "0" * 400 + "}", "limit is 100"),
        ("{", "not valid JSON"),
        (b"\xff", "not UTF-8"),
    ],
    ids=range(6),
)
def test_safejson_refuses_hostile_text_fast(text, message):
    t0 = time.perf_counter()
    with pytest.raises(safejson.JsonLimitError, match=message):
        safejson.loads(text)
    assert time.perf_counter() - t0 < 0.5


def test_safejson_refuses_oversized_text_and_accepts_normal_json():
    with pytest.raises(safejson.JsonLimitError, match="limit is 10"):
        safejson.loads("[" + "1," * 20 + "1]", max_bytes=10)
    assert safejson.loads('{"a": [[1.5, 2]], "b": NaN}')["a"] == [[1.5, 2]]
    assert safejson.loads("[" * 32 + "]" * 32) is not None
