"""The fit of merged (noise-level) bins: pooled among themselves, never with a kept bin, and not at all when the
kept bins say the column heaps on a few values."""

from __future__ import annotations

import numpy as np

from mechanisms.pgm.nonneg import merged_fit, nonnegative_shares, unimodal_fit


def test_a_free_fit_pools_merged_bins_among_themselves_and_leaves_kept_ones():
    y = np.array([5.0, 900.0, 30.0, 800.0, 2.0, 40.0, 0.0])
    kept = np.array([False, True, False, True, False, False, False])
    out = unimodal_fit(y, 1, free=~kept)
    assert out[1] == 900 and out[3] == 800  # kept bins untouched
    assert np.all(np.diff(out[[2, 4, 5, 6]]) <= 0)  # falling after the mode, merged bins only
    assert out[2] == 30 and out[4] == out[5] == 21  # 2, 40 pooled; never with the kept 800
    broken = unimodal_fit(y, 1)  # the fit over every bin pours the kept 800 into its merged neighbours
    assert broken[2] > 400


def test_heaped_values_keep_their_own_noisy_counts_and_smooth_ones_are_fitted():
    rng = np.random.default_rng(0)
    hours = np.zeros(100)
    hours[[15, 20, 25, 30, 35, 40, 45, 50, 55, 60]] = [200, 570, 300, 550, 600, 6900, 850, 1280, 330, 690]
    hours[[70, 65, 32, 10]] = [140, 115, 125, 130]  # real values between the heaps, below 3 sigma
    sigma = 63.0
    y = hours + rng.normal(0, sigma, hours.size)
    kept = y >= 3 * sigma
    fitted = merged_fit(y, kept, int(np.argmax(y)))
    assert np.array_equal(fitted, y)  # heaped: no shape imposed
    shares = nonnegative_shares(fitted[~kept], hours[~kept].sum())
    merged = np.flatnonzero(~kept)
    real = hours[~kept] / hours[~kept].sum()
    plateau = nonnegative_shares(unimodal_fit(y, int(np.argmax(y)), free=~kept)[~kept], hours[~kept].sum())
    tvd, tvd_plateau = 0.5 * np.abs(shares - real).sum(), 0.5 * np.abs(plateau - real).sum()
    assert tvd < tvd_plateau - 0.1, (tvd, tvd_plateau)  # the plateau spreads the real values over all 86
    assert shares[np.isin(merged, [70, 65, 32, 10])].sum() > plateau[np.isin(merged, [70, 65, 32, 10])].sum()

    ages = np.exp(-0.5 * ((np.arange(80) - 38) / 12) ** 2) * 600  # smooth: kept without a gap
    y = ages + rng.normal(0, sigma, ages.size)
    kept = y >= 3 * sigma
    fitted = merged_fit(y, kept, int(np.argmax(y)))
    tail = np.flatnonzero(~kept & (np.arange(80) > 38))
    assert np.all(np.diff(fitted[tail]) <= 1e-9)  # the tail is fitted falling


def test_a_total_too_small_for_float_arithmetic_goes_to_the_largest_cell():
    y = np.array([3.0, 250.0, -5.0])
    assert np.array_equal(nonnegative_shares(y, 1e-20), [0.0, 1.0, 0.0])  # no uniform spread, no IndexError


def test_a_thin_tail_keeps_its_shape_when_the_fit_goes_negative():
    y = np.array([900.0, 120.0, 60.0, 30.0, -40.0])  # one kept bin, then a thin falling tail
    kept = np.array([True, False, False, False, False])
    fit = merged_fit(y, kept, 0)
    assert fit[-1] == 0 and np.isclose(fit[1:].sum(), y[1:].sum())
    shares = nonnegative_shares(fit[1:], y[1:].sum())
    assert np.allclose(shares[:3], np.array([120, 60, 30]) / 210)  # proportional: the 30 keeps its share
    cut = nonnegative_shares(unimodal_fit(y, 0, free=~kept)[1:], y[1:].sum())  # a threshold instead
    assert cut[2] < 0.7 * shares[2]  # takes the same 13 rows off each: the thinnest bin loses most
