"""The repeated AIM comparison judges its targets on means, not on one draw."""

from __future__ import annotations

import pytest

from benchmarks.harness import pgm_repeat


def _row(family: str, rep: int, tvd: float, seconds: float, mib: float, status: str = "ok") -> dict:
    return {
        "dataset": "t",
        "epsilon": 0.1,
        "family": family,
        "rep": rep,
        "status": status,
        "tvd_2way": tvd,
        "seconds": seconds,
        "peak_rss_mib": mib,
    }


def test_goals_are_judged_on_the_means_of_the_finished_repetitions():
    rows = [
        _row("dpportal", 0, 0.20, 10, 400),
        _row("dpportal", 1, 0.10, 6, 500),  # mean 0.15, 8 s, 450 MiB
        _row("smartnoise", 0, 0.14, 50, 1000),
        _row("smartnoise", 1, 0.18, 30, 800),  # mean 0.16, 40 s, 900
        _row("smartnoise", 2, 0.01, 1, 1, status="timeout after 900 s"),
    ]  # not finished: left out
    (s,) = pgm_repeat.summarise(rows)
    assert s["dpportal"]["tvd_2way"][0] == pytest.approx(0.15)
    assert s["smartnoise"]["tvd_2way"][0] == pytest.approx(0.16)
    assert s["tvd_goal"] is True  # the first draw alone (0.20 vs 0.14) would say no
    assert s["time_ratio"] == pytest.approx(5.0)
    assert s["memory_ratio"] == pytest.approx(2.0)
    assert s["dpportal"]["draws"] == [0.20, 0.10]


def test_a_worse_mean_fails_the_tvd_goal():
    rows = [
        _row("dpportal", 0, 0.17, 1, 1),
        _row("dpportal", 1, 0.17, 1, 1),
        _row("smartnoise", 0, 0.16, 1, 1),
        _row("smartnoise", 1, 0.16, 1, 1),
    ]
    (s,) = pgm_repeat.summarise(rows)
    assert s["tvd_goal"] is False
