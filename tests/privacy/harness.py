"""Privacy audit harness: one worst-case neighbouring pair per mechanism, the released noisy
summary, a Clopper-Pearson lower bound on the privacy parameter, and a mutant the same audit must catch.

How a mechanism is audited (after Jagielski et al. 2020 and Nasr et al. 2021):

1. Record. ``fit`` runs on D with a :class:`RecordingNoise`: every privacy-noise call (kind, EXACT input
   vector, scale) is recorded and then served by the real sampler, so the fit goes on normally. The same
   on each candidate neighbour D' (one record replaced, same seed). The recorded calls that line up on
   D and D' (same kind, shape, scale: the common path) are the released noisy summary; they carry the
   implementation's own scales and its own exact inputs, so a wrong scale or an understated sensitivity
   shows up as inputs that differ by more than the scale allows.
2. Worst-case pair: among the candidates, the D' whose inputs differ most in units of the scale
   (sum |a - b| / s for Laplace calls, the L2 norm for Gaussian ones).
3. Audit: draw the summary again many times on each side through ``Noise``'s own samplers (the seeded
   backend, with the recorded exact inputs and scales; the path is held fixed), reduce each draw to the
   Neyman-Pearson statistic (the privacy loss log p_D(y) / p_D'(y) under the nominal law), choose an event
   {statistic >= t} on a pilot batch and count it on fresh batches. Lower bounds at confidence 1 - alpha:
   pure claims:  epsilon_lb = ln(p_lo(D) / p_hi(D'))  (Clopper-Pearson, alpha/2 each side);
   Gaussian (epsilon, delta) claims: mu_lb = Phi^-1(p_lo) - Phi^-1(p_hi), against the largest mu for which
   mu-GDP implies (epsilon, delta)-DP (Balle & Wang 2018; a Gaussian release is exactly mu-GDP).
   The audit fails when the lower bound exceeds the claim; it is run on a mutant (noise halved or
   sensitivity understated) that it must catch.

What it does NOT see: adaptivity (the path is held fixed), least-significant-bit leaks of float samplers
(a static check covers those: tests/mechanisms/test_noise.py), and anything outside the noisy summary
(post-processing is free by the DP theorem). Mechanisms whose release is not additive noise (pMSE's
exponential mechanism, PrivHP's noise drawn before the pass) give their own ``summary`` function.

Adding a mechanism: one :class:`Case` in tests/privacy/cases.py (schema, table, candidate replacements,
parameters, mutant); the registry test fails until every registered mechanism has one.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.stats import norm

from mechanisms.noise import Noise
from mechanisms.schema import Schema
from mechanisms.source import TableSource
from tests.audit import clopper_pearson

FULL = os.environ.get("DPPORTAL_AUDIT") == "full"  # `make audit`
PILOT, DRAWS = (50_000, 1_000_000) if FULL else (10_000, 100_000)
ALPHA = 0.01  # false-alarm probability of each audit (99% bounds)


# ----------------------------------------------------------------------------------------------
# Recording the noisy summary
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    kind: str  # the Noise method: laplace_int | laplace_float | gaussian_int | gaussian_float
    values: np.ndarray  # the exact input (flattened)
    scale: float

    @property
    def gaussian(self) -> bool:
        return self.kind.startswith("gaussian")


class RecordingNoise(Noise):
    """Seeded noise that records every privacy-noise call (then draws it with the real sampler)."""

    def __init__(self, seed: int):
        super().__init__(secure=False, seed=seed)
        self.calls: list[Call] = []

    def _record(self, kind: str, values, scale: float) -> None:
        self.calls.append(Call(kind, np.array(values, dtype=np.float64).ravel(), float(scale)))

    def laplace_int(self, counts, *, scale):
        self._record("laplace_int", counts, scale)
        return super().laplace_int(counts, scale=scale)

    def laplace_float(self, values, *, scale):
        self._record("laplace_float", values, scale)
        return super().laplace_float(values, scale=scale)

    def gaussian_int(self, counts, *, scale):
        self._record("gaussian_int", counts, scale)
        return super().gaussian_int(counts, scale=scale)

    def gaussian_float(self, values, *, scale):
        self._record("gaussian_float", values, scale)
        return super().gaussian_float(values, scale=scale)


def record(
    cls, schema: Schema, frame: pd.DataFrame, params: dict, *, epsilon: float, delta: float, seed: int = 0
) -> list[Call]:
    noise = RecordingNoise(seed)
    mech = cls(schema, epsilon=epsilon, delta=delta, noise=noise, **params)
    mech.fit(TableSource.from_frame(schema, frame))
    return noise.calls


def aligned(calls_d: list[Call], calls_d2: list[Call]) -> list[tuple[Call, Call]]:
    """The common path: calls up to the first one that differs in kind, size or scale."""
    out = []
    for a, b in zip(calls_d, calls_d2):
        if a.kind != b.kind or a.values.shape != b.values.shape or a.scale != b.scale:
            break
        out.append((a, b))
    return out


def separation(pairs: list[tuple[Call, Call]]) -> float:
    """How far apart the two inputs are in units of the noise: sum_L1/s over Laplace calls plus the
    L2 norm (over all Gaussian calls together) of (a - b)/s."""
    lap = sum(float(np.abs(a.values - b.values).sum()) / a.scale for a, b in pairs if not a.gaussian)
    gau = math.sqrt(sum(float(np.sum(((a.values - b.values) / a.scale) ** 2)) for a, b in pairs if a.gaussian))
    return lap + gau


# ----------------------------------------------------------------------------------------------
# Claims
# ----------------------------------------------------------------------------------------------


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of mu-GDP (Balle & Wang 2018, Theorem 8): exact for a Gaussian release."""
    return float(norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2))


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """The largest mu whose mu-GDP guarantee implies (epsilon, delta)-DP."""
    return float(brentq(lambda mu: gdp_delta(mu, epsilon) - delta, 1e-6, 50.0, xtol=1e-12))


