"""Cap validation edge cases."""

from __future__ import annotations

import pytest

from dpportal.ledger.units import delta_cap_units


def test_a_delta_cap_of_one_is_refused_because_it_promises_nothing():
    with pytest.raises(ValueError, match=r"delta cap must be in \[0, 1\)"):
        delta_cap_units("1")
    assert delta_cap_units("1e-5") == 10**13
