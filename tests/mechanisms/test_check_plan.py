"""Plan errors that depend only on the public row count are refused before any budget is spent."""

from __future__ import annotations

import pytest

from mechanisms.runner import build
from mechanisms.schema import Column, Schema

WIDE = Schema(
    columns=tuple(Column(f"c{i}", "categorical", categories=tuple("abcdefghij")) for i in range(8))
    + (Column("x", "continuous", lower=0, upper=1),)
)


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


# -- memory plan: refused before any reservation, with a message naming the limit --------
def _wide_schema(k: int):
    from mechanisms.schema import Column, Schema

    return Schema(
        columns=(
            Column("x", "continuous", lower=0, upper=1),
            Column("c", "categorical", categories=tuple(f"v{i}" for i in range(k))),
        )
    )


def test_dpmerf_with_100000_categories_is_refused_by_its_memory_plan():
    import time

    from mechanisms.runner import build

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"dpmerf would need about \d+\.\d GiB .* limit per job is 8\.0 GiB"):
        build("dpmerf", _wide_schema(100_000), epsilon=1, delta=1e-6, n=48_842, memory_limit=8 * 2**30)
    assert time.perf_counter() - t0 < 1.0


def test_the_memory_plan_accepts_a_normal_table_and_grows_with_the_categories():
    from mechanisms.runner import build

    small = build("dpmerf", _wide_schema(10), epsilon=1, delta=1e-6, n=48_842, memory_limit=8 * 2**30)
    assert small.planned_memory_bytes(48_842) < 2**30
    assert build("dpmerf", _wide_schema(1000), epsilon=1, delta=1e-6).planned_memory_bytes(
        48_842
    ) > small.planned_memory_bytes(48_842)
    # the 74.5 GiB that np.eye(100_000) needed in fit is inside the estimate (conservative)
    big = build("dpmerf", _wide_schema(100_000), epsilon=1, delta=1e-6)
    assert big.planned_memory_bytes(48_842) >= 8 * 100_000**2


@pytest.mark.parametrize("name, kw", [("baseline", {}), ("kdtree-grid", {}), ("privhp", {}), ("density-lp", {})])
def test_every_mechanism_has_a_positive_memory_plan_within_a_small_limit(name, kw):
    from mechanisms.runner import build
    from mechanisms.schema import Column, Schema

    schema = Schema(columns=(Column("x", "continuous", lower=0, upper=1), Column("y", "integer", lower=0, upper=9)))
    mech = build(name, schema, epsilon=1, n=1000, memory_limit=2**30, **kw)
    assert 0 <= mech.planned_memory_bytes(1000) < 2**30
    with pytest.raises(ValueError, match="memory limit per job"):
        build(name, schema, epsilon=1, n=10**9, memory_limit=2**20)


def test_aim_with_fewer_rounds_than_columns_is_refused_by_its_plan():
    with pytest.raises(ValueError, match=r"max_rounds=8 is below the number of kept columns \(9\)"):
        build("aim", WIDE, epsilon=1.0, delta=1e-6, params={"max_rounds": 8}, n=1_000)
    mech = build("aim", WIDE, epsilon=1.0, delta=1e-6, params={"max_rounds": 9}, n=1_000)
    mech.check_plan(1_000)
