"""Privacy costs and their composition.

A :class:`PrivacyCost` is the plain-data record of what one release spends. Budgets compose by
basic sequential composition (sum of epsilons, sum of deltas), computed exactly with
:class:`fractions.Fraction` from the decimal strings users type, so 9 x (1/9) never exceeds 1.

Neighbouring datasets throughout dpportal: one record REPLACED by another (bounded DP); the row
count n is public.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Iterable

NEIGHBOURING = "replace-one (bounded DP): neighbouring tables differ in one replaced record; the row count is public"
GUARANTEES = ("pure", "approximate", "mcmc", "heuristic")
# What each label promises (the ledger and the release page show the label; reports carry the meaning).
GUARANTEE_MEANINGS = {
    "pure": "epsilon-DP, proven for the algorithm as implemented",
    "approximate": "(epsilon, delta)-DP, proven for the algorithm as implemented",
    "mcmc": "epsilon-DP holds for EXACT sampling of the target distribution; the release comes from a finite "
    "Markov chain that only approximates it (no certified bound: if the chain were within total "
    "variation tau of the target on every table, the release would be (epsilon, (1+e^epsilon) tau)-DP)",
    "heuristic": "epsilon is the algorithm's design parameter, NOT a proven guarantee: the implementation is "
    "known to exceed it on some neighbouring tables",
}


# Every epsilon/delta (costs, caps, form and GET values, CLI arguments) goes through ``exact``, so
# these bounds are THE one rule: they are checked on the text or the number BEFORE any arithmetic.
# Exact parsing of "1e30000000" would build a 30-million-digit integer while holding the GIL
# (118 s measured); the bounds make every refusal take microseconds.
MAX_AMOUNT_CHARS = 40  # the web forms' max_length; room for "1/9" or 0.000000001 and more
MAX_AMOUNT_EXPONENT = 30  # non-zero amounts lie in [1e-30, 1e30]: floats stay positive and finite
_AMOUNT_LOW = Fraction(1, 10**MAX_AMOUNT_EXPONENT)
_AMOUNT_HIGH = Fraction(10**MAX_AMOUNT_EXPONENT)


def _out_of_range(value) -> ValueError:
    return ValueError(
        f"expected a number between 1e-{MAX_AMOUNT_EXPONENT} and 1e{MAX_AMOUNT_EXPONENT} "
        f"(or 0), got {short_repr(value)}"
    )


def _bounded(f: Fraction, value) -> Fraction:
    if f != 0 and not _AMOUNT_LOW <= abs(f) <= _AMOUNT_HIGH:
        raise _out_of_range(value)
    return f


def short_repr(value) -> str:
    """repr for error messages, cut short: hostile values can be megabytes (or 30,000-bit integers)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def _decimal(d: Decimal, value) -> Fraction:
    if not d.is_finite():
        raise ValueError(f"expected a finite number, got {short_repr(value)}")
    if d and not -MAX_AMOUNT_EXPONENT - 1 <= d.adjusted() <= MAX_AMOUNT_EXPONENT:  # before Fraction(d)
        raise _out_of_range(value)
    if len(d.as_tuple().digits) > MAX_AMOUNT_CHARS:  # Decimal objects may carry any number of digits
        raise ValueError(f"expected a number of at most {MAX_AMOUNT_CHARS} digits, got {short_repr(value)}")
    return _bounded(Fraction(d), value)


def exact(value) -> Fraction:
    """Parse an epsilon/delta exactly: '0.1' -> 1/10, '1/9' -> 1/9, floats by their decimal repr.

    Bounded before any arithmetic: text of at most ``MAX_AMOUNT_CHARS`` characters, a non-zero
    magnitude in [1e-30, 1e30]; anything else is a ValueError naming the value."""
    if isinstance(value, Fraction):
        return _bounded(value, value)
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int):
        if abs(value) > _AMOUNT_HIGH:  # compares without converting: fast for any size
            raise _out_of_range(value)
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        return _decimal(Decimal(repr(value)), value)
    if isinstance(value, Decimal):
        return _decimal(value, value)
    if isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_AMOUNT_CHARS:
            raise ValueError(f"expected a number of at most {MAX_AMOUNT_CHARS} characters, got {short_repr(value)}")
        _check_amount_text(text, value)
        try:
            if "/" in text:
                num, den = text.split("/", 1)
                return _bounded(Fraction(int(num), int(den)), value)
            d = Decimal(text)
        except (InvalidOperation, ValueError, ZeroDivisionError) as exc:
            if str(exc).startswith("expected"):
                raise
            raise ValueError(f"expected a number, got {short_repr(value)}") from None
        return _decimal(d, value)
    raise ValueError(f"expected a number, got {type(value).__name__}")


