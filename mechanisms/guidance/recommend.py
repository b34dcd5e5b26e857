"""Recommend a mechanism and an epsilon for a stated purpose, from PUBLIC information only.

Inputs: the steward-confirmed :class:`~mechanisms.schema.Schema`, the public row count n, epsilon,
delta and a :class:`Purpose` (what analysts will do). Nothing here reads a table: two tables with the
same schema and n get the same recommendation and the same accuracy curve (tested).

For every mechanism that supports the schema, :func:`predict` gives the expected 1-way TVD of each
column and the expected 2-way TVD of each pair of interest, the same metrics the steward's dashboard
measures afterwards (``mechanisms.evaluation``: total variation distance between the real and the
synthetic cell shares on the schema's public cells). Each prediction has two kinds of ingredients,
kept apart and listed in the prediction itself (``modelled`` and ``priors``):

* **modelled** from the mechanism's own noise calibration: the noise scale each released count gets
  for this n, epsilon, delta and schema (e.g. the baseline's discrete Laplace scale 2d/epsilon per
  1-way cell, density-lp's 2T/((1 - split) epsilon) per marginal cell), turned into an expected TVD
  over the public cells: E|noise| per cell summed over the cells, divided by 2n;
* **priors** for what cannot be known without the data, with their value and where it comes from:
  how concentrated the columns are (the sampling error of n synthetic rows), how far the data is
  from independence (the 2-way error of a mechanism that samples columns independently), the error
  a model keeps when the noise vanishes, and where the error saturates once noise swamps the counts.
  Their values were read off the measured benchmark of the six shared tables
  (``docs/data/benchmarks-full.json``, ``docs/benchmarks.md``): the fitted ones are the choice of
  ``python -m benchmarks.recommend_calibration --fit`` (a grid search); ``docs/recommend.md``
  reports predicted against measured errors, also with each table held out of the fit.

Mechanisms whose output is predicted to be near-uniform on this schema (kdtree-grid,
kdtree-adaptive, privhp on wide or large-domain tables; pmse beyond three numeric columns; the
baseline for a model-training purpose, as it synthesises columns independently) get the status
``would-fail`` with the reason; they are listed last and the web form asks for an explicit
confirmation before running one.

The predictor is a table name -> function (:data:`PREDICTORS`); a mechanism without an entry gets
:func:`_predict_unknown` (no numeric prediction, listed after the modelled ones). New mechanisms
plug in with :func:`register`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from .. import accounting, registry
from . import model_quality
from ..schema import Schema

# -- priors (not knowable from public information; values from the shared tables' benchmark) -----------
# Where a TVD saturates when noise swamps every count: the output is then close to uniform over the
# public cells. Measured for near-uniform outputs (kdtree-grid / privhp fallbacks) on the six shared
# tables: 1-way TVD 0.37-0.68, 2-way 0.50-0.88 (docs/benchmarks.md finding 4).
SATURATION_1WAY = 0.5
SATURATION_2WAY = 0.7
# Real columns are not spread evenly over their public cells: the sampling error of n synthetic rows
# over K cells is taken as CONCENTRATION x its value for uniform shares, sqrt(K / (2 pi n)) (fitted).
CONCENTRATION = 0.6
# 2-way TVD between a pair's joint distribution and the product of its margins (the error of any
# mechanism that samples columns independently, whatever the epsilon). Measured as the baseline's
# 2-way TVD at epsilon 10 on the six shared tables: 0.048-0.084 (fitted: 0.07).
INDEPENDENCE_PENALTY = 0.06
# Fallback for a mechanism with no predictor.
UNKNOWN_NOTE = "no accuracy model for this mechanism yet: run it on a small budget and check the dashboard"

# -- rules for near-uniform output ---------------------------------------------------------------------
# kdtree-grid, kdtree-adaptive and privhp cut the JOINT public domain. Measured near-uniform (1-way TVD
# 0.3-0.6 at every epsilon) on all six shared tables, 9-24 columns, joint domains of 10^9-10^20 cells
# (docs/benchmarks.md finding 4); they reproduce their papers on low-dimensional numeric data.
JOINT_MAX_COLUMNS = 8
JOINT_CELLS_PER_ROW = 0.1  # joint cells must stay below this many per (n epsilon) for the grid to fill
# pmse: the one-split utility sees one direction; measured 2-way TVD 0.75-0.77 on 9 numeric columns
# (docs/benchmarks.md finding 7; also PMSEMechanism.advice).
PMSE_MAX_NUMERIC = 3
# Model training: columns synthesised independently carry no signal about the target; the baseline's
# measured TSTR is 0.45-0.54 ROC AUC (chance) on the five labelled shared tables.
# Mechanisms that model the table around the ml target: DP-MERF's label-conditional mode (best or within
# 10% TSTR among the first seven on the shared tables, finding 5) and AIM with the workload of every
# marginal that contains the target (ahead of DP-MERF on TSTR in the grid run: docs/recommend.md).
ML_PREFERRED = ("aim", "dpmerf")
ML_PARAMS = {"aim": {"workload": "target"}}  # what "model around the target" means for each of them

# Predictions within this fraction of the best are a tie (they are approximate: docs/recommend.md); the
# faster mechanism wins a tie. Release times measured in docs/benchmarks.md ("Time and memory"):
# baseline, kdtree-grid, kdtree-adaptive, privhp 1-5 s; density-lp 1-81 s; DP-MERF 11-98 s; pmse 39-84 s;
# SmartNoise's MST 14-74 s and AIM 139-365 s (dpportal's own: same algorithms on Private-PGM).
TIE_MARGIN = 0.05  # 0.10 before AIM and MST: it sent california_housing at 0.1 to the Gaussian baseline (0.121) over MST (0.096)
FASTEST_FIRST = ("baseline", "kdtree-grid", "kdtree-adaptive", "privhp", "density-lp", "dpmerf", "mst", "pmse", "aim")

PURPOSES = ("explore", "marginals", "ml")
STATUSES = ("recommended", "ok", "would-fail", "unavailable")


# ------------------------------------------------------------------------------------------------------
# Value objects
# ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Purpose:
    """What analysts will do with the synthetic table.

    ``explore``: the whole table (every pair); ``marginals``: cross-tabulations of ``pairs`` (empty =
    all pairs); ``ml``: train models predicting ``target``. ``larger_than_memory``: the table does not
    fit in the worker's memory, so only streaming mechanisms can run.
    """

    kind: str = "explore"
    target: str | None = None
    pairs: tuple[tuple[str, str], ...] = ()
    larger_than_memory: bool = False

    def __post_init__(self):
        if self.kind not in PURPOSES:
            raise ValueError(f"purpose must be one of {list(PURPOSES)}, got purpose={self.kind!r}")
        if self.kind == "ml" and not self.target:
            raise ValueError("purpose 'ml' needs a target column (the column models will predict)")

    def check(self, schema: Schema) -> None:
        """Every named column must be a kept column of the schema."""
        names = set(schema.names)
        if self.target is not None and self.target not in names:
            raise ValueError(f"target must name a kept column of the schema, got target={self.target!r}")
        for a, b in self.pairs:
            for c in (a, b):
                if c not in names:
                    raise ValueError(f"pair ({a!r}, {b!r}): {c!r} is not a kept column of the schema")
            if a == b:
                raise ValueError(f"a pair needs two different columns, got ({a!r}, {b!r})")

    def pairs_of_interest(self, schema: Schema) -> list[tuple[int, int]]:
        names = schema.names
        index = {n: i for i, n in enumerate(names)}
        if self.kind == "ml":
            t = index[self.target]
            return [(min(t, j), max(t, j)) for j in range(len(names)) if j != t]
        if self.kind == "marginals" and self.pairs:
            return sorted({(min(index[a], index[b]), max(index[a], index[b])) for a, b in self.pairs})
        return list(itertools.combinations(range(len(names)), 2))

    def describe(self) -> str:
        if self.kind == "ml":
            return f"train models that predict {self.target}"
        if self.kind == "marginals":
            return ("cross-tabulate " + ", ".join(f"{a} x {b}" for a, b in self.pairs)) if self.pairs \
                else "cross-tabulate every pair of columns"
        return "explore the whole table"

    def to_dict(self) -> dict:
        return {"purpose": self.kind, "target": self.target, "pairs": [list(p) for p in self.pairs],
                "larger_than_memory": self.larger_than_memory, "description": self.describe()}

    @classmethod
    def parse(cls, kind: str | None, *, target: str | None = None, pairs: str | Sequence | None = None,
              larger_than_memory: bool = False) -> "Purpose":
        """From form / query / CLI text: ``pairs`` as 'a:b, c:d' (or a list of 2-item sequences)."""
        kind = (kind or "explore").strip()
        parsed: list[tuple[str, str]] = []
        if isinstance(pairs, str):
            for item in filter(None, (p.strip() for p in pairs.replace(";", ",").split(","))):
                a, sep, b = item.partition(":")
                if not sep or not a.strip() or not b.strip():
                    raise ValueError(f"pairs are written column:column, separated by commas; got {item!r}")
                parsed.append((a.strip(), b.strip()))
        elif pairs:
            for p in pairs:
                if not isinstance(p, (list, tuple)) or len(p) != 2 or not all(isinstance(c, str) for c in p):
                    raise ValueError(f"each pair must be two column names, got {p!r}")
                parsed.append((p[0], p[1]))
        return cls(kind=kind, target=(target or "").strip() or None, pairs=tuple(parsed),
                   larger_than_memory=bool(larger_than_memory))


@dataclass(frozen=True)
class Setting:
    """The public facts a prediction may use."""

    schema: Schema
    n: int
    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"rows must be a positive integer, got rows={self.n!r}")
        if not (isinstance(self.epsilon, (int, float)) and math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon must be positive and finite, got epsilon={self.epsilon!r}")
        if not (isinstance(self.delta, (int, float)) and 0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got delta={self.delta!r}")

    @functools.cached_property
    def sizes(self) -> list[int]:
        return self.schema.cell_sizes

    @functools.cached_property
    def d(self) -> int:
        return len(self.schema.kept)

    @functools.cached_property
    def pair_key(self) -> list[tuple]:
        """What a pair's predicted error may depend on: each column's cell count and kind."""
        return [(k, c.kind) for k, c in zip(self.sizes, self.schema.kept)]

    def with_epsilon(self, epsilon: float) -> "Setting":
        return Setting(self.schema, self.n, epsilon, self.delta)


@dataclass
class Errors:
    """A mechanism's predicted errors: 1-way TVD per kept column, 2-way TVD for any pair (i < j).
    ``two_way`` may depend on a pair only through its columns' cell counts and kinds (it is cached on
    them, so that tables with hundreds of columns stay fast)."""

    one_way: list[float]
    two_way: Callable[[int, int], float]
    modelled: str
    priors: list[str] = field(default_factory=list)


@dataclass
class Prediction:
    mechanism: str
    title: str
    status: str
    reason: str = ""
    tvd_1way: float | None = None
    tvd_2way: float | None = None
    score: float | None = None  # the purpose's metric: mean predicted 2-way TVD over its pairs
    modelled: str = ""
    priors: list[str] = field(default_factory=list)
    label_conditional: bool = False  # models the other columns given the ml target
    params: dict = field(default_factory=dict)  # parameters the prediction assumes beyond the defaults
    model_quality: dict | None = None  # "train a model": measured TSTR AUC reference (model_quality.reference)

    def to_dict(self) -> dict:
        def r(x):
            return None if x is None else round(x, 4)
        return {"mechanism": self.mechanism, "title": self.title, "status": self.status, "reason": self.reason,
                "predicted_tvd_1way": r(self.tvd_1way), "predicted_tvd_2way": r(self.tvd_2way),
                "score": r(self.score), "modelled": self.modelled, "priors": self.priors, "params": self.params,
                "label_conditional": self.label_conditional, "model_quality": self.model_quality}


@dataclass
class Recommendation:
    setting: Setting
    purpose: Purpose
    items: list[Prediction]
    recommended: str | None
    reason: str

    @property
    def metric(self) -> str:
        if self.purpose.kind == "ml":
            return f"mean 2-way TVD of {self.purpose.target} with every other column"
        if self.purpose.kind == "marginals" and self.purpose.pairs:
            return "mean 2-way TVD over the named pairs"
        return "mean 2-way TVD over all pairs"

    @property
    def ranking(self) -> str:
        """How the table is sorted: the measure that decides the recommendation, in words."""
        last = "; mechanisms predicted to fail come last, then those that cannot run"
        tie = (f"; a faster mechanism predicted within {TIE_MARGIN:.0%} of the lowest error is recommended over it "
               "and listed first")
        if self.purpose.kind == "ml":
            return (f"Sorted first by whether the mechanism models the other columns given {self.purpose.target} "
                    "(for training models this decides: models trained on such output scored best on the shared "
                    "tables), then by predicted error, lowest first" + tie + last + ".")
        return "Sorted by predicted error, lowest first" + tie + last + "."

    @property
    def model_note(self) -> str | None:
        """For "train a model": why model accuracy is shown as measured reference figures."""
        if self.purpose.kind != "ml":
            return None
        column = self.setting.schema.column(self.purpose.target)
        return model_quality.note(self.purpose.target, None if column.is_numeric else len(column.categories))

    def get(self, name: str) -> Prediction | None:
        return next((p for p in self.items if p.mechanism == name), None)

    def to_dict(self) -> dict:
        return {"rows": self.setting.n, "epsilon": self.setting.epsilon, "delta": self.setting.delta,
                **self.purpose.to_dict(), "metric": self.metric, "recommended": self.recommended,
                "reason": self.reason, "ranking": self.ranking, "public_inputs_only": True,
                "model_quality_note": self.model_note,
                "mechanisms": [p.to_dict() for p in self.items]}


# ------------------------------------------------------------------------------------------------------
# Shared building blocks
# ------------------------------------------------------------------------------------------------------

def soft_cap(raw: float, saturation: float) -> float:
    """Smooth cap: ~raw while raw << saturation, -> saturation as raw grows."""
    return saturation * (1.0 - math.exp(-max(raw, 0.0) / saturation))


def sampling_tvd(cells: int, n: int) -> float:
    """Expected TVD of n synthetic rows drawn from a distribution over ``cells`` cells (prior:
    CONCENTRATION x the uniform-share value sqrt(K / (2 pi n)))."""
    return CONCENTRATION * math.sqrt(cells / (2 * math.pi * n))


def noise_tvd(cells: int, mean_abs_noise: float, n: int) -> float:
    """Expected TVD from independent noise on every count of a table of ``cells`` cells: the sum of
    E|noise| over the cells divided by 2n (the shares' error)."""
    return 0.5 * cells * mean_abs_noise / n


def rss(*parts: float) -> float:
    return math.sqrt(sum(p * p for p in parts))


@functools.lru_cache(maxsize=4096)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """The rho-zCDP a Gaussian mechanism gets for (epsilon, delta): the mechanisms' own conversion
    (:func:`mechanisms.accounting.zcdp_rho`, Canonne, Kamath & Steinke 2020), so a prediction's noise is
    the release's. (Bun & Steinke's eps = rho + 2 sqrt(rho log(1/delta)) would give half the rho at
    epsilon 0.1 and delta 1e-5: Gaussian-mode predictions 1.4x the noise the release adds.)"""
    if delta <= 0:
        raise ValueError("a Gaussian mechanism needs delta > 0")
    return accounting.zcdp_rho(epsilon, delta)


@functools.lru_cache(maxsize=4096)
def gaussian_rdp_sigma(epsilon: float, delta: float, count: int) -> float:
    """DP-MERF's noise multiplier: its own RDP calibration (accounting.calibrate_gaussian_rdp)."""
    return accounting.calibrate_gaussian_rdp(epsilon, delta, count=count)


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


SAT_PRIOR = f"saturation {SATURATION_1WAY} (1-way) / {SATURATION_2WAY} (2-way) once noise swamps the counts"
SAMPLING_PRIOR = (f"sampling error of n synthetic rows: {CONCENTRATION} x sqrt(cells / (2 pi n)) "
                  "(columns less spread than uniform)")


def sampling_share(sampling: float | Callable[[int, int], float], cells: int, n: int) -> float:
    """The share of i.i.d. sampling error a sampler leaves on a table of ``cells`` cells: a constant, or
    a function of (cells, n) (:func:`stratified_share`)."""
    return sampling(cells, n) if callable(sampling) else sampling


def _independent_columns(s: Setting, one_way: list[float],
                         sampling: float | Callable[[int, int], float] = 1.0) -> Callable[[int, int], float]:
    """2-way TVD of a mechanism that samples columns independently: noise of both margins, the
    sampling error over the pair's cells (x ``sampling``, the share its sampler leaves) and the
    independence penalty (a prior)."""
    sizes = s.sizes

    def two_way(i: int, j: int) -> float:
        cells = sizes[i] * sizes[j]
        raw = rss(one_way[i] + one_way[j], INDEPENDENCE_PENALTY,
                  sampling_share(sampling, cells, s.n) * sampling_tvd(cells, s.n))
        return soft_cap(raw, SATURATION_2WAY)
    return two_way


# ------------------------------------------------------------------------------------------------------
# Per-mechanism predictors (public inputs only)
# ------------------------------------------------------------------------------------------------------

GAUSSIAN = "gaussian"  # a choice value that switches a mechanism to Gaussian (zCDP) measurements


def gaussian_mode(params: dict) -> bool:
    """True when a parameter selects Gaussian noise (whatever the mechanism calls that parameter)."""
    return any(v == GAUSSIAN for v in params.values())


def _count_noise(s: Setting, params: dict, *, tables: int, epsilon: float, rho_share: float) -> tuple[float, str]:
    """E|noise| on each count of ``tables`` count vectors sharing a budget, and its description.

    Laplace (pure): L1 sensitivity 2 per vector, so scale 2 x tables / epsilon (basic composition).
    Gaussian (zCDP): L2 sensitivity sqrt(2) per vector, so sigma = sqrt(tables / rho') with
    rho' = rho_share x rho(epsilon, delta); E|N(0, sigma)| = sigma sqrt(2 / pi)."""
    if gaussian_mode(params) and s.delta > 0:
        sigma = math.sqrt(tables / (rho_share * zcdp_rho(s.epsilon, s.delta)))
        return sigma * math.sqrt(2 / math.pi), f"Gaussian noise sigma = {sigma:.3g} (zCDP)"
    b = 2 * tables / epsilon
    return b, f"discrete Laplace of scale {b:.3g}"


def predict_baseline(s: Setting, params: dict) -> Errors:
    """Each column's histogram gets discrete Laplace of scale b = 2d/epsilon (epsilon/d per column,
    L1 sensitivity 2); E|noise| ~ b per cell (the discrete Laplace's mean absolute value is within 1%
    of b for b >= 2). In Gaussian mode, sigma = sqrt(d / rho). Columns are sampled independently."""
    b, note = _count_noise(s, params, tables=s.d, epsilon=s.epsilon, rho_share=1.0)
    one = [soft_cap(rss(noise_tvd(k, b, s.n), sampling_tvd(k, s.n)), SATURATION_1WAY) for k in s.sizes]
    return Errors(one, _independent_columns(s, one),
                  modelled=f"{note} on every 1-way cell (d = {s.d} histograms)",
                  priors=[SAMPLING_PRIOR, f"independence penalty {INDEPENDENCE_PENALTY} on every pair", SAT_PRIOR])


# density-lp: the LP fits all 1- and 2-way tables jointly, so its error per cell is a fraction of the
# noise per cell (consistency across the T tables removes part of it). Fitted on the shared tables'
# benchmark (docs/recommend.md): error = LP_GAIN x noise TVD ^ LP_POWER + LP_FLOOR.
LP_GAIN = 0.16  # 1-way (at d = LP_WIDTH_REF columns)
LP_GAIN_2WAY = 0.1  # 2-way cells: the LP's consistency across overlapping tables removes more noise there
LP_POWER = 0.5
LP_FLOOR_1WAY = 0.002
LP_FLOOR_2WAY = 0.03
# A column's 1-way marginal is constrained by its own table and by the d - 1 pair tables that contain it:
# the wider the table, the more noisy views of it the LP reconciles (d independent views would divide the
# noise by sqrt(d): power 0.5). The 1-way gain is scaled by (LP_WIDTH_REF / d) ^ LP_WIDTH_POWER, the power
# fitted on the shared tables' run (grid 0-1: 0.6). Without it, 1-way predictions are
# 1.35-2.1x the measured error on the widest tables (bank_marketing 17 columns, credit_default_taiwan 24)
# and 0.7x on the 9-column california_housing_numeric.
LP_WIDTH_REF = 10
LP_WIDTH_POWER = 0.6


def predict_density_lp(s: Setting, params: dict) -> Errors:
    """Every 1- and 2-way marginal count gets discrete Laplace of scale 2T/eps_lp, T = d + d(d-1)/2
    tables, eps_lp = (1 - split) epsilon (the reference measure takes the rest; 'uniform' takes none)."""
    degree = int(params.get("degree") or 2)
    split = float(params.get("split") or 0.5)
    if params.get("reference") == "uniform":
        split = 0.0
    d = s.d
    T = sum(math.comb(d, k) for k in range(1, min(degree, d) + 1))
    b, note = _count_noise(s, params, tables=T, epsilon=(1 - split) * s.epsilon, rho_share=1 - split)
    sizes = s.sizes

    def link(raw: float, gain: float, floor: float, sat: float) -> float:
        return soft_cap(gain * raw ** LP_POWER + floor, sat)

    # the LP reweights points drawn from the reference measure: with a product reference (the d noisy
    # 1-way marginals, split of the budget; what 'auto' picks beyond HISTOGRAM_MAX_CELLS joint cells), once
    # the LP's own noise swamps a table (noise TVD >= 1: more noise than records) its error there is that
    # reference's or worse (measured: german_credit at 0.1, Gaussian mode, 2-way 0.55); the floor is
    # phased in with the noise TVD, so where the LP's tables are informative it corrects the reference
    from ..synthesizers.density_lp import HISTOGRAM_MAX_CELLS  # the mechanism's own rule (imported here: scipy)

    product = split > 0 and (params.get("reference") == "product" or (
        params.get("reference", "auto") == "auto" and math.prod(sizes) > HISTOGRAM_MAX_CELLS))
    if product:
        b_ref, _ = _count_noise(s, params, tables=d, epsilon=split * s.epsilon, rho_share=split)
        ref = [soft_cap(rss(noise_tvd(k, b_ref, s.n), sampling_tvd(k, s.n)), SATURATION_1WAY) for k in sizes]
        ref_two = _independent_columns(s, ref)

    def floored(raw: float, lp: float, ref: float) -> float:
        return lp + min(raw, 1.0) * max(ref - lp, 0.0) if product else lp

    raw_one = [noise_tvd(k, b, s.n) for k in sizes]
    gain_one = LP_GAIN * (LP_WIDTH_REF / d) ** LP_WIDTH_POWER
    one = [floored(raw, link(raw, gain_one, LP_FLOOR_1WAY, SATURATION_1WAY), ref[i] if product else 0.0)
           for i, raw in enumerate(raw_one)]

    def two_way(i: int, j: int) -> float:
        if degree < 2:
            return _independent_columns(s, one)(i, j)
        raw = noise_tvd(sizes[i] * sizes[j], b, s.n)
        lp = link(raw, LP_GAIN_2WAY, LP_FLOOR_2WAY, SATURATION_2WAY)
        return floored(raw, lp, ref_two(i, j) if product else 0.0)
    return Errors(one, two_way,
                  modelled=f"{note} on every marginal cell (T = {T} tables)"
                           + (f"; floored by its product reference ({split:g} of the budget) where that noise swamps" if product else ""),
                  priors=[f"LP consistency gain: error = {LP_GAIN} x ({LP_WIDTH_REF}/d)^{LP_WIDTH_POWER} (1-way) / {LP_GAIN_2WAY} (2-way) x (noise "
                          f"TVD)^{LP_POWER} + floor {LP_FLOOR_1WAY}/{LP_FLOOR_2WAY} (fitted on the shared tables)",
                          SAT_PRIOR])


# dpmerf: the released embedding's noise relative to its unit-norm signal, sigma x Delta x sqrt(D),
# maps to TVD through a link fitted on the shared tables; the floor is the generator's error with
# no noise (measured 0.04-0.13 1-way at epsilon 10: model capacity, not privacy), larger when most
# columns are numeric (random Fourier features of many numeric columns); 2-way errors are a fixed
# multiple of 1-way ones (fitted: 2.2).
MERF_GAIN_1WAY = 0.25
MERF_POWER = 0.8
MERF_FLOOR_1WAY = 0.0
MERF_NUMERIC_1WAY = 0.12
MERF_2WAY_RATIO = 2.2


def predict_dpmerf(s: Setting, params: dict) -> Errors:
    """Gaussian noise of std sigma x Delta on each of D embedding coordinates, Delta = 2 sqrt(2)/n
    (mixed) or 2/n; sigma DP-MERF's own RDP calibration for two releases (labelled) or one."""
    labelled = params.get("target") is not None
    sigma = gaussian_rdp_sigma(s.epsilon, s.delta, 2 if labelled else 1)
    kinds = {c.is_numeric for c in s.schema.kept}
    delta_mu = (2 * math.sqrt(2) if len(kinds) == 2 else 2) / s.n
    D = int(params.get("features") or 1000)
    x = sigma * delta_mu * math.sqrt(D)
    numeric = sum(c.is_numeric for c in s.schema.kept) / s.d
    raw = MERF_FLOOR_1WAY + MERF_NUMERIC_1WAY * numeric + MERF_GAIN_1WAY * x ** MERF_POWER
    one = [soft_cap(raw, SATURATION_1WAY)] * s.d
    two = soft_cap(MERF_2WAY_RATIO * raw, SATURATION_2WAY)
    return Errors(one, lambda i, j: two,
                  modelled=f"Gaussian noise multiplier {sigma:.3g} (its RDP calibration) on a {D}-feature "
                           f"embedding: noise/signal {x:.3g}",
                  priors=[f"generator error with no noise {MERF_FLOOR_1WAY} + {MERF_NUMERIC_1WAY} x the numeric "
                          f"share of the columns; link {MERF_GAIN_1WAY} x (noise/signal)^{MERF_POWER}; 2-way = "
                          f"{MERF_2WAY_RATIO} x 1-way (fitted on the shared tables)", SAT_PRIOR])


def _near_uniform(s: Setting, note: str) -> Errors:
    return Errors([SATURATION_1WAY] * s.d, lambda i, j: SATURATION_2WAY, modelled=note, priors=[SAT_PRIOR])


def joint_domain_failure(s: Setting) -> str | None:
    """Why a joint-domain partition (kdtree-grid, kdtree-adaptive, privhp) is predicted near-uniform."""
    log_cells = sum(math.log10(k) for k in s.sizes)
    if s.d > JOINT_MAX_COLUMNS:
        return (f"{s.d} columns: partitions of the joint domain (10^{log_cells:.0f} public cells) gave "
                "near-uniform output on every shared table of 9-24 columns (1-way TVD 0.3-0.6, docs/benchmarks.md "
                "finding 4)")
    if log_cells > math.log10(JOINT_CELLS_PER_ROW * s.n * s.epsilon):
        return (f"the joint domain has 10^{log_cells:.0f} public cells for n x epsilon = {s.n * s.epsilon:.3g}: "
                "almost every cell stays below the noise threshold and the output falls back to uniform")
    return None


def predict_joint_histogram(s: Setting, params: dict) -> Errors:
    """Where the joint domain is small: a noisy joint histogram (Laplace scale ~2/epsilon per joint
    cell); a 1-way cell sums C/K joint cells."""
    failure = joint_domain_failure(s)
    if failure:
        return _near_uniform(s, failure)
    C = math.prod(s.sizes)
    b = 2 / s.epsilon
    one = [soft_cap(rss(0.5 * k * math.sqrt(C / k) * b / s.n, sampling_tvd(k, s.n)), SATURATION_1WAY)
           for k in s.sizes]

    def two_way(i: int, j: int) -> float:
        cells = s.sizes[i] * s.sizes[j]
        return soft_cap(rss(0.5 * cells * math.sqrt(C / cells) * b / s.n, sampling_tvd(cells, s.n)), SATURATION_2WAY)
    return Errors(one, two_way, modelled=f"noisy joint histogram of {C} cells, Laplace scale ~{b:.3g} each",
                  priors=[SAMPLING_PRIOR, SAT_PRIOR])


def pmse_failure(s: Setting) -> str | None:
    numeric = sum(c.is_numeric for c in s.schema.kept)
    if numeric > PMSE_MAX_NUMERIC:
        return (f"{numeric} numeric columns: the one-split utility sees one direction and the output fills the "
                "public box (2-way TVD 0.75-0.77 on 9 columns at every epsilon, docs/benchmarks.md finding 7)")
    return None


def predict_pmse(s: Setting, params: dict) -> Errors | None:
    failure = pmse_failure(s)
    return _near_uniform(s, failure) if failure else None


# -- select-measure-generate (MST, AIM; Private-PGM estimation) -------------------------------------------
# Replace-one neighbours: a count vector moves by sqrt(2) in L2 (FIELD-NOTES), so a dpportal MST or AIM
# adds sqrt(2) x the noise of SmartNoise's add/remove calibration at the same rho. The links below were
# fitted on SmartNoise's MST (18 runs) and AIM (4 runs) in the recorded benchmark with the add/remove
# factor 1, then used with sqrt(2) for dpportal's own mechanisms.
REPLACE_ONE_L2 = math.sqrt(2)
# Private-PGM mechanisms: a 1-way cell's error is a fraction (gain) of its measurement noise (the estimate
# is projected onto consistent, non-negative marginals with the public n); a pair's error is that of its
# measurement noise (gain) plus what the model leaves unexplained (penalty), but never worse than the
# independent model the estimate falls back to when a pair is swamped by noise (measured: at epsilon 0.1
# the 2-way TVD of MST and AIM is that of the independent Gaussian baseline or better).
MST_GAIN_1WAY = 0.6
MST_GAIN = 0.3
MST_TREE_PENALTY = 0.02  # pairs off the spanning tree are implied by conditional independence (finding 3)
AIM_GAIN_1WAY = 0.4
AIM_GAIN = 0.15
AIM_GAIN_1WAY_START = 0.7  # 1-way gain when the rounds only measure the 1-way start (T = d; fitted)
AIM_PENALTY = 0.005  # what AIM's selected marginals leave unexplained
AIM_ROUNDS_PER_COLUMN = 16  # AIM's default number of rounds T = 16 d


def stratified_share(cells: int, n: int) -> float:
    """The share of i.i.d. sampling error dpportal's model sampler leaves on a pair whose later column
    is drawn conditionally on a table of ``cells`` cells (its parents' configurations x its own values):
    within each parent configuration the draws are stratified, so a configuration's counts are off by
    rounding (about one row per cell), not by sqrt(count): about cells / (2n) in TVD against i.i.d.
    sqrt(cells / (2 pi n)), a share of about sqrt(cells / n), capped at 1 once the groups hold a row or
    less. For a pair that is itself a clique (a tree's edge) ``cells`` is the pair's. Measured on the
    sampler, not fitted (tests/mechanisms/test_pgm.py): 0.89-1.06 x this on chain models shaped like the
    shared tables, 0.78-0.89 x it on a 3-column clique's pairs given the whole clique's cells. A pair
    that no clique contains gets no such help: 0.78-1.43 x i.i.d. on the chain models."""
    return min(1.0, math.sqrt(cells / n))


@dataclasses.dataclass(frozen=True)
class covered_sampling:
    """Sampling share over all pairs when a ``covered`` share of them lie inside the model's cliques,
    their later column drawn given ``parents`` times the pair's cells (:func:`stratified_share`), the
    other pairs with i.i.d. error."""

    covered: float
    parents: float = 1.0

    def __call__(self, cells: int, n: int) -> float:
        return self.covered * stratified_share(round(self.parents * cells), n) + (1.0 - self.covered)

    def __str__(self) -> str:
        return (f"sqrt({self.parents:g} x cells / n) on the {self.covered:.2g} of pairs inside the model's cliques, "
                "1 elsewhere")


AIM_PARENT_CELLS = 16.0  # AIM's cliques are larger than pairs: a column's parents beyond the pair (fitted)


# On 1-way marginals the sampler leaves far less: the first column is drawn by randomised rounding (each
# count within 1 of the model's) and every other column by stratified uniforms within each configuration
# of its sampled parents (counts within 1 per configuration), so a column's counts follow the model's to
# rounding, not to i.i.d. sampling error (pgm.ModelTables.sample). Measured on the sampler, not fitted: 0.047-
# 0.18 of sampling_tvd on four chain models shaped like the shared tables (tests/mechanisms/test_pgm.py)
PGM_SAMPLING_1WAY = 0.1


def _gaussian_errors(s: Setting, sigma: float, gains: tuple[float, float], penalty: float, note: str,
                     priors: list[str], sampling: float | Callable[[int, int], float] = 1.0, measured_share: float = 1.0,
                     sampling_1way: float = 1.0) -> Errors:
    """``sampling``: the share of i.i.d. sampling error left by the mechanism's sampler on a pair
    (dpportal samples the model with randomised rounding and stratified uniforms: far below i.i.d.
    draws); ``sampling_1way``: the same on a single column (PGM_SAMPLING_1WAY for dpportal's sampler).
    ``measured_share``: the share of the pairs the mechanism has the rounds to measure; the others are
    predicted as independent columns."""
    mean_abs = sigma * math.sqrt(2 / math.pi)
    gain_1way, gain_2way = gains
    one = [soft_cap(rss(gain_1way * noise_tvd(k, mean_abs, s.n), sampling_1way * sampling_tvd(k, s.n)),
                    SATURATION_1WAY) for k in s.sizes]
    independent = _independent_columns(s, one, sampling)  # the same sampler

    def two_way(i: int, j: int) -> float:
        cells = s.sizes[i] * s.sizes[j]
        measured = soft_cap(rss(gain_2way * noise_tvd(cells, mean_abs, s.n), penalty,
                                sampling_share(sampling, cells, s.n) * sampling_tvd(cells, s.n)), SATURATION_2WAY)
        alone = independent(i, j)
        return measured_share * min(measured, alone) + (1 - measured_share) * alone
    return Errors(one, two_way, modelled=note, priors=priors + [
        f"Private-PGM gain {gain_1way:.3g} (1-way) / {gain_2way} (2-way) on the measurement noise, never worse "
        f"than independent columns; sampling error x {sampling}", SAMPLING_PRIOR, SAT_PRIOR])


def predict_mst(s: Setting, params: dict) -> Errors:
    """MST (mechanisms/synthesizers/mst/): a third of rho measures the d 1-way marginals, sigma_1 = sqrt(d / (rho/3))
    under replace-one (L2 sensitivity sqrt(2) per marginal), a third the d - 1 tree pairs,
    sigma_2 = sqrt((d - 1) / (rho/3)); add/remove (SmartNoise) is 1/sqrt(2) of that."""
    f = float(params.get("neighbour_factor", REPLACE_ONE_L2))
    rho = zcdp_rho(s.epsilon, s.delta)
    if f == REPLACE_ONE_L2 and params.get("tree", "auto") == "auto":
        from ..synthesizers.mst import tree_is_informative  # no JAX: mst.py loads Private-PGM inside fit only

        if not tree_is_informative(s.n, rho, list(s.sizes)):  # dpportal's MST measures the 1-way marginals only
            e = predict_baseline(s, {"noise_type": GAUSSIAN})
            return Errors(e.one_way, e.two_way, modelled=f"too few rows for the budget to measure column pairs: "
                          f"1-way marginals only ({e.modelled})", priors=e.priors)
    sigma = f * math.sqrt(max(s.d, 1) / (2 * rho / 3))
    return _gaussian_errors(s, sigma, (MST_GAIN_1WAY, MST_GAIN), MST_TREE_PENALTY,
                            f"Gaussian noise sigma = {sigma:.3g} on every 1-way cell and tree pair",
                            [f"off-tree pairs: conditional-independence penalty {MST_TREE_PENALTY}"],
                            sampling=covered_sampling(min(1.0, (s.d - 1) / max(s.d * (s.d - 1) / 2, 1)))
                            if f == REPLACE_ONE_L2 else 1.0,  # the tree's d - 1 pairs are its cliques
                            sampling_1way=PGM_SAMPLING_1WAY if f == REPLACE_ONE_L2 else 1.0)


def predict_aim(s: Setting, params: dict) -> Errors:
    """AIM: up to T = 16 d rounds (dpportal: mechanisms.synthesizers.aim.default_rounds), 90% of each round's rho
    measuring one marginal with Gaussian noise sigma = f sqrt(T / (2 x 0.9 rho)); Private-PGM's joint
    estimate removes much of it (fitted gains)."""
    from ..synthesizers.aim import default_rounds  # no JAX: aim.py loads Private-PGM inside fit only

    f = float(params.get("neighbour_factor", REPLACE_ONE_L2))
    rho = zcdp_rho(s.epsilon, s.delta)
    if params.get("max_rounds"):
        rounds = int(params["max_rounds"])
    elif f == REPLACE_ONE_L2:  # dpportal's AIM: fewer rounds when n is small for the budget: the T the
        # release will use
        rounds = default_rounds(s.n, rho, list(s.sizes))
    else:  # SmartNoise's: always the paper's 16 d
        rounds = AIM_ROUNDS_PER_COLUMN * s.d
    sigma = f * math.sqrt(rounds / (2 * 0.9 * rho))
    # the 1-way start takes d of the T rounds' budget; only the other rounds can re-measure and so let
    # the joint estimate reduce the 1-way noise: with T = d (small n for the budget) the gain is only
    # that of Private-PGM's projection of one measurement per column (AIM_GAIN_1WAY_START)
    gain_1way = AIM_GAIN_1WAY + (AIM_GAIN_1WAY_START - AIM_GAIN_1WAY) * min(1.0, s.d / rounds)
    # each round after the 1-way start measures one marginal: with T - d rounds for P candidate pairs,
    # at most (T - d) / P of them are measured (T = d: 1-way marginals and the last round only)
    pairs = max(s.d * (s.d - 1) // 2, 1)
    share = min(1.0, max(rounds - s.d, 1) / pairs)
    return _gaussian_errors(s, sigma, (gain_1way, AIM_GAIN), AIM_PENALTY,
                            f"Gaussian noise sigma = {sigma:.3g} per measured marginal cell ({rounds} rounds)",
                            [f"unexplained structure {AIM_PENALTY} (gains and penalty fitted on dpportal's AIM "
                             "in the grid run, docs/recommend.md)"],
                            sampling=covered_sampling(1.0, AIM_PARENT_CELLS) if f == REPLACE_ONE_L2 else 1.0,
                            measured_share=share,
                            sampling_1way=PGM_SAMPLING_1WAY if f == REPLACE_ONE_L2 else 1.0)


Predictor = Callable[[Setting, dict], "Errors | None"]
# name -> (predictor, why it would fail (or None), whether it synthesises columns independently)
PREDICTORS: dict[str, Predictor] = {
    "baseline": predict_baseline,
    "density-lp": predict_density_lp,
    "dpmerf": predict_dpmerf,
    "kdtree-grid": predict_joint_histogram,
    "kdtree-adaptive": predict_joint_histogram,
    "privhp": predict_joint_histogram,
    "pmse": predict_pmse,
    "mst": predict_mst,
    "aim": predict_aim,
}
FAILURE_RULES: dict[str, Callable[[Setting], "str | None"]] = {
    "kdtree-grid": joint_domain_failure,
    "kdtree-adaptive": joint_domain_failure,
    "privhp": joint_domain_failure,
    "pmse": pmse_failure,
}
INDEPENDENT_COLUMNS = {"baseline"}


def register(name: str, predictor: Predictor, *, failure: Callable[[Setting], "str | None"] | None = None,
             independent_columns: bool = False) -> None:
    """Plug a mechanism's predictor in (new mechanisms call this from here, next to the others)."""
    PREDICTORS[name] = predictor
    if failure is not None:
        FAILURE_RULES[name] = failure
    if independent_columns:
        INDEPENDENT_COLUMNS.add(name)


# ------------------------------------------------------------------------------------------------------
# Predict, recommend, curve
# ------------------------------------------------------------------------------------------------------

def _default_params(name: str, purpose: Purpose) -> dict:
    params = {p.name: p.default for p in registry.get(name).params}
    if purpose.kind == "ml" and any(p.name == "target" for p in registry.get(name).params):
        params["target"] = purpose.target
    return params


def _label_target(params: dict, setting: Setting) -> dict:
    """Labelled modes take a categorical target only: a numeric one leaves the mechanism unlabelled."""
    target = params.get("target")
    if target is not None and target in setting.schema.names and setting.schema.column(target).is_numeric:
        params = {**params, "target": None}
    return params


def predict(name: str, setting: Setting, purpose: Purpose, params: dict | None = None) -> Prediction:
    """The predicted accuracy of mechanism ``name`` for ``purpose`` (public inputs only)."""
    cls = registry.get(name)
    params = _label_target({**_default_params(name, purpose), **(params or {})}, setting)
    label_conditional = purpose.kind == "ml" and name in ML_PREFERRED and params.get("target") is not None
    assumed = dict(ML_PARAMS.get(name, {})) if label_conditional else {}
    params.update(assumed)
    pred = Prediction(mechanism=name, title=cls.title, status="ok", label_conditional=label_conditional,
                      params=assumed)
    if cls.needs_delta and setting.delta <= 0:
        pred.status, pred.reason = "unavailable", "needs a delta above 0 (approximate DP); none was given"
        return pred
    if purpose.larger_than_memory and not cls.streaming:
        pred.status, pred.reason = "unavailable", "reads the whole table into memory; the table is larger than memory"
        return pred
    refusal = _plan_refusal(cls, setting, params)
    if refusal:  # e.g. AIM's model-size limit, MST's pair cells: the release itself would be refused
        pred.status, pred.reason = "unavailable", refusal
        return pred
    errors = PREDICTORS.get(name, _predict_unknown)(setting, params)
    failure = FAILURE_RULES.get(name, lambda s: None)(setting)
    if errors is not None:
        pairs = purpose.pairs_of_interest(setting.schema)
        pred.tvd_1way = _mean(errors.one_way)
        pred.tvd_2way = _mean_pair_error(errors, setting, pairs) if pairs else None
        pred.score = pred.tvd_2way if pred.tvd_2way is not None else pred.tvd_1way
        pred.modelled, pred.priors = errors.modelled, errors.priors
    else:
        pred.modelled = UNKNOWN_NOTE
    if failure:
        pred.status, pred.reason = "would-fail", f"near-uniform output predicted: {failure}"
    elif purpose.kind == "ml" and name in INDEPENDENT_COLUMNS:
        pred.status = "would-fail"
        pred.reason = ("synthesises every column independently, so a model trained on it learns nothing about "
                       f"{purpose.target} (measured TSTR 0.45-0.54 ROC AUC, chance level, on the shared tables)")
    return pred


def _plan_refusal(cls, setting: Setting, params: dict) -> str | None:
    """The message with which the release itself would be refused before any budget (the mechanism's
    own ``check_plan``: public inputs only), or None."""
    from ..base import Mechanism

    if cls.check_plan is Mechanism.check_plan:
        return None  # nothing beyond parameter validation to check
    try:
        mech = cls(setting.schema, epsilon=setting.epsilon if setting.epsilon > 0 else 1.0,
                   delta=setting.delta if cls.needs_delta or gaussian_mode(params) else 0.0,
                   **{k: v for k, v in params.items() if any(p.name == k for p in cls.params)})
    except (ValueError, TypeError):
        return None  # parameter validation is the release form's business, not a plan refusal
    try:
        mech.check_plan(setting.n)
    except ValueError as exc:
        return str(exc)
    return None


def variants(name: str, setting: Setting) -> list[dict]:
    """Parameter settings worth predicting besides the defaults: the Gaussian (zCDP) mode of a mechanism
    that offers one, when the steward accepts a delta."""
    if setting.delta <= 0:
        return []
    return [{spec.name: GAUSSIAN} for spec in registry.get(name).params
            if spec.type == "choice" and GAUSSIAN in spec.choices and spec.default != GAUSSIAN]


def predict_best_variant(name: str, setting: Setting, purpose: Purpose) -> Prediction:
    """The default prediction, or a variant's (e.g. Gaussian mode) when it is predicted better."""
    best = predict(name, setting, purpose)
    for extra in variants(name, setting):
        p = predict(name, setting, purpose, extra)
        if p.score is not None and best.score is not None and p.score < best.score and p.status == best.status:
            p.params = {**p.params, **extra}
            best = p
    return best


def _mean_pair_error(errors: Errors, setting: Setting, pairs: list[tuple[int, int]]) -> float:
    cache: dict[tuple, float] = {}
    keys = setting.pair_key
    total = 0.0
    for i, j in pairs:
        key = (keys[i], keys[j])
        if key not in cache:
            cache[key] = errors.two_way(i, j)
        total += cache[key]
    return total / len(pairs)


def _predict_unknown(setting: Setting, params: dict) -> Errors | None:
    return None


def _rank_key(p: Prediction, purpose: Purpose) -> tuple:
    status = {"ok": 0, "would-fail": 2, "unavailable": 3}.get(p.status, 1)
    modelled = 0 if p.score is not None else 1
    preferred = 0 if p.label_conditional else 1
    return (status, modelled, preferred, p.score if p.score is not None else 1.0, p.mechanism)


def recommend(schema: Schema, *, n: int, epsilon: float, delta: float = 0.0, purpose: Purpose | None = None,
              mechanisms: Sequence[str] | None = None, variants: bool = True) -> Recommendation:
    """Predictions for every mechanism supporting ``schema``; the best usable one is recommended.
    ``variants=False`` predicts the default configurations only (e.g. no Gaussian mode)."""
    purpose = purpose or Purpose()
    purpose.check(schema)
    setting = Setting(schema, int(n), float(epsilon), float(delta))
    supported = registry.supporting(schema)
    names = [m for m in (mechanisms or supported) if m in supported]
    one = predict_best_variant if variants else predict
    items = sorted((one(m, setting, purpose) for m in names), key=lambda p: _rank_key(p, purpose))
    if purpose.kind == "ml":
        for p in items:
            p.model_quality = model_quality.reference(p.mechanism, p.params, setting.epsilon,
                                                      independent=p.mechanism in INDEPENDENT_COLUMNS)
    best = _break_tie(items, next((p for p in items if p.status == "ok"), None))
    if best is None:
        return Recommendation(setting, purpose, items, None, "no mechanism is predicted to work for this schema "
                              "and purpose at this budget: raise epsilon, exclude columns or coarsen bins")
    best.status = "recommended"
    items.remove(best)
    items.insert(0, best)
    return Recommendation(setting, purpose, items, best.mechanism, _reason(best, items, purpose))


def _speed(name: str) -> int:
    return FASTEST_FIRST.index(name) if name in FASTEST_FIRST else len(FASTEST_FIRST)


def _break_tie(items: list[Prediction], best: Prediction | None) -> Prediction | None:
    """Among usable mechanisms predicted within TIE_MARGIN of ``best`` (same ml preference), the fastest."""
    if best is None or best.score is None:
        return best
    tied = [p for p in items if p.status == "ok" and p.score is not None
            and p.label_conditional == best.label_conditional and p.score <= best.score * (1 + TIE_MARGIN)]
    return min(tied, key=lambda p: (_speed(p.mechanism), p.score))


def _reason(best: Prediction, items: list[Prediction], purpose: Purpose) -> str:
    others = [p for p in items if p is not best and p.score is not None and p.status == "ok"]
    if best.score is None:
        return f"{best.mechanism} is the only mechanism that can run for this purpose (no accuracy model for it yet)."
    if best.label_conditional:
        return _ml_reason(best, others, purpose)
    what = "the pairs that matter" if purpose.kind != "explore" else "all pairs"
    lower = [p for p in others if p.score < best.score]
    if lower:  # won a tie on speed
        return (f"{best.mechanism} is predicted within {TIE_MARGIN:.0%} of the lowest 2-way error over {what} "
                f"({best.score:.1%} against {lower[0].score:.1%} for {lower[0].mechanism}) and is faster.")
    runner = f", against {others[0].score:.1%} for {others[0].mechanism}" if others else ""
    return f"{best.mechanism} has the lowest predicted 2-way error over {what}: {best.score:.1%}{runner}."


def _ml_reason(best: Prediction, others: list[Prediction], purpose: Purpose) -> str:
    """Why a mechanism that models the table around the target is recommended, naming any mechanism with a
    lower predicted error: the error column is not the measure that decides for model training."""
    how = ("measures the marginals that contain {t} (workload 'target')" if best.mechanism == "aim"
           else "learns the other columns given {t}").format(t=purpose.target)
    lower = min((p for p in others if p.score < best.score), key=lambda p: p.score, default=None)
    error = f"its predicted 2-way error with {purpose.target} is {best.score:.1%}"
    if lower is not None:
        error += (f", higher than {lower.mechanism}'s {lower.score:.1%}, but that error measures how well pairs of "
                  "columns are kept, not how well a model trained on the table predicts")
    return (f"{best.mechanism} {how}, and models trained on such output scored best, or within 10% of the best, on "
            f"the shared tables; {error}.")


DEFAULT_CURVE_EPSILONS = tuple(round(10 ** (k / 8), 4) for k in range(-16, 17))  # 0.01 .. 100, 8 per decade


def accuracy_curve(name: str, schema: Schema, *, n: int, delta: float = 0.0, purpose: Purpose | None = None,
                   epsilons: Sequence[float] = DEFAULT_CURVE_EPSILONS) -> list[dict]:
    """Predicted error (the purpose's metric and 1-way TVD) against epsilon for mechanism ``name``."""
    purpose = purpose or Purpose()
    purpose.check(schema)
    out = []
    for eps in epsilons:
        p = predict(name, Setting(schema, int(n), float(eps), float(delta)), purpose)
        out.append({"epsilon": eps, "score": p.score, "tvd_1way": p.tvd_1way, "status": p.status})
    return out


def smallest_epsilon(name: str, schema: Schema, *, n: int, target: float, delta: float = 0.0,
                     purpose: Purpose | None = None, lo: float = 1e-3, hi: float = 100.0) -> float | None:
    """Smallest epsilon (to 1%) at which the predicted metric is <= ``target``, by bisection on the
    predictor (monotone in epsilon); None when even ``hi`` does not reach it."""
    if not (isinstance(target, (int, float)) and 0 < target < 1):
        raise ValueError(f"the error target must be a fraction in (0, 1), got target={target!r}")
    purpose = purpose or Purpose()
    purpose.check(schema)

    def score(eps: float) -> float:
        p = predict(name, Setting(schema, int(n), eps, float(delta)), purpose)
        return p.score if p.score is not None and p.status not in ("would-fail", "unavailable") else math.inf
    if score(hi) > target:
        return None
    if score(lo) <= target:
        return lo
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if score(mid) <= target else (mid, hi)
    return round_up(hi)


def round_up(x: float, digits: int = 3) -> float:
    """``x`` rounded UP to ``digits`` significant digits (an epsilon that still reaches the target)."""
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return float(f"{math.ceil(x / step - 1e-9) * step:.{digits}g}")


def summary_text(result: Recommendation, smallest: float | None = None, target: float | None = None) -> str:
    """A few lines for a person (the CLI's default output)."""
    s = result.setting
    lines = [f"Purpose: {result.purpose.describe()}; n = {s.n:,}, epsilon = {s.epsilon:g}, delta = {s.delta:g}",
             f"Recommended: {result.recommended or 'none'}. {result.reason}",
             f"Predicted accuracy ({result.metric}; lower is better; public inputs only):"]
    for p in result.items:
        value = f"{p.score:6.1%}" if p.score is not None else "   n/a"
        note = f"  ({p.reason})" if p.reason else ""
        variant = "".join(f" {k}={v}" for k, v in p.params.items())
        lines.append(f"  {p.status:<12} {p.mechanism:<16} {value}{note}{variant}")
    if result.model_note:
        lines.append(result.model_note)
        lines += [f"  {p.mechanism:<16} model accuracy (ROC AUC): {p.model_quality['text']}"
                  for p in result.items if p.model_quality]
    if target is not None:
        lines.append(f"Smallest epsilon for {result.recommended} within {target:.1%}: "
                     + (f"{smallest:g}" if smallest is not None else "not reached below epsilon 100"))
    return "\n".join(lines)
