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
  ``python -m benchmarks.calibration.recommend_calibration --fit`` (a grid search); ``docs/recommend.md``
  reports predicted against measured errors, also with each table held out of the fit.

Mechanisms whose output is predicted to be near-uniform on this schema (kdtree-grid,
kdtree-adaptive, privhp on wide or large-domain tables; pmse beyond three numeric columns; the
baseline for a model-training purpose, as it synthesises columns independently) get the status
``would-fail`` with the reason; they are listed last and the web form asks for an explicit
confirmation before running one.

Each mechanism's predictor, near-uniform rule and fitted constants live in its own package
(``predict_accuracy`` and ``near_uniform`` in ``mechanisms/synthesizers/<name>/guide.py``); the shared
primitives in :mod:`mechanisms.guidance.predictors`, the value objects in :mod:`mechanisms.guidance.purposes`.
This module ranks: a mechanism whose ``predict_accuracy`` returns None gets no numeric prediction and is
listed after the modelled ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .. import registry
from ..schema import Schema
from . import model_quality
from .predictors import GAUSSIAN, gaussian_mode, mean
from .purposes import Errors, KeySuggestion, Prediction, Purpose, Setting, and_list, suggest_key_columns

# Fallback for a mechanism with no predictor.
UNKNOWN_NOTE = "no accuracy model for this mechanism yet: run it on a small budget and check the dashboard"

# "train a model" with MST: the target as its key column where the target has at most this many cells (MST's
# KEY_TREE_MAX_CELLS: its tree is then measured given the target; a test checks they agree)
KEYED_TARGET_MAX_CELLS = 16

# Predictions within this fraction of the best are a tie (they are approximate: docs/recommend.md); the
# faster mechanism wins a tie (each mechanism's speed_rank: its place in the release times measured in
# docs/benchmarks.md, "Time and memory").
# 0.05: a margin of 0.10 would send california_housing at epsilon 0.1 to the Gaussian baseline (predicted
# 0.121) over MST (0.096).
TIE_MARGIN = 0.05


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
        if self.purpose.key_columns:
            return f"mean 2-way TVD of {and_list(self.purpose.key_columns)} with every other column"
        return "mean 2-way TVD over all pairs"

    @property
    def ranking(self) -> str:
        """How the table is sorted: the measure that decides the recommendation, in words."""
        last = "; mechanisms predicted to fail come last, then those that cannot run"
        tie = (
            f"; a faster mechanism predicted within {TIE_MARGIN:.0%} of the lowest error is recommended over it "
            "and listed first"
        )
        if self.purpose.kind == "ml":
            return (
                f"Sorted first by whether the mechanism models the other columns given {self.purpose.target} "
                "(for training models this decides: models trained on such output scored best on the shared "
                f"tables; its own mode around {self.purpose.target} before {self.purpose.target} as MST's key "
                "column, which scored lower), then by predicted error, lowest first" + tie + last + "."
            )
        return "Sorted by predicted error, lowest first" + tie + last + "."

    @property
    def model_note(self) -> str | None:
        """For "train a model": why model accuracy is shown as measured reference figures."""
        if self.purpose.kind != "ml":
            return None
        column = self.setting.schema.column(self.purpose.target)
        return model_quality.note(self.purpose.target, None if column.is_numeric else len(column.categories))

    @property
    def key_suggestion(self) -> KeySuggestion | None:
        """For "explore" with no key column named: a column suggested from the schema alone, for the steward
        to confirm (never applied by the recommendation itself)."""
        if self.purpose.kind != "explore" or self.purpose.key_columns:
            return None
        return suggest_key_columns(self.setting.schema)

    def get(self, name: str) -> Prediction | None:
        return next((p for p in self.items if p.mechanism == name), None)

    def to_dict(self) -> dict:
        return {
            "rows": self.setting.n,
            "epsilon": self.setting.epsilon,
            "delta": self.setting.delta,
            **self.purpose.to_dict(),
            "metric": self.metric,
            "recommended": self.recommended,
            "reason": self.reason,
            "ranking": self.ranking,
            "public_inputs_only": True,
            "model_quality_note": self.model_note,
            "suggested_key_columns": suggestion.to_dict() if (suggestion := self.key_suggestion) else None,
            "mechanisms": [p.to_dict() for p in self.items],
        }


