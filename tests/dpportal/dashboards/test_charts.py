"""Utility-vs-epsilon charts: releases at the same epsilon stay visible; the log axis is labelled at
the epsilons used only."""

from __future__ import annotations

import math

from dpportal.dashboards import charts


def _pt(rid, mech, eps, value):
    return {"id": rid, "mechanism": mech, "epsilon": eps, "summary": {"tvd_1way_mean": value}}


def test_releases_at_the_same_epsilon_get_distinct_x_positions_and_the_line_goes_through_their_mean():
    fig = charts.utility_vs_epsilon(
        [_pt(1, "baseline", 1.0, 0.05), _pt(2, "baseline", 1.0, 0.07), _pt(3, "baseline", 10.0, 0.01)],
        "tvd_1way_mean",
        "t",
    )
    markers, line = fig["data"]
    assert markers["mode"] == "markers" and len(set(markers["x"])) == 3
    xs = sorted(markers["x"])
    assert xs[0] < 1.0 < xs[1] and xs[2] == 10.0
    assert math.isclose(xs[1] / xs[0], 10**charts.DODGE)  # side by side, symmetric around epsilon 1
    assert math.isclose(xs[0] * xs[1], 1.0)
    assert line["x"] == [1.0, 10.0] and math.isclose(line["y"][0], 0.06) and line["showlegend"] is False


def test_the_log_axis_is_labelled_only_at_the_epsilons_released():
    fig = charts.utility_vs_epsilon(
        [_pt(1, "baseline", 0.1, 0.3), _pt(2, "kdtree-grid", 1.0, 0.4), _pt(3, "baseline", 10.0, 0.01)],
        "tvd_1way_mean",
        "t",
    )
    axis = fig["layout"]["xaxis"]
    assert axis["type"] == "log" and axis["tickvals"] == [0.1, 1.0, 10.0] and axis["ticktext"] == ["0.1", "1", "10"]


def test_one_release_per_epsilon_is_not_moved():
    fig = charts.utility_vs_epsilon([_pt(1, "baseline", 0.5, 0.1)], "tvd_1way_mean", "t")
    assert fig["data"][0]["x"] == [0.5]


def test_category_labels_that_look_like_numbers_stay_categories():
    col = {
        "name": "income",
        "tvd": 0.01,
        "cells": {"labels": ["- 50000", "50000+"], "real": [0.94, 0.06], "synthetic": [0.93, 0.07]},
    }
    fig = charts.column_overlay(col)
    assert fig["layout"]["xaxis"]["type"] == "category" and fig["data"][0]["x"] == ["- 50000", "50000+"]
    heat = charts.heatmap([[1.0, 0.2], [0.2, 1.0]], ["2019", "2020"], "t", diverging=False)
    assert heat["layout"]["xaxis"]["type"] == heat["layout"]["yaxis"]["type"] == "category"
    assert heat["layout"]["yaxis"]["autorange"] == "reversed"
    ml = {
        "primary_metric": "roc_auc",
        "target": "income",
        "models": [
            {"model": "logistic", "train": "synthetic", "roc_auc": 0.8},
            {"model": "logistic", "train": "real", "roc_auc": 0.9},
        ],
    }
    assert charts.tstr_bars(ml)["layout"]["xaxis"]["type"] == "category"
