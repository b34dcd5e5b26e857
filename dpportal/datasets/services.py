"""Schema confirmation, import/export and budget caps for a dataset (rules live here, not in views)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pandas as pd
from django.utils import timezone

from mechanisms import bounds, categories, safejson
from mechanisms.rules import Rule, RuleError, rule_violations
from mechanisms.schema import KINDS, MAX_SPECIAL, MISSING_CATEGORY, SCALES, Column, Schema, SchemaError, SchemaMismatch

from .models import Dataset

CHECK_CHUNK_ROWS = 100_000  # schema-fit check streams the file in chunks of at most this many rows
CHECK_CHUNK_CELLS = 1_000_000  # ... and of at most this many cells (~70 MB of text in the web process)


def check_chunk_rows(columns: int) -> int:
    """Rows per chunk of the schema-fit check: the web process holds one chunk of text at a time."""
    return max(1, min(CHECK_CHUNK_ROWS, CHECK_CHUNK_CELLS // max(1, columns)))


# Budget guidance by sensitivity of the data (after DP Creator's presets)
BUDGET_PRESETS = {
    "low": {"label": "Low harm: disclosure would not cause material harm", "epsilon": "1", "delta": "0.00001"},
    "moderate": {
        "label": "Moderate harm: disclosure could cause risk of material harm",
        "epsilon": "0.25",
        "delta": "0.000001",
    },
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


COLUMN_FIELDS = (
    "kind",
    "lower",
    "upper",
    "bins",
    "fill",
    "special",
    "scale",
    "decimals",
    "step",
    "granularity",
    "format",
    "categories",
    "other",
)
FORM_KINDS = ("continuous", "integer", "date", "categorical", "excluded")  # "date": an integer count of time units


def special_text(values) -> str:
    """Special values as the schema page shows them: "0, 99999" (dates as ISO dates)."""
    return ", ".join(
        v if isinstance(v, str) else str(int(v)) if float(v).is_integer() else repr(float(v)) for v in values or ()
    )


def _whole(value: str, what: str, col: str, default: str = "") -> int | None:
    text = (value or default).strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise SchemaRejected(f"column {col!r}: {what} must be a whole number, got {text[:20]!r}")
    return int(text)


def _specials(value: str, col: str) -> tuple[float, ...]:
    parts = [p for p in (value or "").replace(";", ",").split(",") if p.strip()]
    if len(parts) > MAX_SPECIAL:
        raise SchemaRejected(f"column {col!r}: at most {MAX_SPECIAL} special values, got {len(parts)}")
    values = [_number(p, "special value", col) for p in parts]
    return tuple(int(v) if v.is_integer() else v for v in values)


def _date_column(name: str, data) -> Column:
    """A date column from the form: ISO bounds, fill and special values, a granularity and a format."""
    text = lambda key: (data.get(key) or "").strip() or None  # noqa: E731
    special = [p.strip() for p in (data.get("special") or "").split(",") if p.strip()]
    return Column.from_dict(
        {
            "name": name,
            "kind": "date",
            "lower": text("lower"),
            "upper": text("upper"),
            "granularity": text("granularity") or "day",
            "format": text("format") or "%Y-%m-%d",
            "bins": _whole(data.get("bins"), "bins", name, default="10"),
            "fill": text("fill"),
            "special": special,
        }
    )


def _step(value: str, col: str) -> float | None:
    step = _number(value, "step", col)
    return int(step) if step is not None and step.is_integer() else step


def column_from_form(name: str, data) -> Column:
    """One column from form fields (``kind``, ``lower``, ``upper``, ``bins``, ``fill``, ``special``
    comma-separated, ``scale``, ``decimals``, ``categories`` one per line, ``other``)."""
    kind = (data.get("kind") or "").strip()
    if kind not in FORM_KINDS:
        raise SchemaRejected(f"column {name!r}: choose a kind among {list(FORM_KINDS)}, got {kind!r}")
    try:
        if kind == "date":
            return _date_column(name, data)
        if kind in ("continuous", "integer"):
            scale = (data.get("scale") or "linear").strip()
            if scale not in SCALES:
                raise SchemaRejected(f"column {name!r}: scale must be one of {list(SCALES)}, got {scale[:20]!r}")
            decimals = _whole(data.get("decimals"), "decimals", name) if kind == "continuous" else None
            return Column(
                name=name,
                kind=kind,
                lower=_number(data.get("lower"), "lower bound", name),
                upper=_number(data.get("upper"), "upper bound", name),
                bins=_whole(data.get("bins"), "bins", name, default="10"),
                fill=_number(data.get("fill"), "fill value", name),
                special=_specials(data.get("special"), name),
                scale=scale,
                decimals=decimals,
                step=_step(data.get("step"), name),
            )
        if kind == "categorical":
            cats = [c.strip() for c in (data.get("categories") or "").splitlines() if c.strip()]
            other = (data.get("other") or "").strip() or None
            return Column(name=name, kind=kind, categories=tuple(cats), other=other)
        return Column(name=name, kind="excluded")
    except SchemaError as exc:
        raise SchemaRejected(str(exc)) from None


# --------------------------------------------------------------------------------------------------
# Wide tables: review count and bulk actions on the schema page's working values
# --------------------------------------------------------------------------------------------------


def markers_meaning(markers) -> str:
    """What the missing-value settings mean, in words (a blank marker box included)."""
    others = [m for m in markers if m]
    empty = "" in markers
    if not others:
        return (
            "No other markers: "
            + ("only empty cells are missing" if empty else "no cell is read as missing")
            + "; a cell like ? or NA is read as a value."
        )
    listed = ", ".join(f"“{m}”" for m in others)
    return f"Missing: {'empty cells and ' if empty else ''}cells equal to {listed}."


def review_count(rows: list[dict]) -> dict:
    """How many kept columns are not yet ticked as reviewed, and their names."""
    kept = [r for r in rows if r["cur"].get("kind") != "excluded"]
    left = [r["name"] for r in kept if not r["ok"]]
    return {"kept": len(kept), "left": len(left), "names": left}


def apply_bulk(rows: list[dict], post, *, dp_bounds: dict | None = None, dp_categories: dict | None = None) -> str:
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
        return (
            f"Ticked {len(hit)} {'' if kind == 'all' else kind + ' '}column(s) as reviewed: "
            f"{_names(hit)}. Nothing is saved until you confirm the schema."
        )
    if action == "kind":
        return _bulk_kind(rows, (post.get("bulk_pattern") or "").strip(), post.get("bulk_set_kind", ""))
    if action == "use_dp":
        return _use_dp_bounds(rows, dp_bounds or {}, dp_categories or {})
    if action == "group_rare":
        return _group_rare(rows)
    raise SchemaRejected(f"unknown bulk action {str(action)[:40]!r}; use 'review', 'kind', 'use_dp' or 'group_rare'")


RARE_GROUP = "(other)"


def _group_rare(rows: list[dict]) -> str:
    """Categorical columns drop their rare categories (flagged when the file was uploaded) from the
    published list: those values are mapped to the column's "other" category ("(other)" when it has
    none, or when its "other" is the missing category: rare labels never become missing values), so no
    rare label is published."""
    hit = []
    for r in rows:
        rare = set(r.get("rare") or ())
        cats = list(r["cur"].get("categories") or [])
        if r["cur"].get("kind") != "categorical" or not rare & set(cats):
            continue
        other = r["cur"].get("other") or RARE_GROUP
        if other in rare or other == MISSING_CATEGORY:
            other = RARE_GROUP
        kept = [c for c in cats if c not in rare]
        r["cur"] = {**r["cur"], "categories": kept + ([other] if other not in kept else []), "other": other}
        r["rare"] = []
        r["ok"] = False
        hit.append(r)
    if not hit:
        raise SchemaRejected("no categorical column has rare categories left to group")
    return (
        f"Grouped the rare categories of {len(hit)} column(s) into their 'other' category: {_names(hit)}. "
        "Review them, then confirm the schema."
    )


def _use_dp_categories(rows: list[dict], found: dict) -> list[dict]:
    """Categorical columns take the column built from their private discovery alone
    (mechanisms.categories.column_from_discovery: the discovered labels, "(missing)" when discovered, the
    fixed "(other)"); nothing of the draft is kept. They count as reviewed."""
    hit = []
    for r in rows:
        d = found.get(r["name"])
        col = categories.column_from_discovery(r["name"], d) if d and r["cur"].get("kind") == "categorical" else None
        if col is not None:
            r["cur"] = _form_values(col)
            r["rare"], r["ok"] = [], True
            hit.append(r)
    return hit


def _form_values(col: Column) -> dict:
    """A column as the schema page's working values (special values as text)."""
    cur = col.to_dict()
    cur["special"] = special_text(cur.get("special", ()))
    return cur


