"""Derived columns: public identities that hold exactly in every record, computed rather than modelled.

A ``derive`` rule (written in the schema JSON under ``"rules"``, like every rule of
:mod:`mechanisms.rules`) declares that one numeric column is a sum or difference of others::

    {"derive": {"column": "discharged", "from": "admitted + stay_days", "unit": "day"}}
    {"derive": {"column": "total", "from": "wages + bonus + interest"}}
    {"derive": {"column": "net", "from": "gross - deductions"}}
    {"derive": {"column": "stay_days", "from": "discharged - admitted"}}

**Grammar** (parsed by :func:`parse_expression`, never evaluated): terms joined by ``+`` and ``-``, the
first optionally signed; a term is an integer constant (``+ 1``) or a column name. A name holding ``+``
or ``-``, made of digits only, or with spaces at either end is written in backticks
(```capital-gain` + wages``); a name holding a backtick cannot be named. Every column of a term has
coefficient +1 or -1, and appears once.

**Types** (checked against the schema, :func:`check_rule`): every column is a kept numeric column. Date
columns count as one "date" each, positive or negative: a date column equals an expression whose dates
add up to exactly one date (``admitted + stay_days``, ``admitted - 1``), any other column an expression
whose dates cancel (``discharged - admitted``: a duration); the other terms of an expression with dates
are integer columns counting the dates' granularity (``"unit"``, optional, must name it: ``"day"``).
Dates in one rule share a granularity. An integer column is computed from integer terms only; a
continuous column's ``decimals`` are at least every term's (None, all digits, counts as the most), so
the identity holds in the digits the file writes.

**Not modelled.** Each rule removes one column from what the mechanism models (:func:`model_schema`):
the declared column, except that a duration declared as a difference of dates (``stay_days =
discharged - admitted``) is modelled and the first date of the expression is computed from it
(``discharged = admitted + stay_days``): a date column's cells are wide (20 cells over five years are
91 days each) while a duration's are one per value, so modelling the duration keeps the stays'
distribution and the date comes out exact. The mechanism fits the remaining columns; the generated
rows get the computed column from the others (:func:`complete`), in the column's type (integers as
integers, a continuous column with the decimals the export writes, a date in its declared format; a
computed column declares no ``step``). Rules may chain (``t = a + b``, ``u = t + c``); a column is
computed by at most one rule and the rules' computed columns form no cycle.

**Bounds.** A computed value outside the computed column's declared bounds is clipped to them, so the
row breaks the identity and :func:`mechanisms.rules.sample_conforming` redraws it: the synthetic file
keeps every identity in 100% of its rows and every value within its bounds (the model conditioned on the
public fact that the computed column lies in its bounds, which every confirmed record satisfies).

**Privacy.** The rule is public (declared by the steward, never learned; the file is checked against it
at confirmation, :func:`violations` giving the rows that break it). The computed column is a
deterministic function of other columns of the same record, so fitting the mechanism on the other
columns reads a per-record projection of the table (replace-one neighbours stay replace-one neighbours,
every sensitivity unchanged), and computing it on generated rows is post-processing of the mechanism's
output: no privacy cost.

:func:`suggest` lists identities that hold in every row of an upload, for the draft schema: suggestions
the steward confirms, like bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import combinations, permutations
from typing import Any

import numpy as np
import pandas as pd

MAX_TERMS = 50
MAX_EXPRESSION_CHARS = 10_000
MAX_CONSTANT = 10**15
# Continuous identities hold up to float rounding: |column - expression| <= REL_TOL x (1 + the terms' sizes).
REL_TOL = 1e-9
# Draft suggestions (bounded work): the numeric columns scanned, the rows a candidate is screened on before
# the whole file, and the most identities suggested.
SUGGEST_COLUMNS = 16
SUGGEST_SCREEN_ROWS = 500
MAX_SUGGESTIONS = 5
_NUMBER = re.compile(r"[0-9]+")


class DeriveError(ValueError):
    """A derive rule is malformed or cannot hold; the message names it (:mod:`mechanisms.rules` reports
    it as a RuleError)."""


@dataclass(frozen=True)
class Derive:
    """``column = const + sum(sign * term)``; ``unit`` is the dates' granularity when given."""

    column: str
    terms: tuple[tuple[int, str], ...]  # (+1 | -1, column name)
    const: int = 0
    unit: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.column,) + tuple(n for _, n in self.terms)

    @property
    def expression(self) -> str:
        parts = [(s, _quote(n)) for s, n in self.terms]
        if self.const:
            parts.append((1 if self.const > 0 else -1, str(abs(self.const))))
        text = ("-" if parts[0][0] < 0 else "") + parts[0][1]
        return text + "".join(f" {'+' if s > 0 else '-'} {t}" for s, t in parts[1:])

    def to_body(self) -> dict:
        d: dict[str, Any] = {"column": self.column, "from": self.expression}
        if self.unit is not None:
            d["unit"] = self.unit
        return d

    def describe(self) -> str:
        return f"{self.column} = {self.expression}"