# ------------------------------------------------------------------------------------------------------
# Predict, recommend, curve
# ------------------------------------------------------------------------------------------------------


def _default_params(name: str, purpose: Purpose) -> dict:
    params = {p.name: p.default for p in registry.get(name).params}
    if purpose.kind == "ml" and "target" in params:
        params["target"] = purpose.target
    params.update(_key_params(name, purpose))
    return params


def _key_params(name: str, purpose: Purpose) -> dict:
    """The purpose's key columns as the mechanism's ``key_columns`` parameter (MST measures every pair
    with them), as the release form and the API write it: one comma-separated string."""
    if not purpose.key_columns or not any(p.name == "key_columns" for p in registry.get(name).params):
        return {}
    return {"key_columns": ",".join(purpose.key_columns)}


def _target_as_key(cls, setting: Setting, purpose: Purpose) -> dict:
    """For "train a model": the target as the key column of a mechanism that takes key columns (MST: every
    pair with the target measured, and its tree measured with the target attached, (target, a, b)), where the
    target is categorical with at most KEYED_TARGET_MAX_CELLS cells (as MST's KEY_TREE_MAX_CELLS, beyond
    which its tree is not conditioned on the key). Public inputs only: the schema and the purpose."""
    if purpose.kind != "ml" or not any(p.name == "key_columns" for p in cls.params):
        return {}
    column = setting.schema.column(purpose.target)
    if column.is_numeric or column.n_cells > KEYED_TARGET_MAX_CELLS:
        return {}
    return {"key_columns": purpose.target}


def _label_target(params: dict, setting: Setting) -> dict:
    """Labelled modes take a categorical target only: a numeric one leaves the mechanism unlabelled."""
    target = params.get("target")
    if target is not None and target in setting.schema.names and setting.schema.column(target).is_numeric:
        params = {**params, "target": None}
    return params


def predict(name: str, setting: Setting, purpose: Purpose, params: dict | None = None) -> Prediction:
    """The predicted accuracy of mechanism ``name`` for ``purpose`` (public inputs only)."""
    cls = registry.get(name)
    keyed = _target_as_key(cls, setting, purpose)
    params = _label_target({**_default_params(name, purpose), **keyed, **(params or {})}, setting)
    keyed = keyed if keyed and params.get("key_columns") == keyed["key_columns"] else {}
    label_conditional = bool(keyed) or (
        purpose.kind == "ml" and cls.target_structure == "conditional" and params.get("target") is not None
    )
    assumed = dict(cls.target_params) if label_conditional and not keyed else dict(keyed)
    params.update(assumed)
    assumed.update({k: v for k, v in _key_params(name, purpose).items() if params.get(k) == v})
    pred = Prediction(mechanism=name, title=cls.title, status="ok", label_conditional=label_conditional, params=assumed)
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
    errors = cls.predict_accuracy(setting, params)
    failure = cls.near_uniform(setting)
    if errors is not None:
        pairs = purpose.pairs_of_interest(setting.schema)
        pred.tvd_1way = mean(errors.one_way)
        pred.tvd_2way = _mean_pair_error(errors, setting, pairs) if pairs else None
        pred.score = pred.tvd_2way if pred.tvd_2way is not None else pred.tvd_1way
        pred.modelled, pred.priors = errors.modelled, errors.priors
    else:
        pred.modelled = UNKNOWN_NOTE
    if failure:
        pred.status, pred.reason = "would-fail", f"near-uniform output predicted: {failure}"
    elif purpose.kind == "ml" and cls.target_structure == "independent":
        pred.status = "would-fail"
        pred.reason = (
            "synthesises every column independently, so a model trained on it learns nothing about "
            f"{purpose.target} (measured TSTR 0.45-0.54 ROC AUC, chance level, on the shared tables)"
        )
    return pred


