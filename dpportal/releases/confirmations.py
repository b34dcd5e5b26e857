"""The confirmations a release asks for before spending budget, from public inputs only (schema, n,
epsilon, delta): a mechanism predicted to fail on the table, and a predicted error above HIGH_ERROR where
a larger epsilon would bring it under. The release form and the API ask for an explicit confirmation
with these reasons, kept on the reservation's ledger entry."""

from __future__ import annotations

from typing import Mapping

from mechanisms import registry
from mechanisms.accounting import MAX_EPSILON
from mechanisms.guidance import recommend as rec

from .amounts import DEFAULT_EPSILON, GuidanceError, parse_amount
from .guidance import purpose_from


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