def _use_dp_bounds(rows: list[dict], dp_bounds: dict, dp_categories: dict | None = None) -> str:
    """Numeric columns take the column built from their private bound estimate alone
    (mechanisms.bounds.column_from_estimate: bounds, bins, fill, special values and scale from the DP
    output by fixed rules); nothing of the draft is kept but the kind the steward estimated it under.
    They count as reviewed. Categorical columns take their privately discovered categories."""
    hit = _use_dp_categories(rows, dp_categories or {})
    for r in rows:
        b = dp_bounds.get(r["name"])
        kind = r["cur"].get("kind")
        if kind in ("continuous", "integer") and b and b.get("lower") is not None and b.get("reliable", True):
            r["cur"] = _form_values(bounds.column_from_estimate(r["name"], kind, b))
            r["ok"] = True
            hit.append(r)
    if not hit:
        raise SchemaRejected(
            "no column has a usable private estimate yet: estimate them first "
            "(bound estimates that hold under 90% of the values are not used)"
        )
    return (
        f"Used the private estimates for {len(hit)} column(s): {_names(hit)}: their values now come from "
        "the estimates alone (a missing marker kept as a category is chosen from the noisy counts). Their kinds, "
        "the marker that writes missing values and any suggested rules are still suggestions from the data: keep "
        "them only as public knowledge. Nothing is saved until you confirm the schema."
    )