def _plan_refusal(cls, setting: Setting, params: dict) -> str | None:
    """The message with which the release itself would be refused before any budget (the mechanism's
    own ``check_plan``: public inputs only), or None."""
    from ..base import Mechanism

    if cls.check_plan is Mechanism.check_plan:
        return None  # nothing beyond parameter validation to check
    try:
        mech = cls(
            setting.schema,
            epsilon=setting.epsilon if setting.epsilon > 0 else 1.0,
            delta=setting.delta if cls.needs_delta or gaussian_mode(params) else 0.0,
            **{k: v for k, v in params.items() if any(p.name == k for p in cls.params)},
        )
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
    return [
        {spec.name: GAUSSIAN}
        for spec in registry.get(name).params
        if spec.type == "choice" and GAUSSIAN in spec.choices and spec.default != GAUSSIAN
    ]


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


def _rank_key(p: Prediction, purpose: Purpose) -> tuple:
    status = {"ok": 0, "would-fail": 2, "unavailable": 3}.get(p.status, 1)
    modelled = 0 if p.score is not None else 1
    return (status, modelled, _preference(p), p.score if p.score is not None else 1.0, p.mechanism)


def _preference(p: Prediction) -> int:
    """For "train a model": a mechanism's own mode around the target first (AIM's workload 'target'), then the
    target as MST's key column, then the rest. On credit_adult (39 columns, epsilon 1, three blocks of
    docs/benchmarks/relations.md) models trained on AIM's output scored ROC AUC 0.860-0.878, on MST's with the
    target as key column 0.852-0.861, at the same label-relation gap (0.054-0.056 against 0.047-0.060)."""
    if not p.label_conditional:
        return 2
    return 1 if "key_columns" in p.params else 0


def recommend(
    schema: Schema,
    *,
    n: int,
    epsilon: float,
    delta: float = 0.0,
    purpose: Purpose | None = None,
    mechanisms: Sequence[str] | None = None,
    variants: bool = True,
) -> Recommendation:
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
            independent = registry.get(p.mechanism).target_structure == "independent"
            p.model_quality = model_quality.reference(p.mechanism, p.params, setting.epsilon, independent=independent)
    best = _break_tie(items, next((p for p in items if p.status == "ok"), None))
    if best is None:
        return Recommendation(
            setting,
            purpose,
            items,
            None,
            "no mechanism is predicted to work for this schema "
            "and purpose at this budget: raise epsilon, exclude columns or coarsen bins",
        )
    best.status = "recommended"
    items.remove(best)
    items.insert(0, best)
    return Recommendation(setting, purpose, items, best.mechanism, _reason(best, items, purpose))


def _speed(name: str) -> int:
    return registry.get(name).speed_rank


def _break_tie(items: list[Prediction], best: Prediction | None) -> Prediction | None:
    """Among usable mechanisms predicted within TIE_MARGIN of ``best`` (same ml preference), the fastest."""
    if best is None or best.score is None:
        return best
    tied = [
        p
        for p in items
        if p.status == "ok"
        and p.score is not None
        and _preference(p) == _preference(best)
        and p.score <= best.score * (1 + TIE_MARGIN)
    ]
    return min(tied, key=lambda p: (_speed(p.mechanism), p.score))


def _reason(best: Prediction, items: list[Prediction], purpose: Purpose) -> str:
    others = [p for p in items if p is not best and p.score is not None and p.status == "ok"]
    if best.score is None:
        return f"{best.mechanism} is the only mechanism that can run for this purpose (no accuracy model for it yet)."
    if best.label_conditional:
        return _ml_reason(best, others, purpose)
    what = "the pairs that matter" if purpose.kind != "explore" else "all pairs"
    if purpose.key_columns:
        what = f"the pairs with {and_list(purpose.key_columns)}"
    lower = [p for p in others if p.score < best.score]
    if lower:  # won a tie on speed
        return (
            f"{best.mechanism} is predicted within {TIE_MARGIN:.0%} of the lowest 2-way error over {what} "
            f"({best.score:.1%} against {lower[0].score:.1%} for {lower[0].mechanism}) and is faster."
        ) + _keys_note(best)
    runner = f", against {others[0].score:.1%} for {others[0].mechanism}" if others else ""
    lowest = f"{best.mechanism} has the lowest predicted 2-way error over {what}: {best.score:.1%}{runner}."
    return lowest + _keys_note(best)