def _quote(name: str) -> str:
    plain = not re.search(r"[+\-`]", name) and name == name.strip() and not _NUMBER.fullmatch(name)
    return name if plain else f"`{name}`"


def parse_expression(text: str, label: str) -> tuple[tuple[tuple[int, str], ...], int]:
    """Terms and integer constant of ``text`` (see the module docstring); DeriveError names the problem."""
    err = DeriveError
    if not isinstance(text, str) or not text.strip():
        raise err(f"rule {label!r}: 'from' needs an expression such as 'a + b - c', got {text!r}"[:300])
    if len(text) > MAX_EXPRESSION_CHARS:
        raise err(f"rule {label!r}: 'from' may be at most {MAX_EXPRESSION_CHARS:,} characters, got {len(text):,}")
    terms: list[tuple[int, str]] = []
    const, pos, sign, first = 0, 0, 1, True
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if first and pos < len(text) and text[pos] in "+-":
            sign, pos = (1 if text[pos] == "+" else -1), pos + 1
            while pos < len(text) and text[pos].isspace():
                pos += 1
        if pos < len(text) and text[pos] == "`":
            end = text.find("`", pos + 1)
            if end < 0:
                raise err(f"rule {label!r}: unclosed backtick in {text!r}"[:300])
            name, quoted, pos = text[pos + 1 : end], True, end + 1
        else:
            match = re.compile(r"[^+\-`]*").match(text, pos)
            name, quoted, pos = match.group().strip(), False, match.end()
        if not name:
            raise err(f"rule {label!r}: a term is missing in {text!r} (write 'a + b - c')"[:300])
        if not quoted and _NUMBER.fullmatch(name):
            if len(name) > 16 or int(name) > MAX_CONSTANT:
                raise err(f"rule {label!r}: constants must be at most {MAX_CONSTANT:.0e}, got {name[:30]}")
            const += sign * int(name)
        else:
            terms.append((sign, name))
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        if text[pos] not in "+-":
            raise err(f"rule {label!r}: expected + or - after {name!r} in {text!r}"[:300])
        sign, pos, first = (1 if text[pos] == "+" else -1), pos + 1, False
    if not terms:
        raise err(f"rule {label!r}: the expression {text!r} names no column"[:300])
    if len(terms) > MAX_TERMS:
        raise err(f"rule {label!r}: at most {MAX_TERMS} terms, got {len(terms)}")
    names = [n for _, n in terms]
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise err(f"rule {label!r}: the column {twice!r} appears twice in {text!r}"[:300])
    return tuple(terms), const