def _bulk_kind(rows: list[dict], pattern: str, kind: str) -> str:
    if kind not in KINDS:
        raise SchemaRejected(f"choose a kind among {list(KINDS)}, got {kind!r}")
    if not pattern:
        raise SchemaRejected("enter a column name pattern, e.g. q* or *_id")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise SchemaRejected(
            f"a column name pattern may be at most {MAX_PATTERN_LENGTH} characters, got {len(pattern)}"
        )
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
        r["cur"] = {
            "kind": kind,
            "lower": base.get("lower", ""),
            "upper": base.get("upper", ""),
            "bins": base.get("bins", 10),
            "fill": base.get("fill", ""),
            "other": base.get("other", ""),
            "categories": categories,
        }
        r["ok"] = kind == "excluded"
    return (
        f"Set kind {kind} on {len(hit)} column(s) matching {pattern!r}: {_names(hit)}. Review their values, "
        "then confirm the schema."
    )


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


MAX_CODES = 200  # an integer column becomes a categorical one with a category per value up to this many
# (here from the suggested bounds; on the page, static/dpportal/forms.js, from the bounds typed in the row)


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
        fields = {f: post.get(f"col-{i}-{f}", "") for f in COLUMN_FIELDS}
        cols.append(column_from_form(name, fields))
    output = post.get("missing_output", "")
    try:
        return Schema(
            columns=tuple(cols),
            missing_markers=tuple(markers),
            draft=False,
            missing_output=output if output.strip() else None,
            rules=rules_from_text(post.get("rules", "")),
        )
    except SchemaError as exc:
        raise SchemaRejected(str(exc)) from None


MAX_RULES_TEXT = 200_000