def _keys_note(best: Prediction) -> str:
    """The key columns a recommended mechanism measures with every other column (MST's ``key_columns``)."""
    keys = best.params.get("key_columns")
    if not keys:
        return ""
    return f" It is set to measure every pair with {and_list(keys.split(','))} (key_columns={keys})."


def _ml_reason(best: Prediction, others: list[Prediction], purpose: Purpose) -> str:
    """Why a mechanism that models the table around the target is recommended, naming any mechanism with a
    lower predicted error: the error column is not the measure that decides for model training."""
    keys = best.params.get("key_columns")
    how = (
        f"measures every pair with {purpose.target} and its tree of the other columns given {purpose.target} "
        f"(key_columns={keys})"
        if keys
        else registry.get(best.mechanism).target_how.format(t=purpose.target)
    )
    lower = min((p for p in others if p.score < best.score), key=lambda p: p.score, default=None)
    error = f"its predicted 2-way error with {purpose.target} is {best.score:.1%}"
    if lower is not None:
        error += (
            f", higher than {lower.mechanism}'s {lower.score:.1%}, but that error measures how well pairs of "
            "columns are kept, not how well a model trained on the table predicts"
        )
    return (
        f"{best.mechanism} {how}, and models trained on such output scored best, or within 10% of the best, on "
        f"the shared tables; {error}."
    )


DEFAULT_CURVE_EPSILONS = tuple(round(10 ** (k / 8), 4) for k in range(-16, 17))  # 0.01 .. 100, 8 per decade


def accuracy_curve(
    name: str,
    schema: Schema,
    *,
    n: int,
    delta: float = 0.0,
    purpose: Purpose | None = None,
    epsilons: Sequence[float] = DEFAULT_CURVE_EPSILONS,
) -> list[dict]:
    """Predicted error (the purpose's metric and 1-way TVD) against epsilon for mechanism ``name``."""
    purpose = purpose or Purpose()
    purpose.check(schema)
    out = []
    for eps in epsilons:
        p = predict(name, Setting(schema, int(n), float(eps), float(delta)), purpose)
        out.append({"epsilon": eps, "score": p.score, "tvd_1way": p.tvd_1way, "status": p.status})
    return out


def smallest_epsilon(
    name: str,
    schema: Schema,
    *,
    n: int,
    target: float,
    delta: float = 0.0,
    purpose: Purpose | None = None,
    lo: float = 1e-3,
    hi: float = 100.0,
) -> float | None:
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
    lines = [
        f"Purpose: {result.purpose.describe()}; n = {s.n:,}, epsilon = {s.epsilon:g}, delta = {s.delta:g}",
        f"Recommended: {result.recommended or 'none'}. {result.reason}",
        f"Predicted accuracy ({result.metric}; lower is better; public inputs only):",
    ]
    for p in result.items:
        value = f"{p.score:6.1%}" if p.score is not None else "   n/a"
        note = f"  ({p.reason})" if p.reason else ""
        variant = "".join(f" {k}={v}" for k, v in p.params.items())
        lines.append(f"  {p.status:<12} {p.mechanism:<16} {value}{note}{variant}")
    if result.key_suggestion:
        k = result.key_suggestion
        lines.append(
            f"Suggested from the schema, not applied: cross-tabulate by {and_list(k.columns)} first ({k.reason}); "
            f"--key-columns {','.join(k.columns)} uses it."
        )
    if result.model_note:
        lines.append(result.model_note)
        lines += [
            f"  {p.mechanism:<16} model accuracy (ROC AUC): {p.model_quality['text']}"
            for p in result.items
            if p.model_quality
        ]
    if target is not None:
        lines.append(
            f"Smallest epsilon for {result.recommended} within {target:.1%}: "
            + (f"{smallest:g}" if smallest is not None else "not reached below epsilon 100")
        )
    return "\n".join(lines)