def parse_body(body: Any, label: str) -> Derive:
    """A ``derive`` rule's object (``column``, ``from``, optional ``unit``) as a :class:`Derive`."""
    err = DeriveError
    if not isinstance(body, dict) or not {"column", "from"} <= set(body) or set(body) - {"column", "from", "unit"}:
        raise err(
            f"rule {label!r}: derive needs an object with column, from and an optional unit, e.g. "
            '{"column": "discharged", "from": "admitted + stay_days", "unit": "day"}'
        )
    column, unit = body["column"], body.get("unit")
    if not isinstance(column, str) or not column:
        raise err(f"rule {label!r}: derive's column must be a column name, got {column!r}"[:300])
    if unit is not None and not isinstance(unit, str):
        raise err(f"rule {label!r}: derive's unit must be a granularity such as 'day', got {unit!r}"[:300])
    terms, const = parse_expression(body["from"], label)
    if column in {n for _, n in terms}:
        raise err(f"rule {label!r}: the column {column!r} cannot be computed from itself")
    return Derive(column=column, terms=terms, const=const, unit=unit)


# -- checks against the public schema ---------------------------------------------------------------------


def check_rule(schema, rule) -> None:
    """Refuse a derive rule whose columns are unknown, of the wrong kind or type (see the module
    docstring), or whose expression cannot reach the column's bounds; then the rules together
    (:func:`plan`). Reads only the schema."""
    spec: Derive = rule.spec
    err = DeriveError
    cols = {}
    for name in spec.names:
        try:
            c = schema.column(name)
        except KeyError:
            raise err(f"rule {rule.label}: no column {name!r} in the schema") from None
        if not c.is_numeric:
            raise err(f"rule {rule.label}: column {name!r} is {c.kind}; derive needs numeric or date columns")
        cols[name] = c
    target = cols[spec.column]
    dated = [(s, n) for s, n in spec.terms if cols[n].is_date]
    net = sum(s for s, _ in dated)
    if target.is_date and net != 1:
        raise err(f"rule {rule.label}: a date column equals a date plus or minus a duration (its dates add up to one)")
    if not target.is_date and dated and net != 0:
        raise err(f"rule {rule.label}: {spec.column!r} is not a date, so the expression's dates must cancel (d1 - d2)")
    units = {c.granularity for c in cols.values() if c.is_date}
    if len(units) > 1:
        raise err(f"rule {rule.label}: its dates have different granularities {sorted(units)}")
    if spec.unit is not None and units != {spec.unit}:
        raise err(
            f"rule {rule.label}: unit {spec.unit!r} must be the granularity of its date columns "
            f"({', '.join(sorted(units)) or 'none'})"
        )
    if units:
        frac = [n for n in spec.names if cols[n].kind != "integer"]
        if frac:
            raise err(f"rule {rule.label}: with dates every term is an integer count of {next(iter(units))}s: {frac}")
    if target.kind == "integer":
        frac = [n for _, n in spec.terms if cols[n].kind != "integer"]
        if frac:
            raise err(f"rule {rule.label}: the integer column {spec.column!r} cannot be computed from {frac}")
    else:
        fine = [
            n
            for _, n in spec.terms
            if cols[n].kind == "continuous" and _digits(cols[n].decimals) > _digits(target.decimals)
        ]
        if fine:
            raise err(
                f"rule {rule.label}: {spec.column!r} writes {target.decimals} decimals, fewer than {fine}: "
                "declare at least as many decimals for it"
            )
    computed = cols[solve(spec, schema).column]
    if computed.step is not None:
        raise err(f"rule {rule.label}: {computed.name!r} is computed exactly, not rounded to a step: remove its step")
    lo, hi = _range(spec, cols)
    if lo > target.upper or hi < target.lower:
        raise err(
            f"rule {rule.label} cannot hold: the expression lies in [{lo:g}, {hi:g}] but {spec.column!r} "
            f"in [{target.lower:g}, {target.upper:g}]"
        )
    plan(schema)


def _digits(decimals: int | None) -> int:
    return 10**6 if decimals is None else decimals


def _range(spec: Derive, cols: dict) -> tuple[float, float]:
    lo = hi = float(spec.const)
    for s, n in spec.terms:
        a, b = (cols[n].lower, cols[n].upper) if s > 0 else (-cols[n].upper, -cols[n].lower)
        lo, hi = lo + a, hi + b
    return lo, hi