@dataclass(frozen=True)
class Claim:
    kind: str  # "epsilon" (pure) | "mu" (Gaussian (epsilon, delta))
    value: float

    @classmethod
    def of(cls, epsilon: float, delta: float, gaussian: bool) -> "Claim":
        if delta == 0:
            return cls("epsilon", epsilon)
        if not gaussian:
            raise ValueError("an approximate claim is audited only for Gaussian releases")
        return cls("mu", gdp_mu_for(epsilon, delta))


# ----------------------------------------------------------------------------------------------
# The audit
# ----------------------------------------------------------------------------------------------


def _loss(pairs: list[tuple[Call, Call]], draws: list[np.ndarray]) -> np.ndarray:
    """Privacy loss ln p_D(y) / p_D'(y) of each draw under the nominal laws (summed over the calls)."""
    total = 0.0
    for (a, b), y in zip(pairs, draws):
        if a.gaussian:
            total = total + (((y - b.values) ** 2 - (y - a.values) ** 2) / (2 * a.scale**2)).sum(axis=1)
        else:
            total = total + ((np.abs(y - b.values) - np.abs(y - a.values)) / a.scale).sum(axis=1)
    return np.asarray(total, dtype=np.float64)


def summary_sampler(pairs: list[tuple[Call, Call]], side: int, noise: Noise) -> Callable[[int], np.ndarray]:
    """k draws of the noisy summary on D (side 0) or D' (side 1), reduced to the privacy loss.

    Coordinates equal on D and D' are left out: their noise is independent of the rest and adds
    exactly 0 to the loss, so the statistic's law is unchanged (and big summaries stay cheap)."""
    pairs = _moved(pairs)

    def draw(k: int) -> np.ndarray:
        ys = []
        for pair in pairs:
            c = pair[side]
            x = np.broadcast_to(c.values, (k, c.values.size))
            if c.kind.endswith("_int"):
                x = np.rint(x).astype(np.int64)
            ys.append(getattr(noise, c.kind)(x, scale=c.scale).astype(np.float64))
        return _loss(pairs, ys)

    return draw


def _moved(pairs: list[tuple[Call, Call]]) -> list[tuple[Call, Call]]:
    out = []
    for a, b in pairs:
        keep = a.values != b.values
        if keep.any():
            out.append((Call(a.kind, a.values[keep], a.scale), Call(b.kind, b.values[keep], b.scale)))
    return out


