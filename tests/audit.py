"""Empirical DP auditing helpers (Clopper-Pearson bounds, after Jagielski et al. 2020).

Run a randomized release many times on neighbouring inputs D and D' (one record replaced), pick an
event S from pilot draws, then estimate P[M(D) in S] and P[M(D') in S] on fresh draws with one-sided
Clopper-Pearson bounds at alpha/2 each. For a pure claim:

    epsilon_lb = ln(p_lo(D) / p_hi(D'))

is a lower bound on the true epsilon with confidence 1 - alpha; an audit FAILS when epsilon_lb
exceeds the claim. For an approximate claim: delta_lb = p_lo(D) - e^eps * p_hi(D').
False alarms happen with probability at most alpha; the audit only has teeth against tight claims,
so every audit test also runs a broken variant (mutant) that must be caught.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from mechanisms.audit import clopper_pearson, delta_lower_bound, epsilon_lower_bound  # noqa: F401  (re-exported)


def audit_scalar(
    draw_d: Callable[[int], np.ndarray],
    draw_d2: Callable[[int], np.ndarray],
    *,
    pilot: int = 20_000,
    n: int = 100_000,
    alpha: float = 0.05,
) -> float:
    """Audit a scalar statistic of a release. ``draw_d(k)`` returns k independent outputs on D.

    The pilot chooses the threshold event {output >= t} (or <= t) that maximises the empirical
    log-ratio with enough mass; fresh draws then give the epsilon lower bound.
    """
    a, b = np.asarray(draw_d(pilot), float), np.asarray(draw_d2(pilot), float)
    best = (0.0, None, None)
    for t in np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0.01, 0.99, 99))):
        for side in (1, -1):
            pa = np.mean(side * a >= side * t)
            pb = np.mean(side * b >= side * t)
            if min(pa, pb) * pilot < 30:
                continue
            for p1, p2, swap in ((pa, pb, False), (pb, pa, True)):
                r = math.log(p1 / p2) if p2 > 0 and p1 > 0 else 0.0
                if r > best[0]:
                    best = (r, (t, side), swap)
    if best[1] is None:
        return 0.0
    (t, side), swap = best[1], best[2]
    a, b = np.asarray(draw_d(n), float), np.asarray(draw_d2(n), float)
    ka, kb = int(np.sum(side * a >= side * t)), int(np.sum(side * b >= side * t))
    if swap:
        ka, kb = kb, ka
    return epsilon_lower_bound(ka, kb, n, alpha)
