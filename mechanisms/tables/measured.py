"""The tables a fitted baseline, MST or AIM release already paid for: every noisy marginal it measured,
with the model's answer beside it (post-processing of the fit's DP outputs: no data, no privacy cost).

What each number is (stated in every table's ``interval``):

* ``noisy`` -- the measured noisy count (a DP output of the fit).
* ``se`` -- the standard deviation of that count's noise (exact: the discrete Gaussian's or discrete
  Laplace's, at most its scale). For a marginal measured more than once (AIM pools repeats by inverse
  variance) it is the pooled count's; for MST's merged rare values, the merged cell's (sigma sqrt(k)).
* ``lo``, ``hi`` -- a 95% interval for the TRUE count built from ``noisy`` alone: noisy +- t, t the smallest
  integer with P(|noise| <= t) >= 0.95 under the exact noise law (a count measured once), or noisy +- 1.96 se
  (pooled or merged counts: a sum of independent discrete noises, normal approximation).
* ``estimate`` -- the consistent estimate: the fitted model's answer for the cell (the Private-PGM model's
  marginal x the public row count; the baseline's non-negative counts fitted to n), which is what the
  synthetic file is drawn from. It has NO interval: its error is not closed-form (it pools every measurement
  through a non-linear fit), and ``se`` is not its standard error.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np

from .cells import (
    Z95,
    discrete_gaussian_half_width,
    discrete_gaussian_sd,
    discrete_laplace_half_width,
    discrete_laplace_sd,
    labels,
    table_json,
)

INTERVAL_ONCE = (
    "lo/hi: exact 95% interval for the true count from the noisy count (noisy +- t, t the smallest integer "
    "with P(|noise| <= t) >= 0.95); se: the noisy count's noise standard deviation; estimate: the model's "
    "answer (what the synthetic file is drawn from), without an interval"
)
INTERVAL_POOLED = (
    "lo/hi: 95% interval for the true count from the noisy count (noisy +- 1.96 se, normal approximation: "
    "a pooled or merged count sums several independent discrete Gaussian noises); se: the noisy count's noise "
    "standard deviation; estimate: the model's answer (what the synthetic file is drawn from), without an interval"
)


def measured_tables(synthesizer) -> dict:
    """The measured tables of a FITTED baseline, MST or AIM release in the tables' JSON contract
    (mechanisms/tables/cells.py); for a tables release (fitted or reloaded), its published tables. Raises
    ValueError when the object holds no measurements (not fitted, or an MST or AIM rebuilt from a stored
    summary, which keeps the model but not the noisy counts)."""
    rows = getattr(synthesizer, "measured_rows", None)
    if not getattr(synthesizer, "fitted", False) or rows is None:
        raise ValueError(
            f"{synthesizer.name}: measured tables come from a fitted release (or a stored summary that keeps "
            "its noisy counts and row count)"
        )
    if callable(getattr(synthesizer, "tables", None)):  # the tables release publishes its own
        return synthesizer.tables()
    if getattr(synthesizer, "noisy_counts", None) is not None:
        tables = _histograms(synthesizer, int(rows))
    elif getattr(synthesizer, "measurements", None) is not None:
        tables = _pgm_tables(synthesizer, int(rows))
    else:
        raise ValueError(f"mechanism {synthesizer.name!r} does not keep noisy marginal measurements")
    return {
        "tables": tables,
        "epsilon": synthesizer.epsilon,
        "delta": synthesizer.delta,
        "mechanism": synthesizer.name,
        "rows": int(rows),
        "cost": "none: post-processing of the release's own measurements",
    }


def _histograms(mech, rows: int) -> list[dict]:
    """The baseline: one noisy histogram per kept column, discrete Laplace or discrete Gaussian."""
    gaussian = mech.params.get("noise_type") == "gaussian"
    scale = float(mech.noise_scale())  # public: the schema, epsilon and delta (also after a summary reload)
    if gaussian:
        half, sd = discrete_gaussian_half_width(scale), discrete_gaussian_sd(scale)
        noise = {"distribution": "discrete_gaussian", "sigma": scale}
    else:
        half, sd = discrete_laplace_half_width(scale), discrete_laplace_sd(scale)
        noise = {"distribution": "discrete_laplace", "scale": scale}
    out = []
    for col, counts in zip(mech.schema.names, mech.noisy_counts):
        noisy = np.asarray(counts, dtype=np.float64)
        estimate = _baseline_shares(noisy, rows) * rows
        out.append(
            table_json(
                [col],
                labels(mech.schema, [col]),
                noisy=noisy,
                estimate=estimate,
                se=sd,
                lo=noisy - half,
                hi=noisy + half,
                noise=noise,
                interval=INTERVAL_ONCE,
            )
        )
    return out


def _baseline_shares(noisy: np.ndarray, rows: int) -> np.ndarray:
    """The cell shares the baseline samples from: its non-negative least-squares fit to n where the library
    has it (``mechanisms.pgm.nonneg``), else the clipped, normalised noisy counts."""
    try:
        from ..pgm.nonneg import nonnegative_shares
    except ImportError:  # a library without the fit: the baseline clips and normalises
        w = np.clip(noisy, 0, None)
        return w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size)
    return nonnegative_shares(noisy, rows)


def _pgm_tables(mech, rows: int) -> list[dict]:
    """MST and AIM: every Private-PGM measurement, on the domain it was measured on (MST's rare values
    merged into one cell per column), with the model's marginal beside it."""
    times = _times_measured(mech)
    out = []
    for m in mech.measurements.items:
        cols = list(m.clique)
        weights = np.ones(m.values.size) if m.weights is None else np.asarray(m.weights, dtype=np.float64)
        noisy = np.asarray(m.values, dtype=np.float64) / weights
        se = m.sigma / weights
        once = m.weights is None and times.get(tuple(m.clique), 1) == 1
        if once:
            half = discrete_gaussian_half_width(m.sigma)
            lo, hi, sd = noisy - half, noisy + half, np.full(noisy.size, discrete_gaussian_sd(m.sigma))
        else:
            lo, hi, sd = noisy - Z95 * se, noisy + Z95 * se, se
        estimate = mech.model.marginal(tuple(cols)).ravel() * rows
        out.append(
            table_json(
                cols,
                _measured_labels(mech, cols),
                noisy=noisy,
                estimate=estimate,
                se=sd,
                lo=lo,
                hi=hi,
                noise={"distribution": "discrete_gaussian", "sigma": float(m.sigma)},
                interval=INTERVAL_ONCE if once else INTERVAL_POOLED,
            )
        )
    return out


def _times_measured(mech) -> dict[tuple[str, ...], int]:
    """How often each clique was measured: AIM measures every column, then the marginals it selects (a
    marginal selected again, or a column's, is pooled into one measurement); MST measures each once."""
    selected = getattr(mech, "selected", None)
    if selected is None:
        return {}
    return Counter([(a,) for a in mech.schema.names] + [tuple(c) for c, _ in selected])


def _measured_labels(mech, cols: list[str]) -> list[list[str]]:
    """Cell labels; for MST's compressed columns the kept values, then one cell for the merged rare ones."""
    supports = getattr(mech, "supports", None)
    if supports is None:
        return labels(mech.schema, cols)
    per = []
    for c in cols:
        s = supports[mech.schema.names.index(c)]
        names = mech.schema.column(c).cell_labels()
        kept = [name for name, keep in zip(names, s) if keep]
        per.append(kept if s.all() else kept + [f"other ({int((~s).sum())} rare values, merged)"])
    return [list(v) for v in itertools.product(*per)]
