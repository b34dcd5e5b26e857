"""Guided release: the recommendation and the accuracy curve for a dataset, from PUBLIC inputs only.

The web page and the API call :func:`recommendation_for`. It reads the dataset's confirmed schema,
its public row count n and the remaining budget, never the raw file (tested: the view works with
the raw file unreadable, and two tables with the same schema and n get the same answer). The math
lives in :mod:`mechanisms.guidance.recommend`.
"""

from __future__ import annotations

import math
from typing import Mapping
from urllib.parse import urlencode

from dpportal.ledger import services as ledger
from mechanisms import registry
from mechanisms.accounting import MAX_AMOUNT_CHARS as AMOUNT_MAX_CHARS
from mechanisms.accounting import MAX_EPSILON
from mechanisms.guidance import recommend as rec

DEFAULT_EPSILON = 1.0


class GuidanceError(ValueError):
    """Bad purpose or amount; the message names it."""


def parse_amount(
    value, name: str, *, default: float, low: float = 0.0, low_open: bool, high: float, high_open: bool
) -> float:
    """A float parsed BEFORE any exact arithmetic, its bounds checked (bounded work for any input)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    text = str(value).strip()
    if len(text) > AMOUNT_MAX_CHARS:
        raise GuidanceError(f"{name} is too long ({len(text)} characters); write a plain number like 0.5")
    try:
        v = float(text)
    except ValueError:
        raise GuidanceError(f"{name} must be a number, got {name}={text!r}") from None
    above = v > low if low_open else v >= low
    below = v < high if high_open else v <= high
    if not (math.isfinite(v) and above and below):
        interval = ("(" if low_open else "[") + f"{low:g}, {high:g}" + (")" if high_open else "]")
        raise GuidanceError(f"{name} must be in {interval}, got {name}={text!r}")
    return v


DELTA_SHARE = 0.5  # a preset delta takes at most this share of the remaining delta (room for later releases)
APPROXIMATE = "aim, mst, dpmerf and the Gaussian modes"


def default_delta(budget: dict, n: int) -> float:
    """delta offered for the recommendation: the power of ten at or below 1/(10 n) (delta much smaller
    than 1/n, the usual advice; n is public), at most half the budget's remaining delta (so that later
    releases can still use an approximate mechanism); 0 without one."""
    remaining = budget["delta"]["remaining_float"] if budget.get("set") else 0.0
    suggested = 10.0 ** -math.ceil(math.log10(10 * max(int(n), 1)))
    return min(suggested, float(f"{remaining * DELTA_SHARE:.3g}")) if remaining > 0 else 0.0


def delta_note(budget: dict, value) -> dict | None:
    """What a release with delta ``value`` leaves of the remaining delta, in words; ``exhausts`` when it
    would leave none (no later release could use an approximate mechanism). None without a delta budget
    or a positive delta that parses."""
    try:
        delta = float(str(value)[:AMOUNT_MAX_CHARS])
    except ValueError:
        return None
    remaining = budget["delta"]["remaining_float"] if budget.get("set") else 0.0
    if not (math.isfinite(delta) and delta > 0 and remaining > 0):
        return None
    left = remaining - delta
    if left <= remaining * 1e-9:
        return {
            "exhausts": True,
            "text": f"This release would use all the remaining δ ({remaining:g}): afterwards "
            f"{APPROXIMATE} can no longer run on this dataset. Use a smaller δ, e.g. "
            f"{remaining * DELTA_SHARE:.3g}, to keep room for them.",
        }
    return {"exhausts": False, "text": f"Leaves δ {left:.3g} of the remaining {remaining:g} for later releases."}


def purpose_from(query: Mapping, schema) -> rec.Purpose:
    try:
        purpose = rec.Purpose.parse(
            query.get("purpose") or "explore",
            target=query.get("target") or None,
            pairs=query.get("pairs") or None,
            larger_than_memory=str(query.get("larger_than_memory", "")).lower() in ("1", "true", "on", "yes"),
            key_columns=query.get("key_columns") or None,
        )
        purpose.check(schema)
    except ValueError as exc:
        raise GuidanceError(str(exc)) from None
    return purpose


def recommendation_for(dataset, query: Mapping, *, mechanism: str | None = None) -> dict:
    """Recommendation, predictions of every supporting mechanism, and the accuracy curve of
    ``mechanism`` (default: the recommended one) with the remaining budget. Raises GuidanceError."""
    schema = dataset.confirmed_schema()
    if schema is None:
        raise GuidanceError("confirm the dataset's schema before asking for a recommendation")
    budget = ledger.remaining(dataset)
    epsilon = parse_amount(
        query.get("epsilon"), "epsilon", default=DEFAULT_EPSILON, low_open=True, high=MAX_EPSILON, high_open=False
    )
    delta = parse_amount(
        query.get("delta"),
        "delta",
        default=default_delta(budget, dataset.n_rows),
        low_open=False,
        high=1.0,
        high_open=True,
    )
    purpose = purpose_from(query, schema)
    result = rec.recommend(schema, n=dataset.n_rows, epsilon=epsilon, delta=delta, purpose=purpose)
    out = result.to_dict()
    chosen = mechanism if mechanism in registry.supporting(schema) else result.recommended
    out["curve"] = _curve(chosen, schema, dataset.n_rows, delta, purpose, query) if chosen else None
    out["budget"] = {
        "set": budget["set"],
        "epsilon_remaining": budget["epsilon"]["remaining"],
        "delta_remaining": budget["delta"]["remaining"],
    }
    return out


def _curve(name: str, schema, n: int, delta: float, purpose: rec.Purpose, query: Mapping) -> dict:
    points = rec.accuracy_curve(name, schema, n=n, delta=delta, purpose=purpose)
    curve = {"mechanism": name, "points": [p for p in points if p["score"] is not None]}
    target = query.get("target_error")
    if target not in (None, ""):
        goal = parse_amount(target, "target_error", default=0.1, low_open=True, high=1.0, high_open=True)
        curve["target_error"] = goal
        curve["smallest_epsilon"] = rec.smallest_epsilon(name, schema, n=n, delta=delta, purpose=purpose, target=goal)
    return curve


# ------------------------------------------------------------------------------------------------------
# The release page (web): purpose form values, the curve figure
# ------------------------------------------------------------------------------------------------------

PURPOSE_FIELDS = ("purpose", "target", "pairs", "key_columns", "larger_than_memory", "error_pct")


def purpose_query(values: Mapping) -> dict:
    """The purpose fields of the page's GET/POST values as a recommendation query. The page submits every
    purpose's fields; key columns count under "explore" only (the API refuses them with another purpose)."""
    query = {k: values.get(k) for k in ("purpose", "target", "pairs", "key_columns", "larger_than_memory")}
    if (query["purpose"] or "explore") != "explore":
        query["key_columns"] = None
    return {k: v for k, v in query.items() if v}


