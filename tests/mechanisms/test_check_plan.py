"""Plan errors that depend only on the public row count are refused before any budget is spent."""

from __future__ import annotations

import pytest

from mechanisms.runner import build
from mechanisms.schema import Column, Schema

WIDE = Schema(columns=tuple(Column(f"c{i}", "categorical", categories=tuple("abcdefghij")) for i in range(8))
              + (Column("x", "continuous", lower=0, upper=1),))


def test_kdtree_grid_flooded_by_empty_cells_is_refused_at_build_time_given_n():
    mech = build("kdtree-grid", WIDE, epsilon=1.0, params={"threshold": "1"})  # no n: nothing to check yet
    with pytest.raises(ValueError, match="expected empty cells"):
        mech.check_plan(10_000)
    with pytest.raises(ValueError, match="expected empty cells"):
        build("kdtree-grid", WIDE, epsilon=1.0, params={"threshold": "1"}, n=10_000)
    build("kdtree-grid", WIDE, epsilon=1.0, n=10_000)  # the theorem's defaults pass


def test_privhp_and_the_default_hook_accept_a_sound_plan():
    build("privhp", WIDE, epsilon=1.0, n=10_000)
    build("baseline", WIDE, epsilon=1.0, n=10_000)