@dataclass(frozen=True)
class Step:
    """One computed column: ``column = const + sum(sign * term)`` (a rule solved for the column it computes)."""

    column: str
    terms: tuple[tuple[int, str], ...]
    const: int


def solve(spec: Derive, schema) -> Step:
    """The column a rule computes and how: the declared column, except a duration declared as dates'
    difference, which is modelled while the first date of the expression is computed."""
    if _is_date(schema, spec.column) or not any(_is_date(schema, n) for _, n in spec.terms):
        return Step(spec.column, spec.terms, spec.const)
    # column = c + sum(s_i x_i)  =>  x_k = s_k (column - c - sum_{i != k} s_i x_i)
    k, (sk, date) = next((i, t) for i, t in enumerate(spec.terms) if _is_date(schema, t[1]))
    terms = ((sk, spec.column),) + tuple((-sk * s, n) for i, (s, n) in enumerate(spec.terms) if i != k)
    return Step(date, terms, -sk * spec.const)


def _is_date(schema, name: str) -> bool:
    """Whether ``name`` is a date column (an unknown name is not: its own rule's check refuses it)."""
    return any(c.name == name and c.is_date for c in schema.columns)


def plan(schema) -> list[Step]:
    """The computed columns in an order that computes each after its terms; refuses a column computed
    by two rules and rules that compute each other (a cycle)."""
    steps = [solve(r.spec, schema) for r in schema.rules if r.kind == "derive"]
    seen: dict[str, Step] = {}
    for s in steps:
        if s.column in seen:
            raise DeriveError(f"the column {s.column!r} is computed by two derive rules")
        seen[s.column] = s
    order, done = [], set()
    while len(order) < len(steps):
        ready = [s for s in steps if s.column not in done and all(n not in seen or n in done for _, n in s.terms)]
        if not ready:
            stuck = sorted(s.column for s in steps if s.column not in done)
            raise DeriveError(f"derive rules compute the columns {stuck[:5]} from each other (a cycle)")
        order += ready
        done |= {s.column for s in ready}
    return order


def computed_columns(schema) -> list[str]:
    return [s.column for s in plan(schema)]


def model_schema(schema):
    """The schema a mechanism models: the computed columns excluded, with the rules that do not name
    them (the others are applied to the completed rows). The schema itself when it derives nothing."""
    computed = set(computed_columns(schema)) if any(r.kind == "derive" for r in schema.rules) else set()
    if not computed:
        return schema
    return replace(
        schema,
        columns=tuple(type(c)(name=c.name, kind="excluded") if c.name in computed else c for c in schema.columns),
        rules=tuple(r for r in schema.rules if r.kind != "derive" and not computed & _named(r)),
    )


def _named(rule) -> set[str]:
    if rule.kind == "forbid":
        return {c for c, _ in rule.spec}
    if rule.kind == "order":
        return set(rule.spec)
    if rule.kind == "hierarchy":
        return {rule.spec[0], rule.spec[1]}
    return set(rule.spec.names)


# -- applying rules ------------------------------------------------------------------------------------------