def default_epsilon(budget: dict) -> float:
    """1, or the remaining epsilon when less is left (never 0: the curve still shows what it would buy)."""
    remaining = budget["epsilon"]["remaining_float"] if budget.get("set") else 0.0
    return min(DEFAULT_EPSILON, remaining) if remaining > 0 else DEFAULT_EPSILON


def query_with_defaults(dataset, values: Mapping) -> dict:
    """The page's GET/POST values as a recommendation query (web names: ``error_pct`` in percent)."""
    budget = ledger.remaining(dataset)
    query = purpose_query(values)
    query["epsilon"] = values.get("epsilon") or f"{default_epsilon(budget):g}"
    query["delta"] = values.get("delta") or f"{default_delta(budget, dataset.n_rows):g}"
    pct = (values.get("error_pct") or "").strip()
    if pct:  # percent on the page, a fraction for the engine; bad text is named by recommendation_for
        try:
            query["target_error"] = repr(float(pct[:AMOUNT_MAX_CHARS]) / 100)
        except ValueError:
            query["target_error"] = pct
    return query


def page_context(
    dataset, schema, values: Mapping, guide: dict | None, guide_error: str | None, prediction: dict | None
) -> dict:
    budget = ledger.remaining(dataset)
    purpose = {k: (values.get(k) or "") for k in PURPOSE_FIELDS}
    purpose["purpose"] = purpose["purpose"] or "explore"
    purpose["epsilon"] = values.get("epsilon") or f"{default_epsilon(budget):g}"
    purpose["delta"] = values.get("delta") or f"{default_delta(budget, dataset.n_rows):g}"
    hidden = {k: v for k, v in purpose.items() if k in PURPOSE_FIELDS and v}
    ctx = {
        "purpose": purpose,
        "purpose_hidden": hidden,
        "guide": guide,
        "guide_error": guide_error,
        "prediction": prediction,
        "columns": schema.names if schema is not None else [],
        "curve_figure": None,
    }
    ctx["glossary"] = GLOSSARY
    ctx["epsilon_words"] = epsilon_in_words(purpose["epsilon"])
    if guide:
        _decorate(guide, hidden, purpose)
        _add_runtimes(guide, schema)
        if guide.get("curve"):
            ctx["curve_figure"] = curve_figure(guide, budget)
    return ctx