# What an amount may look like as text: ASCII digits, one leading sign, a decimal point, an exponent, or a
# fraction of two unsigned integers. Python's own parsers also take "1_0", other scripts' digits ("١") and
# "-1/-1"; these patterns refuse such text, which would otherwise be stored and shown as typed.
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FRACTION_TEXT = re.compile(r"[+-]?[0-9]+/[0-9]+")
_NOT_FINITE_TEXT = re.compile(r"[+-]?(?:nan|snan|inf|infinity)", re.IGNORECASE)


def _check_amount_text(text: str, value) -> None:
    if _DECIMAL_TEXT.fullmatch(text) or _FRACTION_TEXT.fullmatch(text):
        return
    if _NOT_FINITE_TEXT.fullmatch(text):
        raise ValueError(f"expected a finite number, got {short_repr(value)}")
    raise ValueError(
        f"expected a number like 0.5, 1e-6 or 1/9 (digits 0-9; no spaces, underscores or signs "
        f"inside), got {short_repr(value)}"
    )


CANONICAL_FIXED_CHARS = 20  # longer decimals are written with an exponent: 1e-30, not 0.000...1


def canonical(value) -> str:
    """The one text form of an amount, as stored and shown: '+5' -> '5', ' 0.10 ' -> '0.1', '2/4' -> '0.5',
    '1e-5' -> '0.00001', '1e-30' -> '1e-30', '1/3' -> '1/3' (a fraction when no decimal is exact)."""
    f = exact(value)
    den = f.denominator
    while den % 2 == 0:
        den //= 2
    while den % 5 == 0:
        den //= 5
    if den != 1:
        return f"{f.numerator}/{f.denominator}"
    if f.denominator == 1:
        return str(f.numerator) if abs(f.numerator) < 10**CANONICAL_FIXED_CHARS else _scientific(f)
    fixed = _fixed(f)
    return fixed if len(fixed) <= CANONICAL_FIXED_CHARS else _scientific(f)


def _terminating_decimal(f: Fraction) -> Decimal:
    scale = max(_power(f.denominator, 2), _power(f.denominator, 5))  # f x 10**scale is an integer
    return Decimal(f.numerator * 10**scale // f.denominator).scaleb(-scale)


def _power(n: int, p: int) -> int:
    k = 0
    while n % p == 0:
        n //= p
        k += 1
    return k


def _fixed(f: Fraction) -> str:
    return format(_terminating_decimal(f).normalize(), "f")


def _scientific(f: Fraction) -> str:
    mantissa, _, exponent = format(_terminating_decimal(f).normalize(), "e").partition("e")
    return f"{mantissa}e{int(exponent)}"


MAX_EPSILON = 100.0  # the largest epsilon any mechanism accepts (check_epsilon)


def check_epsilon(epsilon, *, maximum: float = MAX_EPSILON) -> float:
    eps = exact(epsilon)
    if eps <= 0:
        raise ValueError(f"epsilon must be positive, got epsilon={epsilon!r}")
    if eps > maximum:
        raise ValueError(f"epsilon must be at most {maximum}, got epsilon={epsilon!r}")
    value = float(eps)
    if not (value > 0 and math.isfinite(value)):  # the float the mechanism computes with
        raise ValueError(f"epsilon must convert to a positive finite float, got epsilon={epsilon!r}")
    return value


def check_delta(delta, *, required: bool) -> float:
    d = exact(delta if delta is not None else 0)
    if d < 0 or d >= 1:
        raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
    if required and d == 0:
        raise ValueError("this mechanism needs a positive delta (approximate DP), got delta=0")
    if not required and d != 0:
        raise ValueError(f"this mechanism is pure epsilon-DP and takes no delta, got delta={delta!r}")
    value = float(d)
    if d > 0 and not value > 0:
        raise ValueError(f"delta must convert to a positive float, got delta={delta!r}")
    return value


# ----------------------------------------------------------------------------------------------
# Typed privacy events: what a release's noise IS, in one vocabulary for every mechanism
# ----------------------------------------------------------------------------------------------
# In the spirit of ``dp_accounting``'s DpEvent classes, with the sensitivity kept beside the noise (the
# platform's neighbours replace one record; every sensitivity is stated for that relation). An event
# describes mechanisms whose privacy loss the accountants know exactly (Gaussian, Laplace, zCDP), or a
# part proven (epsilon, delta)-DP by the mechanism's own argument. ``count`` repeats an event (independent
# draws, composed). Events travel as JSON in the release report (``PrivacyCost.to_dict()["events"]``).


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be positive and finite, got {name}={value!r}")
    return float(value)


def _count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"count must be a positive integer, got count={value!r}")
    return value