def _bound(claim_kind: str, ka: int, kb: int, n: int) -> float:
    lo, _ = clopper_pearson(ka, n, ALPHA / 2)
    _, hi = clopper_pearson(kb, n, ALPHA / 2)
    if lo <= 0 or hi <= 0:
        return 0.0
    if claim_kind == "epsilon":
        return max(0.0, math.log(lo / hi))
    return max(0.0, float(norm.ppf(lo) - norm.ppf(hi)))


def audit(
    draw_d: Callable[[int], np.ndarray],
    draw_d2: Callable[[int], np.ndarray],
    claim_kind: str,
    *,
    pilot: int = PILOT,
    n: int = DRAWS,
) -> float:
    """Lower bound (epsilon or mu) from threshold events {s >= t} / {s <= t} chosen on a pilot batch
    (the event whose pilot lower bound is largest), counted on a fresh batch of ``n`` per side."""
    a, b = draw_d(pilot), draw_d2(pilot)
    best, event = 0.0, None
    for t in np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0.005, 0.995, 199))):
        for side in (1, -1):
            ka, kb = int(np.sum(side * a >= side * t)), int(np.sum(side * b >= side * t))
            if min(ka, kb) < 20:
                continue
            for k1, k2, swap in ((ka, kb, False), (kb, ka, True)):
                score = _bound(claim_kind, k1, k2, pilot)  # the pilot's own LOWER bound: no lucky tail events
                if score > best:
                    best, event = score, (t, side, swap)
    if event is None:
        return 0.0
    t, side, swap = event
    a, b = draw_d(n), draw_d2(n)
    ka, kb = int(np.sum(side * a >= side * t)), int(np.sum(side * b >= side * t))
    return _bound(claim_kind, kb, ka, n) if swap else _bound(claim_kind, ka, kb, n)


# ----------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One mechanism's audit. ``candidates``: (row index, replacement row) pairs; the worst is audited.
    ``mutant(monkeypatch)`` breaks the mechanism (noise halved / sensitivity understated).
    ``summary`` (optional) replaces recording: (case, seed) -> (pairs, claim), for releases that are not
    additive noise on fit's inputs."""

    mechanism: str
    schema: Schema
    frame: pd.DataFrame
    candidates: list[tuple[int, dict]]
    mutant: Callable
    params: dict = field(default_factory=dict)
    epsilon: float = 1.0
    delta: float = 0.0
    summary: Callable | None = None
    sampler: Callable | None = None  # (case) -> (draw_d, draw_d2, claim) for non-additive releases
    runner: Callable | None = None  # (case, frame, noise) -> None: a DP release that is not a Mechanism

    def neighbour(self, index: int, row: dict) -> pd.DataFrame:
        other = self.frame.copy()
        for k, v in row.items():
            other.loc[index, k] = v
        return other

    def record(self, frame: pd.DataFrame, seed: int) -> list[Call]:
        if self.runner is not None:
            noise = RecordingNoise(seed)
            self.runner(self, frame, noise)
            return noise.calls
        from mechanisms import registry

        return record(
            registry.get(self.mechanism),
            self.schema,
            frame,
            self.params,
            epsilon=self.epsilon,
            delta=self.delta,
            seed=seed,
        )

    def worst_pair(self, seed: int = 0) -> list[tuple[Call, Call]]:
        base = self.record(self.frame, seed)
        best, best_sep = None, -1.0
        for index, row in self.candidates:
            calls = self.record(self.neighbour(index, row), seed)
            pairs = aligned(base, calls)
            sep = separation(pairs)
            if sep > best_sep:
                best, best_sep = pairs, sep
        if not best:
            raise AssertionError(f"{self.mechanism}: no recorded noise call lines up on D and D'")
        return best

    def run(self, seed: int = 0) -> tuple[float, Claim]:
        """(lower bound, claim) for this case as the code stands (mutants patched in by the caller)."""
        if self.sampler is not None:
            draw_d, draw_d2, claim = self.sampler(self, seed)
            return audit(draw_d, draw_d2, claim.kind), claim
        pairs = self.summary(self, seed) if self.summary is not None else self.worst_pair(seed)
        gaussian = all(a.gaussian for a, _ in pairs)
        claim = Claim.of(self.epsilon, self.delta, gaussian)
        noise = Noise.seeded(10_000 + seed)
        return audit(summary_sampler(pairs, 0, noise), summary_sampler(pairs, 1, noise), claim.kind), claim
