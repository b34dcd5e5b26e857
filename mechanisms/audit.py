"""Empirical privacy auditing: the statistics shared by the audit tests and the risk report.

A DP guarantee is an upper bound on what any attacker can achieve; an attack that achieves more
proves the guarantee false. These helpers turn attack outcomes (counts of events, counts of correct
guesses) into LOWER confidence bounds on epsilon with exact (Clopper-Pearson) binomial intervals, so
a bound above the claimed epsilon happens by chance with probability at most ``alpha``.
"""

from __future__ import annotations

import math

from scipy.stats import beta


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided (1 - alpha) lower and upper bounds for a binomial proportion k/n."""
    lo = 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(hits_d: int, hits_d2: int, n: int, alpha: float = 0.05) -> float:
    """Lower confidence bound on epsilon from event counts on D and D' (n draws each)."""
    lo, _ = clopper_pearson(hits_d, n, alpha / 2)
    _, hi = clopper_pearson(hits_d2, n, alpha / 2)
    if lo <= 0 or hi <= 0:
        return 0.0
    return max(0.0, math.log(lo / hi))


def delta_lower_bound(hits_d: int, hits_d2: int, n: int, epsilon: float, alpha: float = 0.05) -> float:
    lo, _ = clopper_pearson(hits_d, n, alpha / 2)
    _, hi = clopper_pearson(hits_d2, n, alpha / 2)
    return max(0.0, lo - math.exp(epsilon) * hi)


def guessing_epsilon_lower_bound(correct: int, guesses: int, alpha: float = 0.05, delta: float = 0.0) -> float:
    """Lower confidence bound on epsilon from a membership-guessing game with independent coins.

    Independent fair coins decided the training table, each between two NEIGHBOURING tables given the
    others (the risk report: which record of a pair is in, so one coin replaces one record); the
    attacker guessed ``guesses`` coins and was right ``correct`` times. Under epsilon-DP each guess is
    right with probability at most e^eps / (1 + e^eps), also given the other coins, so the number of
    correct guesses is dominated by a binomial with that rate (Steinke, Nasr & Jagielski, "Privacy
    auditing with one (1) training run", NeurIPS 2023, there with add/remove coins). With p_lo the one-sided
    Clopper-Pearson lower bound of the success rate at confidence 1 - alpha, eps >= ln(p / (1 - p))
    for p = p_lo - delta (delta shifts each guess's success rate by at most delta, the usual
    (eps, delta) slack; an approximation of the paper's exact delta term, negligible at the deltas
    used here)."""
    if guesses <= 0:
        return 0.0
    lo, _ = clopper_pearson(int(correct), int(guesses), alpha)
    p = lo - max(float(delta), 0.0)
    if p <= 0.5:
        return 0.0
    if p >= 1.0:
        return math.inf
    return math.log(p / (1.0 - p))
