"""The only source of randomness that may touch private data.

Every mechanism receives a :class:`Noise` object and draws all of its privacy noise through it.
Two backends exist:

``secure`` (the default, used by the web app and the CLI)
    OpenDP's exact samplers with only the ``"contrib"`` feature enabled. Integer counts get
    discrete Laplace / discrete Gaussian noise; float vectors get OpenDP's float Laplace /
    Gaussian, which sample on a fixed granularity in exact arithmetic and so are not exposed to
    the floating-point least-significant-bit attack (Mironov 2012). OpenDP draws its own OS
    entropy (OpenSSL) on every call, so nothing is shared between forked worker processes.

``seeded`` (tests and benchmarks only)
    numpy samplers from a seeded generator, for reproducibility. Not protected against the
    floating-point attack; the privacy report says so (``Noise.secure`` is False).

Besides privacy noise, mechanisms need data-independent randomness (random features, drawing
synthetic rows from a released summary). ``Noise.rng`` is a numpy ``Generator`` for that (private
choices use ``Noise.private_rng``, below). For the secure backend it is created per ``Noise`` object from OS
entropy (``SeedSequence()`` reads ``os.urandom``), so a ``Noise`` made inside a job after a fork
never repeats another process's stream. Never create a ``Noise`` at import time.

Private choices (``Noise.private_rng``): random choices that depend on private data without being
privacy noise (which empty kd-tree cells get a noisy count, and how many; PrivHP's hash functions;
the MCMC proposals and accept/reject uniforms of pMSE) must not be predictable from what is published.
``Noise.rng`` also draws the published synthetic rows, and PCG64's state can be recovered from enough
of its output: from the same stream, the rows would reveal the private choices. ``private_rng`` is a
SEPARATE numpy ``Generator`` on Philox (a counter-based generator built on a block-cipher design,
no known state or key recovery), keyed in secure mode with 128 bits from ``secrets`` (the OS CSPRNG),
in seeded mode from the seed with a stream tag, never the same stream as ``rng``. Its outputs are
never published. Use ``rng`` only for data-independent or post-processing draws; a static test
(tests/security/test_static_randomness.py) holds mechanisms to that.
"""

from __future__ import annotations

import math
import secrets
from typing import Sequence

import numpy as np

# A tiny multiplicative margin on every noise scale: scales are computed in floating point
# (sensitivity / epsilon) and could round a hair below the exact value; rounding up keeps the
# spent epsilon at or below the requested one.
_SCALE_MARGIN = 1.0 + 1e-12

_OPENDP = None  # OpenDP's constructors, once imported (see _opendp)

PRIVATE_STREAM_TAG = 0x9E1F_17  # mixed into a seeded private_rng's seed: never the stream of Noise.rng


def _opendp():
    """OpenDP's constructors as one namespace (``dp.m``, domains, metrics, measures), with only the
    "contrib" feature enabled. Imported module by module rather than through ``opendp.prelude``:
    the prelude also imports ``opendp.extras`` and with it scikit-learn, 1.2 s of every release's
    wall time (measured: a 4 s AIM release on california_housing_numeric) for nothing used here."""
    global _OPENDP
    if _OPENDP is None:
        from types import SimpleNamespace

        import opendp.domains
        import opendp.measurements
        import opendp.measures
        import opendp.metrics
        import opendp.mod

        opendp.mod.enable_features("contrib")
        _OPENDP = SimpleNamespace(
            m=opendp.measurements,
            vector_domain=opendp.domains.vector_domain,
            atom_domain=opendp.domains.atom_domain,
            l1_distance=opendp.metrics.l1_distance,
            l2_distance=opendp.metrics.l2_distance,
            linf_distance=opendp.metrics.linf_distance,
            zero_concentrated_divergence=opendp.measures.zero_concentrated_divergence,
        )
    return _OPENDP