GLOSSARY = (
    (
        "ε (epsilon)",
        "the privacy loss charged to the budget: how much the synthetic table can reveal about any one "
        "person. Smaller is more private and noisier.",
    ),
    (
        "δ (delta)",
        "a tiny probability that the ε guarantee does not hold; approximate-DP mechanisms (aim, mst, "
        "dpmerf, Gaussian modes) need one, far below 1 / rows.",
    ),
    (
        "marginals",
        "the counts of the table over one column (1-way) or a pair of columns (2-way): its frequency "
        "tables and cross-tabulations.",
    ),
    (
        "TVD",
        "total variation distance between a synthetic and the real marginal: the share of rows that sit in "
        "the wrong cell (0% identical, 100% nothing in common). 3% 2-way TVD: about 3 rows in 100 land in "
        "the wrong cell of a two-column cross-tabulation.",
    ),
    (
        "rho (ρ)",
        "the budget in zero-concentrated DP, the accounting aim, mst and the Gaussian modes use inside; "
        "dpportal converts it from your ε and δ, and the ledger always charges ε and δ.",
    ),
)


def epsilon_in_words(value) -> str:
    """What ε means in plain words, with the factor e^ε for this value ('' when it does not parse)."""
    try:
        eps = float(str(value)[:AMOUNT_MAX_CHARS])
    except ValueError:
        return ""
    if not (math.isfinite(eps) and 0 < eps <= MAX_EPSILON):
        return ""
    factor = math.exp(eps)
    times = f"{factor:.3g}" if factor < 1e6 else "more than a million"
    return (
        f"ε {eps:g} means: adding or removing any one person's record changes the chance of any result "
        f"by at most a factor of {times} (e^ε). Smaller ε: more private, more noise."
    )


def _add_runtimes(guide: dict, schema) -> None:
    """Each row's run-time estimate for the configuration it predicts (its parameters, the ml target)."""
    from mechanisms.guidance import runtime

    target = guide.get("target") if guide.get("purpose") == "ml" else None
    for m in guide["mechanisms"]:
        params = {**m["params"], **({"target": target} if target and m["label_conditional"] else {})}
        try:
            est = runtime.estimate(
                m["mechanism"],
                n=int(guide["rows"]),
                schema=schema,
                params=params,
                epsilon=guide["epsilon"],
                delta=guide["delta"] or None,
            )
        except (ValueError, TypeError, ArithmeticError):
            m["runtime_text"] = ""
            continue
        m["runtime_text"] = est.to_dict()["text"]


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1%}"


def _decorate(guide: dict, hidden: dict, purpose: dict) -> None:
    """Display strings and links for the template (percentages, 'choose' and 'use this epsilon' links)."""
    base = {**hidden, "epsilon": purpose["epsilon"], "delta": purpose["delta"]}
    for m in guide["mechanisms"]:
        m["score_pct"], m["tvd_1way_pct"] = _pct(m["score"]), _pct(m["predicted_tvd_1way"])
        m["choose_query"] = urlencode({**base, "mechanism": m["mechanism"]})
    curve = guide.get("curve") or {}
    if curve.get("smallest_epsilon"):
        curve["target_pct"] = _pct(curve["target_error"])
        curve["use_query"] = urlencode(
            {**base, "epsilon": f"{curve['smallest_epsilon']:g}", "mechanism": curve["mechanism"]}
        )
    elif curve.get("target_error"):
        curve["target_pct"] = _pct(curve["target_error"])


