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
    if len(text) > 40:
        raise SchemaRejected(f"column {col!r}: {what} may be at most 40 characters, got {text[:40]!r}...")
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
            if not (bins_text.isascii() and bins_text.isdigit() and len(bins_text) <= 9):
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


# --------------------------------------------------------------------------------------------------
# Wide tables (issue 18): review count and bulk actions on the schema page's working values
# --------------------------------------------------------------------------------------------------

def review_count(rows: list[dict]) -> dict:
    """How many kept columns are not yet ticked as reviewed, and their names."""
    kept = [r for r in rows if r["cur"].get("kind") != "excluded"]
    left = [r["name"] for r in kept if not r["ok"]]
    return {"kept": len(kept), "left": len(left), "names": left}


def apply_bulk(rows: list[dict], post, *, dp_bounds: dict | None = None) -> str:
    """Apply the schema page's bulk action to ``rows`` in place; returns what was done. Actions:
    ``review`` ticks every column of a kind (``bulk_kind``, or "all") as reviewed; ``kind`` sets the
    kind ``bulk_set_kind`` on the columns whose name matches the glob ``bulk_pattern`` (case-insensitive,
    e.g. ``q*`` or ``*_id``), taking bounds or categories from the suggestion when it has that kind."""
    action = post.get("bulk")
    if action == "review":
        kind = post.get("bulk_kind", "all")
        if kind != "all" and kind not in KINDS:
            raise SchemaRejected(f"choose a kind among {['all', *KINDS]}, got {kind!r}")
        hit = [r for r in rows if (kind == "all" or r["cur"].get("kind") == kind) and not r["ok"]]
        for r in hit:
            r["ok"] = True
        return f"Ticked {len(hit)} {'' if kind == 'all' else kind + ' '}column(s) as reviewed: " \
               f"{_names(hit)}. Nothing is saved until you confirm the schema."
    if action == "kind":
        return _bulk_kind(rows, (post.get("bulk_pattern") or "").strip(), post.get("bulk_set_kind", ""))
    if action == "use_dp":
        return _use_dp_bounds(rows, dp_bounds or {})
    raise SchemaRejected(f"unknown bulk action {str(action)[:40]!r}; use 'review', 'kind' or 'use_dp'")


def _use_dp_bounds(rows: list[dict], dp_bounds: dict) -> str:
    """Numeric columns take their private bound estimates (DP outputs: public-safe) and count as
    reviewed; a fill value outside the new bounds is moved to the lower bound."""
    hit = []
    for r in rows:
        b = dp_bounds.get(r["name"])
        if r["cur"].get("kind") in ("continuous", "integer") and b and b.get("lower") is not None \
                and b.get("reliable", True):
            r["cur"] = {**r["cur"], "lower": b["lower"], "upper": b["upper"]}
            fill = _number(str(r["cur"].get("fill") or ""), "fill value", r["name"])
            if fill is not None and not b["lower"] <= fill <= b["upper"]:
                r["cur"]["fill"] = b["lower"]
            r["ok"] = True
            hit.append(r)
    if not hit:
        raise SchemaRejected("no numeric column has a usable private bound estimate yet: estimate them first "
                             "(estimates that hold under 90% of the values are not used)")
    return f"Used the private bound estimates for {len(hit)} column(s): {_names(hit)}. Nothing is saved until " \
           "you confirm the schema."


def _bulk_kind(rows: list[dict], pattern: str, kind: str) -> str:
    if kind not in KINDS:
        raise SchemaRejected(f"choose a kind among {list(KINDS)}, got {kind!r}")
    if not pattern:
        raise SchemaRejected("enter a column name pattern, e.g. q* or *_id")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise SchemaRejected(f"a column name pattern may be at most {MAX_PATTERN_LENGTH} characters, "
                             f"got {len(pattern)}")
    hit = [r for r in rows if glob_match(r["name"].lower(), pattern.lower())]
    if not hit:
        raise SchemaRejected(f"no column name matches the pattern {pattern[:80]!r} (* = any text, ? = one character)")
    for r in hit:
        sug = r["suggested"] or {}
        base = sug if sug.get("kind") == kind else {}
        if kind in ("continuous", "integer") and not base and sug.get("kind") in ("continuous", "integer"):
            base = sug  # integer <-> continuous: the suggested bounds still apply
        categories = list(base.get("categories", []))
        if kind == "categorical" and not base and sug.get("kind") == "integer":
            categories = _integer_codes(sug)
        r["cur"] = {"kind": kind, "lower": base.get("lower", ""), "upper": base.get("upper", ""),
                    "bins": base.get("bins", 10), "fill": base.get("fill", ""), "other": base.get("other", ""),
                    "categories": categories}
        r["ok"] = kind == "excluded"
    return f"Set kind {kind} on {len(hit)} column(s) matching {pattern!r}: {_names(hit)}. Review their values, " \
           "then confirm the schema."


MAX_PATTERN_LENGTH = 200


def glob_match(name: str, pattern: str) -> bool:
    """Whether ``name`` matches ``pattern``, where ``*`` is any text, ``?`` one character and every other
    character itself (no ``[...]`` classes). Greedy with one backtrack point: at most
    len(name) x len(pattern) steps, whatever the pattern (fnmatch's regex could take minutes)."""
    i = j = 0
    star, mark = -1, 0
    while i < len(name):
        if j < len(pattern) and pattern[j] == "*":
            star, mark, j = j, i, j + 1
        elif j < len(pattern) and pattern[j] in ("?", name[i]):
            i, j = i + 1, j + 1
        elif star >= 0:
            mark += 1
            i, j = mark, star + 1
        else:
            return False
    return all(c == "*" for c in pattern[j:])


MAX_CODES = 50  # an integer column becomes a categorical one with a category per value up to this many


def _integer_codes(sug: dict) -> list[str]:
    """Categories for an integer column made categorical (e.g. answer codes 1-5): one per value of
    its suggested bounds, when there are few."""
    lo, hi = sug.get("lower"), sug.get("upper")
    if lo is None or hi is None or hi - lo + 1 > MAX_CODES:
        return []
    return [str(v) for v in range(math.ceil(lo), math.floor(hi) + 1)]


def _names(rows: list[dict], limit: int = 8) -> str:
    names = [r["name"] for r in rows[:limit]]
    return ", ".join(names) + (f" and {len(rows) - limit} more" if len(rows) > limit else "") if rows else "none"


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