def laplace_scale(*, sensitivity: float, epsilon: float) -> float:
    """Scale b of Laplace noise giving epsilon-DP for an L1 ``sensitivity`` (b = Δ1/ε, rounded up)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be positive and finite, got epsilon={epsilon!r}")
    if not (sensitivity >= 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be non-negative and finite, got sensitivity={sensitivity!r}")
    return sensitivity / epsilon * _SCALE_MARGIN


class Noise:
    """Per-job noise source. Build with :meth:`secure` (production) or :meth:`seeded` (tests)."""

    def __init__(self, *, secure: bool, seed: int | None = None):
        self.secure = secure
        if secure:
            self.rng = np.random.default_rng(np.random.SeedSequence())  # fresh OS entropy
        else:
            if seed is None:
                raise ValueError("a seeded Noise needs seed=<int>")
            self.rng = np.random.default_rng(seed)
        self.private_rng = self._private_generator(secure, seed)
        self.draws = 0  # number of privacy-noise values drawn ("noise drawn" marker for the ledger)

    @staticmethod
    def _private_generator(secure: bool, seed: int | None) -> np.random.Generator:
        """The generator for private choices (module docstring): Philox keyed from the OS CSPRNG
        (secure) or from (seed, PRIVATE_STREAM_TAG) (seeded, reproducible, distinct from ``rng``)."""
        if secure:
            return np.random.Generator(np.random.Philox(key=secrets.randbits(128)))
        return np.random.Generator(np.random.Philox(np.random.SeedSequence([int(seed), PRIVATE_STREAM_TAG])))

    @classmethod
    def secure_backend(cls) -> "Noise":
        return cls(secure=True)

    @classmethod
    def seeded(cls, seed: int) -> "Noise":
        return cls(secure=False, seed=seed)

    @property
    def backend(self) -> str:
        return "opendp-exact" if self.secure else "numpy-seeded (tests only)"

    # -- additive noise -------------------------------------------------------------------------
    def laplace_int(self, counts: Sequence[int] | np.ndarray, *, scale: float) -> np.ndarray:
        """Add discrete Laplace noise (P[k] ∝ exp(-|k|/scale)) to integer ``counts``."""
        return self._add_noise(counts, scale, "laplace", integer=True)

    def gaussian_int(self, counts: Sequence[int] | np.ndarray, *, scale: float) -> np.ndarray:
        """Add discrete Gaussian noise (P[k] ∝ exp(-k²/(2 scale²))) to integer ``counts``."""
        return self._add_noise(counts, scale, "gaussian", integer=True)

    def laplace_float(self, values: Sequence[float] | np.ndarray, *, scale: float) -> np.ndarray:
        """Add Laplace(scale) noise to float ``values`` (exact, granularity-based in secure mode)."""
        return self._add_noise(values, scale, "laplace", integer=False)

    def gaussian_float(self, values: Sequence[float] | np.ndarray, *, scale: float) -> np.ndarray:
        """Add N(0, scale²) noise to float ``values`` (exact, granularity-based in secure mode)."""
        return self._add_noise(values, scale, "gaussian", integer=False)

    def _add_noise(self, values, scale: float, kind: str, *, integer: bool) -> np.ndarray:
        """The one skeleton of the additive primitives: check the scale (and that float values are
        finite), count the draws, then sample with OpenDP's exact sampler (secure) or numpy (seeded).
        ``kind`` is "laplace" (L1 sensitivity) or "gaussian" (L2); integer noise is discrete."""
        values = np.asarray(values, dtype=np.int64 if integer else np.float64)
        self._check_scale(scale)
        if not integer:
            self._check_finite(values)
        self.draws += values.size
        if values.size == 0:
            return values.copy()
        if self.secure:
            dp = _opendp()
            T = int if integer else float
            domain = dp.vector_domain(dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False))
            if kind == "laplace":
                m = dp.m.make_laplace(domain, dp.l1_distance(T=T), scale=float(scale))
            else:
                m = dp.m.make_gaussian(domain, dp.l2_distance(T=T), scale=float(scale))
            return np.asarray(m(values.ravel().tolist()), dtype=values.dtype).reshape(values.shape)
        return values + self._seeded_noise(scale, values.shape, kind, integer=integer)

    def _seeded_noise(self, scale: float, shape, kind: str, *, integer: bool) -> np.ndarray:
        """Seeded (test) noise from ``rng``: discrete Laplace as the difference of two geometric
        variables on {0, 1, ...} with p = 1 - exp(-1/scale); discrete Gaussian as a rounded normal."""
        if kind == "laplace" and integer:
            p = -math.expm1(-1.0 / scale)
            return (self.rng.geometric(p, shape) - self.rng.geometric(p, shape)).astype(np.int64)
        if kind == "laplace":
            return self.rng.laplace(0.0, scale, shape)
        if integer:
            return np.rint(self.rng.normal(0.0, scale, shape)).astype(np.int64)
        return self.rng.normal(0.0, scale, shape)

    # -- private selection ----------------------------------------------------------------------
    def select_max_zcdp(self, scores: Sequence[float] | np.ndarray, *, sensitivity: float, rho: float) -> int:
        """Index of a noisy maximum of ``scores``: the exponential mechanism, as report-noisy-max with
        Gumbel noise of scale ``sensitivity / sqrt(2 rho)``, which is rho-zCDP when every score moves
        by at most ``sensitivity`` (in either direction) between neighbouring tables.

        Derivation: Gumbel-max with scale s samples exactly the exponential mechanism
        P[i] ∝ exp(score_i / s), which is eps-DP for eps = 2 sensitivity / s (non-monotone scores)
        and eps^2/8-zCDP (Cesar & Rogers 2021): rho = (2 sensitivity / s)^2 / 8, so
        s = sensitivity / sqrt(2 rho). OpenDP's ``make_noisy_max`` with the zCDP output measure
        samples it exactly; its own privacy map is checked against ``rho`` before sampling."""
        scores = np.asarray(scores, dtype=np.float64).ravel()
        if scores.size == 0:
            raise ValueError("select_max_zcdp needs at least one score")
        self._check_finite(scores)
        if not (sensitivity > 0 and math.isfinite(sensitivity)):
            raise ValueError(f"sensitivity must be positive and finite, got sensitivity={sensitivity!r}")
        if not (rho > 0 and math.isfinite(rho)):
            raise ValueError(f"rho must be positive and finite, got rho={rho!r}")
        scale = sensitivity / math.sqrt(2 * rho) * _SCALE_MARGIN
        self.draws += scores.size
        if self.secure:
            dp = _opendp()
            space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float, monotonic=False)
            m = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=float(scale))
            if m.map(float(sensitivity)) > rho:  # pragma: no cover - guards the derivation above
                raise AssertionError(f"noisy max costs {m.map(float(sensitivity))} > rho={rho}")
            return int(m(scores.tolist()))
        return int(np.argmax(scores + self.private_rng.gumbel(0.0, scale, scores.size)))  # a private choice

    # -- exponential mechanism helper ----------------------------------------------------------
    def uniform(self, size=None) -> np.ndarray | float:
        """Uniform(0,1) draws for samplers whose output depends on private scores (e.g. MCMC
        accept/reject in the exponential mechanism). Counted as privacy-relevant draws; drawn from
        ``private_rng``, never from the stream that draws published rows."""
        self.draws += 1 if size is None else int(np.prod(size))
        return self.private_rng.random(size)

    # -- internals -----------------------------------------------------------------------------
    @staticmethod
    def _check_scale(scale: float) -> None:
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError(f"noise scale must be positive and finite, got scale={scale!r}")

    @staticmethod
    def _check_finite(values: np.ndarray) -> None:
        if not np.all(np.isfinite(values)):
            raise ValueError("values to be noised must be finite (got NaN or inf)")


class ZeroNoise(Noise):
    """Noise switched off: exact counts and values, the true maximum selected. NOT private.

    Only for analysis that must show what a release WITHOUT its privacy noise would leak: the risk
    report's positive control (mechanisms/risk/) and tests. Data-independent randomness (drawing
    synthetic rows) still comes from a generator of this module: ``base``'s, when given."""

    def __init__(self, *, seed: int = 0, base: Noise | None = None):
        super().__init__(secure=False, seed=seed)
        if base is not None:
            self.rng, self.private_rng = base.rng, base.private_rng

    @property
    def backend(self) -> str:
        return "noise switched off (analysis only, not private)"

    def laplace_int(self, counts, *, scale):
        self._check_scale(scale)
        return np.asarray(counts, dtype=np.int64).copy()

    gaussian_int = laplace_int

    def laplace_float(self, values, *, scale):
        self._check_scale(scale)
        return np.asarray(values, dtype=np.float64).copy()

    gaussian_float = laplace_float

    def select_max_zcdp(self, scores, *, sensitivity, rho):
        return int(np.argmax(np.asarray(scores, dtype=np.float64).ravel()))


class ScaledNoise(Noise):
    """Every noise scale multiplied by ``factor`` (a deliberately broken variant when factor < 1:
    the release then spends about epsilon / factor while claiming epsilon). NOT for releases: the risk
    report's tests and benchmarks use it to show that its check can fail."""

    def __init__(self, factor: float, *, seed: int = 0, base: Noise | None = None):
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor must be positive and finite, got factor={factor!r}")
        super().__init__(secure=False, seed=seed)
        self.factor = float(factor)
        if base is not None:
            self.rng, self.private_rng = base.rng, base.private_rng

    @property
    def backend(self) -> str:
        return f"noise scale x{self.factor:g} (analysis only)"

    def _add_noise(self, values, scale: float, kind: str, *, integer: bool) -> np.ndarray:
        return super()._add_noise(values, scale * self.factor, kind, integer=integer)

    def select_max_zcdp(self, scores, *, sensitivity, rho):
        return super().select_max_zcdp(scores, sensitivity=sensitivity, rho=rho / self.factor**2)