def rules_from_text(text: str) -> tuple:
    """Rules from the schema page's JSON list (blank: none); the message names what is wrong."""
    text = (text or "").strip()
    if not text:
        return ()
    if len(text) > MAX_RULES_TEXT:
        raise SchemaRejected(f"the rules may be at most {MAX_RULES_TEXT:,} characters, got {len(text):,}")
    try:
        data = safejson.loads(text)
    except (ValueError, safejson.JsonLimitError) as exc:
        raise SchemaRejected(f"the rules are not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(data, list):
        raise SchemaRejected('the rules must be a JSON list of rule objects, e.g. [{"order": ["a", "b"]}]')
    try:
        return tuple(Rule.from_dict(r) for r in data)
    except RuleError as exc:
        raise SchemaRejected(str(exc)) from None


def rules_text(schema: Schema | None) -> str:
    return (
        json.dumps([r.to_dict() for r in schema.rules], indent=1, ensure_ascii=False) if schema and schema.rules else ""
    )


def check_names(dataset: Dataset, schema: Schema) -> None:
    """Refuse a schema whose columns are not the file's (no record read)."""
    unknown = [c.name for c in schema.columns if c.name not in dataset.header]
    if unknown:
        raise SchemaRejected(f"the schema names column(s) not in the file: {unknown[:10]}")
    missing = [h for h in dataset.header if h not in {c.name for c in schema.columns}]
    if missing:
        raise SchemaRejected(
            f"the schema does not describe column(s) {missing[:10]} of the file (declare them, or mark them excluded)"
        )


def check_fits(dataset: Dataset, schema: Schema, *, progress=None, chunk_rows: int | None = None) -> None:
    """Refuse a schema the file does not fit: every record must prepare (SchemaMismatch names why).
    ``progress(fraction, stage)`` is told how far the read is after each chunk of ``chunk_rows`` rows
    (default :func:`check_chunk_rows`, the web process's bound)."""
    check_names(dataset, schema)
    if not dataset.has_raw:
        return  # raw file deleted: nothing left to check against
    broken = {}
    rows = chunk_rows or check_chunk_rows(len(dataset.header))
    n = max(1, dataset.n_rows)

    def told(seen: int) -> None:
        if progress is not None:
            progress(min(seen / n, 1.0), f"checked {seen:,} of {dataset.n_rows:,} rows")

    try:
        if not schema.rules:  # every record encoded as the mechanisms will read it, nothing kept
            dataset.source(schema).check(rows, progress=told)
        seen = 0
        for chunk in dataset.source(schema).chunks(rows) if schema.rules else ():
            for rule in schema.rules:
                broken[rule.label] = broken.get(rule.label, 0) + int(rule_violations(rule, chunk).sum())
            seen += len(chunk)
            told(seen)
    except SchemaMismatch as exc:
        raise SchemaRejected(f"the file does not fit this schema: {exc}") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:  # read by pandas, as the mechanisms read it
        raise SchemaRejected(f"the file could not be read as CSV: {str(exc).splitlines()[0]}") from None
    broken = {label: k for label, k in broken.items() if k}
    if broken:
        raise SchemaRejected(
            "a public rule must hold for every record, but the file breaks "
            + "; ".join(f"rule {label} in {k} row(s)" for label, k in list(broken.items())[:5])
            + ": correct the rule (or the data)"
        )


def confirm_schema(dataset: Dataset, schema: Schema) -> Dataset:
    refuse_date_problems(schema)
    schema = schema.confirmed()
    check_fits(dataset, schema)
    dataset.schema = schema.to_dict()
    dataset.schema_confirmed_at = timezone.now()
    dataset.save(update_fields=["schema", "schema_confirmed_at"])
    return dataset


def refuse_date_problems(schema: Schema) -> None:
    """A confirmation checks every date format by its round trip, a stored schema's too (Schema.from_stored)."""
    problems = schema.date_problems()
    if problems:
        name, why = next(iter(problems.items()))
        raise SchemaRejected(f"column {name!r}: {why}")


def date_format_notes(schema: Schema | None) -> list[str]:
    """For the dataset page: each date column of the confirmed schema whose format fails the round trip."""
    if schema is None:
        return []
    return [
        f"Column {name!r}: its date format was confirmed before formats were checked by a round trip, and it "
        f"fails that check now ({why}). Releases still use it, but the schema cannot be confirmed again until "
        "you fix the format on the schema page."
        for name, why in schema.date_problems().items()
    ]


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