@dataclass(frozen=True)
class LaplaceEvent:
    """Laplace noise of ``scale`` (discrete Laplace when ``discrete``) on a query of L1 ``sensitivity``,
    ``count`` times: each is (sensitivity / scale)-DP."""

    scale: float
    sensitivity: float
    count: int = 1
    discrete: bool = False
    label: str = ""
    kind = "laplace"

    def __post_init__(self):
        _positive("scale", self.scale)
        _positive("sensitivity", self.sensitivity)
        _count(self.count)

    @property
    def epsilon(self) -> float:
        return self.count * self.sensitivity / self.scale


@dataclass(frozen=True)
class GaussianEvent:
    """Gaussian noise of standard deviation ``sigma`` (discrete Gaussian when ``discrete``) on a query
    of L2 ``sensitivity``, ``count`` times: each is (sensitivity^2 / (2 sigma^2))-zCDP."""

    sigma: float
    sensitivity: float
    count: int = 1
    discrete: bool = False
    label: str = ""
    kind = "gaussian"

    def __post_init__(self):
        _positive("sigma", self.sigma)
        _positive("sensitivity", self.sensitivity)
        _count(self.count)

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity

    @property
    def rho(self) -> float:
        return self.count / (2 * self.noise_multiplier**2)


@dataclass(frozen=True)
class ExponentialEvent:
    """The exponential mechanism (report noisy max with Gumbel noise), ``count`` times: each is
    ``epsilon``-DP and (epsilon^2 / 8)-zCDP (Cesar & Rogers 2021)."""

    epsilon: float
    count: int = 1
    label: str = ""
    kind = "exponential"

    def __post_init__(self):
        _positive("epsilon", self.epsilon)
        _count(self.count)

    @property
    def rho(self) -> float:
        return self.count * self.epsilon**2 / 8


@dataclass(frozen=True)
class ZCDPEvent:
    """A mechanism proven ``rho``-zCDP, ``count`` times (e.g. the exponential mechanism as Gumbel noisy
    max: eps^2 / 8)."""

    rho: float
    count: int = 1
    label: str = ""
    kind = "zcdp"

    def __post_init__(self):
        _positive("rho", self.rho)
        _count(self.count)


@dataclass(frozen=True)
class EpsilonDeltaEvent:
    """A part proven (``epsilon``, ``delta``)-DP by the mechanism's own argument (no finer description)."""

    epsilon: float
    delta: float = 0.0
    count: int = 1
    label: str = ""
    kind = "epsilon_delta"

    def __post_init__(self):
        _positive("epsilon", self.epsilon)
        _count(self.count)
        if isinstance(self.delta, bool) or not isinstance(self.delta, (int, float)) or not 0 <= self.delta < 1:
            raise ValueError(f"delta must be in [0, 1), got delta={self.delta!r}")


@dataclass(frozen=True)
class SubsampledEvent:
    """``event`` run on a Poisson subsample: each record is included with ``probability``."""

    probability: float
    event: "PrivacyEvent"
    label: str = ""
    kind = "subsampled"

    def __post_init__(self):
        if not isinstance(self.event, EVENT_CLASSES):
            raise ValueError(f"a subsampled event needs an event, got {short_repr(self.event)}")
        if not 0 < self.probability <= 1:
            raise ValueError(f"probability must be in (0, 1], got probability={self.probability!r}")


