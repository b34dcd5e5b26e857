"""The dashboards benchmark's server timing (benchmarks/system/dashboards.py) on the suite's small world: every
page it asks answers 200 and is timed; a page that answers otherwise stops the benchmark."""

from __future__ import annotations

import pytest

from benchmarks.system import dashboards


def test_the_benchmark_times_the_three_pages(world):
    portal = {"owner": world.owner, "dataset": world.dataset.pk, "releases": [world.release.pk]}
    timed = dashboards.time_pages(portal, repeats=2)
    assert set(timed) == {"release", "dataset", "compare"}
    for page in timed.values():
        assert 0 < page["median_s"] <= page["max_s"] and page["kib"] > 1


def test_a_page_that_is_not_answered_stops_it(world):
    portal = {"owner": world.analyst, "dataset": world.dataset.pk, "releases": [world.release.pk]}  # 404s
    with pytest.raises(AssertionError):
        dashboards.time_pages(portal, repeats=1)
