"""Schema confirmation, import/export and budget caps for a dataset (rules live here, not in views)."""

from __future__ import annotations

import math
from fractions import Fraction

from django.utils import timezone

from mechanisms.schema import KINDS, Column, Schema, SchemaError, SchemaMismatch

from .models import Dataset

CHECK_CHUNK_ROWS = 100_000  # schema-fit check streams the file in chunks of this many rows

# Budget guidance by sensitivity of the data (after DP Creator's presets)
BUDGET_PRESETS = {
    "low": {"label": "Low harm: disclosure would not cause material harm", "epsilon": "1", "delta": "0.00001"},
    "moderate": {"label": "Moderate harm: disclosure could cause risk of material harm",
                 "epsilon": "0.25", "delta": "0.000001"},
    "high": {"label": "High harm: disclosure could cause severe harm", "epsilon": "0.05", "delta": "0.0000001"},
}


def budget_initial(budget: dict) -> dict:
    """Budget form initial values: the current caps, as their preset when they match one."""
    if not budget.get("set"):
        return {"preset": "moderate"}
    eps, delta = budget["epsilon"]["cap"], budget["delta"]["cap"]
    for key, p in BUDGET_PRESETS.items():
        if (Fraction(p["epsilon"]), Fraction(p["delta"])) == (Fraction(eps), Fraction(delta)):
            return {"preset": key}
    return {"preset": "custom", "epsilon": eps, "delta": delta}


class SchemaRejected(ValueError):
    """The steward's schema is invalid or does not fit the file (message names the problem)."""


def _number(value: str, what: str, col: str) -> float | None:
    text = (value or "").strip()
    if not text:
        return None
    try:
        v = float(text)
    except ValueError:
        raise SchemaRejected(f"column {col!r}: {what} must be a number, got {text[:40]!r}") from None
    if not math.isfinite(v):
        raise SchemaRejected(f"column {col!r}: {what} must be finite, got {text[:40]!r}")
    return v


def column_from_form(name: str, data) -> Column:
    """One column from form fields (``kind``, ``lower``, ``upper``, ``bins``, ``fill``, ``categories``
    one per line, ``other``)."""
    kind = (data.get("kind") or "").strip()
    if kind not in KINDS:
        raise SchemaRejected(f"column {name!r}: choose a kind among {list(KINDS)}, got {kind!r}")
    try:
        if kind in ("continuous", "integer"):
            bins_text = (data.get("bins") or "10").strip()
            if not bins_text.isdigit():
                raise SchemaRejected(f"column {name!r}: bins must be a whole number, got {bins_text[:20]!r}")
            return Column(name=name, kind=kind, lower=_number(data.get("lower"), "lower bound", name),
                          upper=_number(data.get("upper"), "upper bound", name), bins=int(bins_text),
                          fill=_number(data.get("fill"), "fill value", name))
        if kind == "categorical":
            cats = [c.strip() for c in (data.get("categories") or "").splitlines() if c.strip()]
            other = (data.get("other") or "").strip() or None
            return Column(name=name, kind=kind, categories=tuple(cats), other=other)
        return Column(name=name, kind="excluded")
    except SchemaError as exc:
        raise SchemaRejected(str(exc)) from None


def schema_from_post(dataset: Dataset, post, markers: list[str]) -> Schema:
    cols = []
    for i, name in enumerate(dataset.header):
        fields = {f: post.get(f"col-{i}-{f}", "") for f in ("kind", "lower", "upper", "bins", "fill",
                                                             "categories", "other")}
        cols.append(column_from_form(name, fields))
    try:
        return Schema(columns=tuple(cols), missing_markers=tuple(markers), draft=False)
    except SchemaError as exc:
        raise SchemaRejected(str(exc)) from None


def check_fits(dataset: Dataset, schema: Schema) -> None:
    """Refuse a schema the file does not fit: every record must prepare (SchemaMismatch names why)."""
    unknown = [c.name for c in schema.columns if c.name not in dataset.header]
    if unknown:
        raise SchemaRejected(f"the schema names column(s) not in the file: {unknown[:10]}")
    missing = [h for h in dataset.header if h not in {c.name for c in schema.columns}]
    if missing:
        raise SchemaRejected(f"the schema does not describe column(s) {missing[:10]} of the file "
                             f"(declare them, or mark them excluded)")
    if not dataset.has_raw:
        return  # raw file deleted: nothing left to check against
    try:
        for _ in dataset.source(schema).chunks(CHECK_CHUNK_ROWS):
            pass
    except SchemaMismatch as exc:
        raise SchemaRejected(f"the file does not fit this schema: {exc}") from None


def confirm_schema(dataset: Dataset, schema: Schema) -> Dataset:
    schema = schema.confirmed()
    check_fits(dataset, schema)
    dataset.schema = schema.to_dict()
    dataset.schema_confirmed_at = timezone.now()
    dataset.save(update_fields=["schema", "schema_confirmed_at"])
    return dataset


def parse_schema_json(text: str | dict) -> Schema:
    try:
        if isinstance(text, dict):
            return Schema.from_dict(text)
        return Schema.from_json(text)
    except SchemaError as exc:
        raise SchemaRejected(str(exc)) from None


def import_schema(dataset: Dataset, schema: Schema) -> Dataset:
    """Load a schema JSON (e.g. exported from another dataset) as the working draft to review.
    It replaces the data-derived suggestions; it is confirmed only by :func:`confirm_schema`."""
    unknown = [c.name for c in schema.columns if c.name not in dataset.header]
    if unknown:
        raise SchemaRejected(f"the imported schema names column(s) not in the file: {unknown[:10]}")
    d = schema.to_dict()
    d["draft"] = True
    dataset.schema_draft = d
    dataset.draft_source = "import"
    dataset.save(update_fields=["schema_draft", "draft_source"])
    return dataset


def export_schema(dataset: Dataset) -> dict:
    schema = dataset.working_schema()
    if schema is None:
        raise SchemaRejected("this dataset has no schema yet")
    d = schema.to_dict()
    if not dataset.schema:
        d["draft"] = True
        d["note"] = "DRAFT: values computed from the data; confirm them as public knowledge before use."
    return d