def complete(schema, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (rows of the modelled columns) with every computed column added, in the schema's column
    order. A value outside its column's bounds is clipped to them, which breaks the identity in that row
    (:func:`violations`): generation redraws it. Post-processing of the rows."""
    steps = plan(schema) if any(r.kind == "derive" for r in schema.rules) else []
    if not steps:
        return frame
    out = frame.copy()
    for step in steps:
        c = schema.column(step.column)
        value = _evaluate(step.terms, step.const, out)
        value = np.clip(value, c.lower, c.upper)
        out[c.name] = np.rint(value).astype(np.int64) if c.kind == "integer" else value  # decimals: the export
    return out[[c.name for c in schema.kept if c.name in out]]


def _evaluate(terms, const: int, frame: pd.DataFrame) -> np.ndarray:
    value = np.full(len(frame), float(const))
    for s, n in terms:
        value = value + s * frame[n].to_numpy(dtype=float)
    return value


def violations(spec: Derive, frame: pd.DataFrame) -> np.ndarray:
    """Rows where ``column`` differs from the expression (exactly for integers and dates; up to float
    rounding, ``REL_TOL``, for continuous values). Missing cells break the identity."""
    got = frame[spec.column].to_numpy(dtype=float)
    want = _evaluate(spec.terms, spec.const, frame)
    size = np.abs(got) + sum(np.abs(frame[n].to_numpy(dtype=float)) for _, n in spec.terms) + 1.0
    return ~(np.abs(got - want) <= REL_TOL * size)


# -- draft suggestions -----------------------------------------------------------------------------------------


def suggest(schema, raw: pd.DataFrame) -> list[dict]:
    """Derive rules that hold in every row of ``raw`` (the upload's strings, read with the draft
    ``schema``): ``date = date + days`` for two date columns and an integer column of the same
    granularity, and ``c = a + b`` among the other numeric columns. Bounded work: at most
    ``SUGGEST_COLUMNS`` numeric columns of each sort, every candidate screened on the first
    ``SUGGEST_SCREEN_ROWS`` rows, and only the columns of the candidates that pass read from the whole
    file. Skipped: terms constant on the screened rows (``a = b + 0``). At most
    ``MAX_SUGGESTIONS``, one per computed column. SUGGESTIONS computed from the data, like bounds: the
    steward confirms them as public facts or deletes them."""
    nums = [c for c in schema.kept if c.is_numeric and c.name in raw]
    if len(raw) < 2 or len(nums) < 3:
        return []
    numeric = replace(schema, columns=tuple(nums), rules=())
    head = numeric.prepare(raw.head(SUGGEST_SCREEN_ROWS))
    varied = [c for c in nums if head[c.name].nunique() > 1]
    dated = [c for c in varied if c.is_date][:SUGGEST_COLUMNS]
    plain = [c for c in varied if not c.is_date][:SUGGEST_COLUMNS]
    candidates = [
        (d1.name, ((1, d2.name), (1, k.name)), d1.granularity)
        for d1, d2 in permutations(dated, 2)
        if d1.granularity == d2.granularity
        for k in plain
        if k.kind == "integer"
    ] + [
        (c.name, ((1, a.name), (1, b.name)), None)
        for a, b in combinations(plain, 2)
        for c in plain
        if c.name not in (a.name, b.name) and not (c.kind == "integer" and "continuous" in (a.kind, b.kind))
    ]
    passed = [(t, terms, unit) for t, terms, unit in candidates if not violations(Derive(t, terms), head).any()]
    if not passed:
        return []
    named = {n for t, terms, _ in passed for n in (t, *(n for _, n in terms))}
    cols = tuple(c for c in nums if c.name in named)  # the whole file, only the columns still in question
    full = replace(schema, columns=cols, rules=()).prepare(raw[[c.name for c in cols]])
    found: list[dict] = []
    for target, terms, unit in passed:
        if len(found) < MAX_SUGGESTIONS and target not in {f["derive"]["column"] for f in found}:
            if not violations(Derive(target, terms), full).any():
                body = {"column": target, "from": Derive(target, terms).expression}
                found.append({"derive": body | ({"unit": unit} if unit else {})})
    return found


def with_suggestions(schema, raw: pd.DataFrame):
    """A draft ``schema`` with the derive rules :func:`suggest` finds in ``raw`` (the upload's strings)
    added to its rules, each kept only if the schema accepts it (bounds, decimals); the draft unchanged
    when none hold, or when the upload does not read with it."""
    try:
        found = suggest(schema, raw)
    except (ValueError, KeyError):  # SchemaMismatch: the draft does not read the file
        return schema
    d = schema.to_dict()
    rules = list(d.get("rules", []))
    for rule in found:
        try:
            type(schema).from_dict({**d, "rules": rules + [rule]})
        except ValueError:  # SchemaError: e.g. a total whose decimals are fewer than a term's
            continue
        rules.append(rule)
    return type(schema).from_dict({**d, "rules": rules}) if len(rules) > len(d.get("rules", [])) else schema