def curve_figure(guide: dict, budget: dict) -> dict:
    """Predicted error against epsilon (log axis) for the chosen mechanism, with the remaining budget,
    the epsilon asked for and the accepted error marked. A plotly figure as plain data."""
    from dpportal.dashboards.charts import _layout

    curve = guide["curve"]
    pts = curve["points"]
    if not pts:
        return None
    xs, ys = [p["epsilon"] for p in pts], [p["score"] for p in pts]
    top = max(ys) * 1.05
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"{curve['mechanism']}: predicted error",
            "x": xs,
            "y": ys,
            "line": {"color": "#2857a4"},
            "hovertemplate": "ε %{x}<br>predicted %{y:.1%}<extra></extra>",
        }
    ]
    if budget.get("set") and budget["epsilon"]["remaining_float"] > 0:
        e = budget["epsilon"]["remaining_float"]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"remaining budget ε {budget['epsilon']['remaining']}",
                "x": [e, e],
                "y": [0, top],
                "line": {"color": "#c2572b", "dash": "dash"},
                "hoverinfo": "name",
            }
        )
    e = guide["epsilon"]
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"ε asked: {e:g}",
            "x": [e],
            "y": [_score_at(guide, curve["mechanism"])],
            "marker": {"color": "#2857a4", "size": 10},
        }
    )
    if curve.get("target_error"):
        t = curve["target_error"]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"accepted error {t:.1%}",
                "x": [xs[0], xs[-1]],
                "y": [t, t],
                "line": {"color": "#5f6b7a", "dash": "dot"},
                "hoverinfo": "name",
            }
        )
    title = f"Predicted error of {curve['mechanism']} against ε"
    ticks = [t for t in (0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100) if xs[0] <= t <= xs[-1]]
    return {
        "data": data,
        "layout": _layout(
            title,
            xaxis={"title": {"text": "ε"}, "type": "log", "tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]},
            yaxis={"title": {"text": "predicted error"}, "tickformat": ".0%", "rangemode": "tozero"},
        ),
    }


def _score_at(guide: dict, name: str) -> float | None:
    return next((m["score"] for m in guide["mechanisms"] if m["mechanism"] == name), None)


def would_fail_reason(dataset, mechanism: str, epsilon, delta) -> str | None:
    """Why ``mechanism`` is predicted near-uniform on this dataset (public inputs only), or None. Used by
    the API to ask for an explicit confirmation, like the release form's checkbox. Amounts that do not
    parse are left to the release's own validation (which names them)."""
    setting = _setting(dataset, mechanism, epsilon, delta)
    if setting is None:
        return None
    p = rec.predict(mechanism, setting, rec.Purpose())
    return p.reason if p.status == "would-fail" else None


def _setting(dataset, mechanism: str, epsilon, delta) -> rec.Setting | None:
    """The public setting of a release request (schema, n, epsilon, delta), or None when the mechanism
    cannot run on the schema or an amount does not parse (the release's own validation names it)."""
    schema = dataset.confirmed_schema()
    if schema is None or mechanism not in registry.supporting(schema):
        return None
    try:
        eps = parse_amount(
            epsilon, "epsilon", default=DEFAULT_EPSILON, low_open=True, high=MAX_EPSILON, high_open=False
        )
        dlt = parse_amount(delta, "delta", default=0.0, low_open=False, high=1.0, high_open=True)
        return rec.Setting(schema, dataset.n_rows, eps, dlt)
    except (GuidanceError, ValueError):
        return None


HIGH_ERROR = 0.30  # a predicted error above this, where more epsilon would bring it under, needs a confirmation


def high_error_reason(
    dataset, mechanism: str, epsilon, delta, *, params: Mapping | None = None, query: Mapping | None = None
) -> str | None:
    """Why a release of ``mechanism`` at this epsilon is predicted to keep little of the table (its error,
    by the purpose's measure, above HIGH_ERROR while a larger epsilon is predicted below it), or None.
    Public inputs only. The form and the API ask for an explicit confirmation with this reason."""
    setting = _setting(dataset, mechanism, epsilon, delta)
    if setting is None:
        return None
    schema, eps, dlt = setting.schema, setting.epsilon, setting.delta
    try:
        purpose = purpose_from(query or {}, schema)
        p = rec.predict(mechanism, setting, purpose, _choice_params(mechanism, params or {}))
        if p.status != "ok" or p.score is None or p.score <= HIGH_ERROR:
            return None
        enough = rec.smallest_epsilon(
            mechanism, schema, n=dataset.n_rows, target=HIGH_ERROR, delta=dlt, purpose=purpose
        )
    except (GuidanceError, ValueError, TypeError, ArithmeticError):
        return None  # amounts and parameters are named by the release's own validation
    if enough is None or enough <= eps:
        return None  # no epsilon helps (e.g. a tiny table): not a setting the steward can fix here
    return (
        f"{mechanism}'s predicted error at ε {eps:g} is {p.score:.0%} (about {round(p.score * 100)} rows in 100 "
        f"in the wrong cell of a two-column cross-tabulation), above the {HIGH_ERROR:.0%} at which dpportal "
        f"asks for a confirmation; ε {enough:g} or more is predicted below it"
    )


def _choice_params(mechanism: str, params: Mapping) -> dict:
    """The parameters that change a prediction and arrive as words (e.g. noise_type, workload, key_columns)."""
    specs = {s.name: s for s in registry.get(mechanism).params}
    return {
        k: v
        for k, v in params.items()
        if k in specs and (specs[k].type == "choice" and v in specs[k].choices or specs[k].type == "columns")
    }
