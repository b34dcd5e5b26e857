"""Guided release: the recommendation and the accuracy curve for a dataset, from PUBLIC inputs only.

The web page and the API call :func:`recommendation_for`. It reads the dataset's confirmed schema,
its public row count n and the remaining budget, never the raw file (tested: the view works with
the raw file unreadable, and two tables with the same schema and n get the same answer). The math
lives in :mod:`mechanisms.guidance.recommend`.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlencode

from dpportal.ledger import services as ledger
from mechanisms import registry
from mechanisms.accounting import MAX_AMOUNT_CHARS as AMOUNT_MAX_CHARS
from mechanisms.accounting import MAX_EPSILON
from mechanisms.guidance import glossary
from mechanisms.guidance import recommend as rec

from .amounts import (
    DEFAULT_EPSILON,
    GuidanceError,
    default_delta,
    default_epsilon,
    epsilon_in_words,
    parse_amount,
)


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
# The release page: purpose form values and display strings (its curve figure: dashboards.charts)
# ------------------------------------------------------------------------------------------------------

PURPOSE_FIELDS = ("purpose", "target", "pairs", "key_columns", "larger_than_memory", "error_pct")


def purpose_query(values: Mapping) -> dict:
    """The purpose fields of the page's GET/POST values as a recommendation query. The page submits every
    purpose's fields; key columns count under "explore" only (the API refuses them with another purpose)."""
    query = {k: values.get(k) for k in ("purpose", "target", "pairs", "key_columns", "larger_than_memory")}
    if (query["purpose"] or "explore") != "explore":
        query["key_columns"] = None
    return {k: v for k, v in query.items() if v}


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
    }
    ctx["glossary"] = glossary.terms()
    ctx["epsilon_words"] = epsilon_in_words(purpose["epsilon"])
    if guide:
        _decorate(guide, hidden, purpose)
        _add_runtimes(guide, schema)
        ctx["key_suggestion"] = _key_suggestion(guide, hidden, purpose)
    return ctx


def _key_suggestion(guide: dict, hidden: dict, purpose: dict) -> dict | None:
    """The key column suggested from the schema for "explore" (none named), with a link that names it: shown
    beside the key-columns field for the steward to confirm, never applied by itself."""
    suggestion = guide.get("suggested_key_columns")
    if not suggestion:
        return None
    names = ",".join(suggestion["columns"])
    query = {**hidden, "epsilon": purpose["epsilon"], "delta": purpose["delta"], "key_columns": names}
    return {**suggestion, "text": names.replace(",", ", "), "use_query": urlencode(query)}


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