@dataclass(frozen=True)
class ComposedEvent:
    """``events`` run on the same table, composed."""

    events: tuple = ()
    label: str = ""
    kind = "composed"

    def __post_init__(self):
        object.__setattr__(self, "events", _checked_events(self.events))


PrivacyEvent = (
    LaplaceEvent | GaussianEvent | ExponentialEvent | ZCDPEvent | EpsilonDeltaEvent | SubsampledEvent | ComposedEvent
)
EVENT_CLASSES = (
    LaplaceEvent,
    GaussianEvent,
    ExponentialEvent,
    ZCDPEvent,
    EpsilonDeltaEvent,
    SubsampledEvent,
    ComposedEvent,
)
EVENT_KINDS = {c.kind: c for c in EVENT_CLASSES}


def _checked_events(events) -> tuple:
    events = tuple(events)
    bad = [e for e in events if not isinstance(e, EVENT_CLASSES)]
    if bad:
        raise ValueError(f"privacy events must be event objects (LaplaceEvent, ...), got {short_repr(bad[0])}")
    return events


def event_to_dict(event: PrivacyEvent) -> dict:
    """JSON form: {"kind": ..., fields...}; nested events for composed and subsampled ones."""
    out: dict = {"kind": event.kind}
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name == "events":
            value = [event_to_dict(e) for e in value]
        elif f.name == "event":
            value = event_to_dict(value)
        out[f.name] = value
    return out


def event_from_dict(data: dict) -> PrivacyEvent:
    """The event a JSON form describes; ValueError naming the problem for anything else."""
    if not isinstance(data, dict) or data.get("kind") not in EVENT_KINDS:
        raise ValueError(f"not a privacy event: {short_repr(data)}")
    cls = EVENT_KINDS[data["kind"]]
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names - {"kind"}
    if unknown:
        raise ValueError(f"a {data['kind']} event has no field(s) {sorted(unknown)}")
    kw = {k: v for k, v in data.items() if k != "kind"}
    if "events" in kw:
        if not isinstance(kw["events"], list):
            raise ValueError("a composed event's events must be a list")
        kw["events"] = tuple(event_from_dict(e) for e in kw["events"])
    if "event" in kw:
        kw["event"] = event_from_dict(kw["event"])
    try:
        return cls(**kw)
    except TypeError as exc:
        raise ValueError(f"a {data['kind']} event: {exc}") from None


def flat_events(events) -> list[PrivacyEvent]:
    """The leaves of ``events`` (composed events opened, subsampled ones kept whole)."""
    out: list = []
    for e in events:
        out.extend(flat_events(e.events) if isinstance(e, ComposedEvent) else [e])
    return out


def gaussian_events(sigmas, *, sensitivity: float, discrete: bool = False, label: str = "") -> tuple:
    """One :class:`GaussianEvent` per distinct noise std in ``sigmas`` (first-seen order), counting the
    queries measured with it."""
    counts: dict[float, int] = {}
    for s in sigmas:
        counts[float(s)] = counts.get(float(s), 0) + 1
    return tuple(GaussianEvent(s, sensitivity, count=k, discrete=discrete, label=label) for s, k in counts.items())


