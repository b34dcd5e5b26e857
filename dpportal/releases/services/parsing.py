"""A release request read and checked: everything checkable without private data (mechanism, schema
kinds, epsilon, delta, parameters, rows). A refusal names the problem; nothing is charged or queued."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from mechanisms import registry
from mechanisms.accounting import canonical
from mechanisms.runner import build

PARAM_PREFIX = "param_"  # a mechanism parameter's field name in the release form and its query string


class ReleaseRequestError(ValueError):
    """A refused release request; the message names the problem. Nothing was charged or queued."""


@dataclass(frozen=True)
class ReleaseRequest:
    mechanism: str
    epsilon: str
    delta: str
    params: dict
    rows: int


def field_text(value, name: str) -> str:
    """The typed text of an amount field (delta: "0" when absent); a boolean is refused."""
    if value is None:
        return "0" if name == "delta" else ""
    if isinstance(value, bool):
        raise ReleaseRequestError(f"{name} must be a number, got {name}={value!r}")
    return str(value).strip()  # not truncated: exact() refuses more than MAX_AMOUNT_CHARS characters


def canonical_amount(value: str, name: str) -> str:
    """The amount's one stored form ('+5' -> '5'); a refusal names the field."""
    try:
        return canonical(value)
    except ValueError as exc:  # name the field: "epsilon: expected a finite number, got 'nan'"
        raise ReleaseRequestError(f"{name}: {exc}") from None


def form_params(specs, values) -> dict:
    """A mechanism's parameters from a form's or query string's raw values (``param_<name>``); empty ones
    are left out (their defaults apply)."""
    return {
        spec.name: values.get(PARAM_PREFIX + spec.name)
        for spec in specs
        if values.get(PARAM_PREFIX + spec.name) not in (None, "")
    }


def parse_rows(value) -> int:
    limit = settings.DPPORTAL_MAX_SYNTHETIC_ROWS
    try:
        if isinstance(value, bool):
            raise ValueError
        rows = int(str(value).strip()) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        raise ReleaseRequestError(f"rows must be a whole number, got rows={value!r}") from None
    if not 1 <= rows <= limit:
        raise ReleaseRequestError(f"rows must be between 1 and {limit:,}, got rows={rows}")
    return rows


def validate(dataset, req: ReleaseRequest):
    """Everything checkable without private data. Returns (mechanism object, cleaned params)."""
    schema = dataset.confirmed_schema()
    if schema is None:
        raise ReleaseRequestError("confirm the dataset's schema before planning a release")
    if not dataset.has_raw:
        raise ReleaseRequestError("the raw data of this dataset was deleted: no new releases can be made")
    if not isinstance(req.mechanism, str) or req.mechanism not in registry.names():
        raise ReleaseRequestError(f"unknown mechanism {req.mechanism!r}; available: {registry.names()}")
    if req.mechanism not in registry.supporting(schema):
        cls = registry.get(req.mechanism)
        bad = sorted(schema.kinds - cls.supported_kinds)
        raise ReleaseRequestError(
            f"mechanism {req.mechanism!r} does not support the schema's column kind(s) "
            f"{bad}; choose one of {registry.supporting(schema)}"
        )
    if not isinstance(req.params, dict):
        raise ReleaseRequestError(f"params must be an object of name: value, got {type(req.params).__name__}")
    try:
        mech = build(
            req.mechanism,
            schema,
            epsilon=req.epsilon,
            delta=req.delta or "0",
            params=req.params,
            n=dataset.n_rows,
            memory_limit=settings.DPPORTAL_MAX_JOB_MEMORY_MB * 2**20,
            rows=req.rows if isinstance(req.rows, int) else None,
        )
    except ValueError as exc:
        raise ReleaseRequestError(str(exc).splitlines()[0]) from None
    return mech


def check_request(dataset, req: ReleaseRequest):
    """Everything plan_release checks before reserving: returns (cleaned request, mechanism object) or
    raises ReleaseRequestError naming the problem. Callers that ask for confirmations run it first, so
    a bad value is named before any confirmation is asked for."""
    epsilon, delta = field_text(req.epsilon, "epsilon"), field_text(req.delta, "delta") or "0"
    epsilon, delta = canonical_amount(epsilon, "epsilon"), canonical_amount(delta, "delta")
    req = ReleaseRequest(req.mechanism, epsilon, delta, req.params, parse_rows(req.rows))
    return req, validate(dataset, req)