def exponential_epsilon(*, sensitivity: float, rho: float) -> float:
    """The epsilon of a noisy max at ``rho``-zCDP (``Noise.select_max_zcdp``): its Gumbel scale is
    sensitivity / sqrt(2 rho), so it is 2 sensitivity / scale = sqrt(8 rho)-DP; ``sensitivity`` only
    cancels out, kept to make the call read like the sampler's."""
    _positive("sensitivity", sensitivity)
    return math.sqrt(8 * _positive("rho", rho))


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends, with the honest fine print."""

    epsilon: float
    delta: float = 0.0
    guarantee: str = "pure"
    caveats: tuple[str, ...] = ()
    neighbouring: str = NEIGHBOURING
    details: dict = field(default_factory=dict)  # e.g. budget split, noise scales (public), for display
    events: tuple = ()  # typed privacy events (LaplaceEvent, GaussianEvent, ...): what the ledger accounts

    def __post_init__(self):
        object.__setattr__(self, "events", _checked_events(self.events))
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be positive, got epsilon={self.epsilon!r}")
        if not (0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got delta={self.delta!r}")
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"guarantee must be one of {GUARANTEES}, got {self.guarantee!r}")
        if self.guarantee != "approximate" and self.delta != 0:
            raise ValueError(f"a {self.guarantee} guarantee has delta = 0, got delta={self.delta!r}")

    def to_dict(self) -> dict:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "guarantee": self.guarantee,
            "guarantee_meaning": GUARANTEE_MEANINGS[self.guarantee],
            "caveats": list(self.caveats),
            "neighbouring": self.neighbouring,
            "details": self.details,
            "events": [event_to_dict(e) for e in self.events],
        }


def compose_basic(costs: Iterable[tuple]) -> tuple[Fraction, Fraction]:
    """Basic sequential composition, exact: sums of (epsilon, delta) pairs."""
    eps, delta = Fraction(0), Fraction(0)
    for e, d in costs:
        eps += exact(e)
        delta += exact(d)
    return eps, delta


def split_budget(epsilon: float, weights: Iterable[float]) -> list[float]:
    """Split epsilon in proportion to weights so that the parts never sum above epsilon."""
    w = [float(x) for x in weights]
    if not w or any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {w}")
    total = sum(w)
    parts = [epsilon * x / total for x in w]
    # float rounding can make the exact sum a hair larger than epsilon: nudge parts down until it is not
    budget = Fraction(epsilon)
    while sum(Fraction(p) for p in parts) > budget:
        i = max(range(len(parts)), key=parts.__getitem__)
        parts[i] = math.nextafter(parts[i], 0.0)
    return parts


# ----------------------------------------------------------------------------------------------
# Gaussian mechanism calibration (RDP through dp-accounting; PLD as a cross-check)
# ----------------------------------------------------------------------------------------------
# A release of k Gaussian mechanisms, each with noise standard deviation = sigma x (its L2
# sensitivity), i.e. each with "noise multiplier" sigma. Each one is rho-zCDP with rho = 1/(2 sigma^2),
# equivalently (alpha, alpha/(2 sigma^2))-RDP for every alpha > 1. That holds for the continuous
# Gaussian and for the discrete (lattice) Gaussian that OpenDP samples (Canonne, Kamath & Steinke
# 2020; OpenDP's privacy map returns exactly rho = sensitivity^2 / (2 scale^2)), so the RDP
# accountant is the sound one to calibrate with. The PLD accountant treats the noise as the
# continuous Gaussian: tighter, used here only as a second opinion (cross-check in tests).

_SIGMA_BRACKET = (1e-3, 1e7)  # noise multipliers searched by bisection
_SIGMA_REL_TOL = 1e-9


def _check_gaussian_args(epsilon: float, delta: float, count: int) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be positive and finite, got epsilon={epsilon!r}")
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got delta={delta!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got count={count!r}")


def _gaussian_epsilon(accountant, noise_multiplier: float, delta: float, count: int) -> float:
    from dp_accounting import dp_event

    if not (noise_multiplier > 0 and math.isfinite(noise_multiplier)):
        raise ValueError(f"noise_multiplier must be positive and finite, got noise_multiplier={noise_multiplier!r}")
    _check_gaussian_args(1.0, delta, count)
    accountant.compose(dp_event.GaussianDpEvent(float(noise_multiplier)), count)
    return float(accountant.get_epsilon(delta))


def gaussian_rdp_epsilon(noise_multiplier: float, delta: float, *, count: int = 1) -> float:
    """epsilon at ``delta`` of ``count`` composed Gaussian mechanisms with this noise multiplier,
    by the RDP accountant of ``dp_accounting`` (its improved RDP -> (eps, delta) conversion)."""
    from dp_accounting import rdp

    return _gaussian_epsilon(rdp.RdpAccountant(), noise_multiplier, delta, count)


def gaussian_pld_epsilon(noise_multiplier: float, delta: float, *, count: int = 1) -> float:
    """Second opinion: epsilon at ``delta`` by the privacy-loss-distribution accountant of
    ``dp_accounting`` (near-exact for the continuous Gaussian; never above the RDP value)."""
    from dp_accounting import pld

    return _gaussian_epsilon(pld.PLDAccountant(), noise_multiplier, delta, count)


def calibrate_gaussian_rdp(epsilon: float, delta: float, *, count: int = 1) -> float:
    """Smallest noise multiplier sigma (to a relative 1e-9, rounded UP) such that ``count``
    Gaussian mechanisms, each with noise std sigma x sensitivity, are (epsilon, delta)-DP together
    by the RDP accountant. Bisection on the monotone map sigma -> epsilon."""
    _check_gaussian_args(epsilon, delta, count)
    lo, hi = _SIGMA_BRACKET
    if gaussian_rdp_epsilon(hi, delta, count=count) > epsilon:
        raise ValueError(f"epsilon={epsilon!r} at delta={delta!r} needs a noise multiplier above {hi:g}")
    while hi / lo - 1 > _SIGMA_REL_TOL:
        mid = math.sqrt(lo * hi)
        if gaussian_rdp_epsilon(mid, delta, count=count) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi  # the upper end always satisfies the target


# ----------------------------------------------------------------------------------------------
# zCDP (AIM, MST, the Gaussian modes): rho-zCDP inside one release, converted to (epsilon, delta)
# ----------------------------------------------------------------------------------------------
# A mechanism that is rho-zCDP (Bun & Steinke 2016) is (epsilon, delta)-DP for
#     delta = inf_{alpha > 1}  exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha
# (Canonne, Kamath & Steinke 2020, Proposition 12 / Corollary 13: the tight conversion that
# Private-PGM's cdp2adp and OpenDP's make_zCDP_to_approxDP also use). The steward gives (epsilon,
# delta); the mechanism spends the LARGEST rho whose conversion is within them; the ledger records
# the steward's (epsilon, delta). Composition inside a release: rho adds up (Gaussian measurement
# with L2 sensitivity D and noise std sigma: rho = D^2 / (2 sigma^2); exponential mechanism that is
# eps-DP: eps^2 / 8, Cesar & Rogers 2021).

_RHO_REL_TOL = 1e-12


def _check_rho(rho: float) -> None:
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"rho must be positive and finite, got rho={rho!r}")


def _zcdp_log_delta(rho: float, epsilon: float, alpha: float) -> float:
    return (alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP (the CKS20 bound above).

    The exponent is convex in alpha; its derivative (2 alpha - 1) rho - epsilon + log(1 - 1/alpha)
    is increasing, so its root (the optimal alpha) is found by bisection."""
    _check_rho(rho)
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be non-negative and finite, got epsilon={epsilon!r}")

    def slope(a: float) -> float:
        return (2 * a - 1) * rho - epsilon + math.log1p(-1 / a)

    lo, hi = 1.0 + 1e-12, 2.0
    while slope(hi) < 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    alpha = max(hi, 1.0 + 1e-9)
    return min(1.0, math.exp(_zcdp_log_delta(rho, epsilon, alpha)))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP (bisection on zcdp_delta)."""
    _check_rho(rho)
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got delta={delta!r}")
    lo, hi = 0.0, rho + 2 * math.sqrt(rho * math.log(1 / delta))  # the simple bound is always enough
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if zcdp_delta(rho, mid) <= delta else (mid, hi)
    return hi


def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest rho (to a relative 1e-12, rounded DOWN) such that rho-zCDP implies (epsilon, delta)-DP.

    zcdp_delta is increasing in rho, so bisection; the lower end always satisfies the target."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be positive and finite, got epsilon={epsilon!r}")
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) for zCDP accounting, got delta={delta!r}")
    lo, hi = 0.0, epsilon + 1.0
    while hi - lo > _RHO_REL_TOL * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if zcdp_delta(mid, epsilon) <= delta else (lo, mid)
    if lo <= 0:
        raise ValueError(f"epsilon={epsilon!r} at delta={delta!r} leaves no zCDP budget")
    return lo
