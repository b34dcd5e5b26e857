"""Public consistency rules: facts the steward declares about every possible record.

Four kinds, written in the schema JSON under ``"rules"``:

* ``{"forbid": {"age": [0, 14], "income": ["50000+"]}}``: an impossible combination. A record is
  impossible when every listed condition holds: a numeric column within the closed interval, a
  categorical column among the listed categories.
* ``{"order": ["weeks worked", "age"]}``: the first numeric column is at most the second, in every record.
* ``{"hierarchy": {"child": "detailed industry", "parent": "major industry", "map": {"33": "Retail"}}}``:
  a detailed code implies its major code (children not in the map are unconstrained).
* ``{"derive": {"column": "discharged", "from": "admitted + stay_days", "unit": "day"}}``: a column is a
  sum or difference of others (dates plus durations, totals): computed, not modelled (:mod:`mechanisms.derive`).

Every rule may carry a ``"name"`` shown in messages. Rules are PUBLIC knowledge, like bounds: they are
declared, never learned from the data, so using them costs no privacy. A mechanism's model is fitted as
always; generation then draws from the model conditioned on the rules (rows that break a rule are
redrawn: :func:`sample_conforming`), which is post-processing of the private model. Rules the public
domain cannot satisfy are refused when the schema is built (:func:`check_rules`), before any release is
reserved.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import derive

MAX_RULES = 200
MAX_RULE_VALUES = 10_000  # categories listed in one rule (a hierarchy map counts each pair)
MAX_TOTAL_RULE_VALUES = 200_000  # categories and map pairs listed over all rules (bounds the checking work)
PROBE_ROWS = 20_000  # rows of the public domain drawn to check that the rules leave some record possible
MAX_SAMPLE_ROUNDS = 30  # rejection rounds before generation gives up with a message
KINDS = ("forbid", "order", "hierarchy", "derive")


class RuleError(ValueError):
    """A rule is malformed or cannot be satisfied; the message names it."""


@dataclass(frozen=True)
class Rule:
    kind: str
    spec: Any  # forbid: ((column, values), ...); order: (lesser, greater); hierarchy: (child, parent, ((c, p), ...))
    name: str = ""

    @property
    def label(self) -> str:
        return repr(self.name) if self.name else describe(self)

    def to_dict(self) -> dict:
        if self.kind == "forbid":
            d: dict[str, Any] = {"forbid": {col: list(vals) for col, vals in self.spec}}
        elif self.kind == "order":
            d = {"order": list(self.spec)}
        elif self.kind == "derive":
            d = {"derive": self.spec.to_body()}
        else:
            child, parent, pairs = self.spec
            d = {"hierarchy": {"child": child, "parent": parent, "map": dict(pairs)}}
        if self.name:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Rule":
        if not isinstance(d, dict):
            raise RuleError(f"each rule must be an object, got {type(d).__name__}")
        kinds = [k for k in KINDS if k in d]
        extra = set(d) - set(KINDS) - {"name"}
        if len(kinds) != 1 or extra:
            raise RuleError(f"a rule holds exactly one of {list(KINDS)} (and an optional name), got keys {sorted(d)}")
        name = d.get("name", "")
        if not isinstance(name, str) or len(name) > 200:
            raise RuleError("a rule's name must be a text of at most 200 characters")
        kind, body = kinds[0], d[kinds[0]]
        return cls(kind=kind, spec=_parse(kind, body, name or kind), name=name)


def _parse(kind: str, body: Any, label: str):
    if kind == "forbid":
        if not isinstance(body, dict) or not body:
            raise RuleError(f"rule {label!r}: forbid needs an object of column -> values, got {body!r}"[:300])
        out = []
        for col, vals in body.items():
            if not isinstance(vals, list) or not vals or len(vals) > MAX_RULE_VALUES:
                raise RuleError(f"rule {label!r}: {col!r} needs a non-empty list ([low, high] or categories)")
            out.append((str(col), tuple(vals)))
        return tuple(out)
    if kind == "derive":
        return derive.parse_body(body, label)
    if kind == "order":
        if not isinstance(body, list) or len(body) != 2 or not all(isinstance(c, str) for c in body):
            raise RuleError(f"rule {label!r}: order needs two column names [lesser, greater], got {body!r}"[:300])
        return tuple(body)
    if not isinstance(body, dict) or set(body) != {"child", "parent", "map"} or not isinstance(body["map"], dict):
        raise RuleError(f"rule {label!r}: hierarchy needs child, parent and map (child category -> parent category)")
    if len(body["map"]) > MAX_RULE_VALUES:
        raise RuleError(f"rule {label!r}: at most {MAX_RULE_VALUES} map entries")
    pairs = tuple((str(c), str(p)) for c, p in body["map"].items())
    return (str(body["child"]), str(body["parent"]), pairs)


def describe(rule: Rule) -> str:
    if rule.kind == "forbid":
        return "never " + " and ".join(f"{c} in {list(v)[:4]}" for c, v in rule.spec)
    if rule.kind == "order":
        return f"{rule.spec[0]} <= {rule.spec[1]}"
    if rule.kind == "derive":
        return rule.spec.describe()
    return f"{rule.spec[0]} implies {rule.spec[1]}"


# -- checks against the public schema -----------------------------------------------------------------


def check_rules(schema) -> None:
    """Refuse rules that name unknown columns or values, or that no record of the public domain can
    satisfy (a forbid rule covering the whole domain, an order between disjoint ranges, rules that
    together leave no record possible). Reads only the schema.

    The work is linear in the size of the schema: every listed value is looked up in a set of the
    column's categories (built once per column: :func:`category_set`), at most
    :data:`MAX_TOTAL_RULE_VALUES` values are listed over all rules, and the satisfiability probe
    applies each rule once to :data:`PROBE_ROWS` records (a hash lookup per record and listed column)."""
    if len(schema.rules) > MAX_RULES:
        raise RuleError(f"at most {MAX_RULES} rules, got {len(schema.rules)}")
    total = sum(rule_size(rule) for rule in schema.rules)
    if total > MAX_TOTAL_RULE_VALUES:
        raise RuleError(
            f"the rules list {total:,} values and map entries in all; at most {MAX_TOTAL_RULE_VALUES:,} are allowed"
        )
    for rule in schema.rules:
        {"forbid": _check_forbid, "order": _check_order, "hierarchy": _check_hierarchy, "derive": derive.check_rule}[
            rule.kind
        ](schema, rule)
    if schema.rules and not violations(schema, probe_rows(schema)).__invert__().any():
        raise RuleError(
            f"the rules {', '.join(r.label for r in schema.rules)[:300]} together leave no record of "
            f"the public domain possible (none of {PROBE_ROWS:,} probed records satisfies them)"
        )


def rule_size(rule: Rule) -> int:
    """Values a rule lists (categories or bounds of a forbid rule, pairs of a hierarchy map)."""
    if rule.kind == "forbid":
        return sum(len(vals) for _, vals in rule.spec)
    if rule.kind == "hierarchy":
        return len(rule.spec[2])
    return len(rule.spec) if isinstance(rule.spec, tuple) else 1


@functools.lru_cache(maxsize=64)
def category_set(column) -> frozenset:
    """A categorical column's declared categories as a set (for O(1) lookups), cached per column."""
    return frozenset(column.categories)


def _kept(schema, name: str, rule: Rule, kinds: tuple[str, ...]):
    try:
        c = schema.column(name)
    except KeyError:
        raise RuleError(f"rule {rule.label}: no column {name!r} in the schema") from None
    if c.kind not in kinds:
        raise RuleError(f"rule {rule.label}: column {name!r} is {c.kind}; this rule needs {' or '.join(kinds)}")
    return c


def _check_forbid(schema, rule: Rule) -> None:
    whole = True
    for name, vals in rule.spec:
        c = _kept(schema, name, rule, ("continuous", "integer", "categorical"))
        if c.is_numeric:
            if (
                len(vals) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in vals)
                or vals[0] > vals[1]
            ):
                raise RuleError(f"rule {rule.label}: numeric column {name!r} needs [low, high], got {list(vals)}")
            whole &= vals[0] <= c.lower and vals[1] >= c.upper
        else:
            declared = category_set(c)
            unknown = [v for v in vals if not isinstance(v, str) or v not in declared]
            if unknown:
                raise RuleError(f"rule {rule.label}: {unknown[:3]} are not categories of {name!r}")
            whole &= len(declared.intersection(vals)) == len(declared)
    if whole:
        raise RuleError(f"rule {rule.label} forbids every record (its conditions cover the whole public domain)")


def _check_order(schema, rule: Rule) -> None:
    a, b = (_kept(schema, n, rule, ("continuous", "integer")) for n in rule.spec)
    if a.name == b.name:
        raise RuleError(f"rule {rule.label}: order needs two different columns")
    if a.lower > b.upper:
        raise RuleError(f"rule {rule.label} cannot hold: {a.name} is at least {a.lower} but {b.name} at most {b.upper}")


def _check_hierarchy(schema, rule: Rule) -> None:
    child, parent, pairs = rule.spec
    c, p = (_kept(schema, n, rule, ("categorical",)) for n in (child, parent))
    kids, parents = category_set(c), category_set(p)
    bad = [k for k, v in pairs if k not in kids or v not in parents]
    if bad:
        raise RuleError(f"rule {rule.label}: map entries {bad[:3]} name categories the schema does not declare")


def probe_rows(schema, rows: int = PROBE_ROWS) -> pd.DataFrame:
    """Records drawn from the PUBLIC domain (uniform per column, hierarchy parents set from their map),
    for the satisfiability check. Public inputs only: no private data, so a fixed seed is fine."""
    rng = np.random.default_rng(0)
    out = {}
    for c in schema.kept:
        if c.is_numeric:
            v = rng.uniform(c.lower, c.upper, rows)
            out[c.name] = np.rint(v) if c.kind == "integer" else v
        else:
            out[c.name] = np.asarray(c.categories, dtype=object)[rng.integers(0, len(c.categories), rows)]
    frame = pd.DataFrame(out)
    for rule in schema.rules:
        if rule.kind == "hierarchy":
            child, parent, pairs = rule.spec
            mapped = frame[child].map(dict(pairs))
            frame[parent] = mapped.where(mapped.notna(), frame[parent])
    return derive.complete(schema, frame)  # computed columns from the probed others


# -- applying rules ---------------------------------------------------------------------------------------


def violations(schema, frame: pd.DataFrame) -> np.ndarray:
    """Rows of a prepared or synthetic frame that break at least one rule."""
    bad = np.zeros(len(frame), bool)
    for rule in schema.rules:
        bad |= rule_violations(rule, frame)
    return bad


def rule_violations(rule: Rule, frame: pd.DataFrame) -> np.ndarray:
    if rule.kind == "forbid":
        hit = np.ones(len(frame), bool)
        for name, vals in rule.spec:
            col = frame[name]
            if col.dtype == object:
                hit &= col.isin(vals).to_numpy()
            else:
                x = col.to_numpy(dtype=float)
                hit &= (x >= vals[0]) & (x <= vals[1])
        return hit
    if rule.kind == "order":
        return frame[rule.spec[0]].to_numpy(dtype=float) > frame[rule.spec[1]].to_numpy(dtype=float)
    if rule.kind == "derive":
        return derive.violations(rule.spec, frame)
    child, parent, pairs = rule.spec
    expected = frame[child].map(dict(pairs))
    return (expected.notna() & (expected != frame[parent])).to_numpy()


def sample_conforming(draw: Callable[[int], pd.DataFrame], schema, n: int) -> pd.DataFrame:
    """``n`` rows from ``draw`` (a model's sampler) that satisfy every rule: rows breaking one are
    redrawn, i.e. the model is conditioned on the public rules (post-processing)."""
    if not schema.rules:
        return draw(n)
    parts, got, rate = [], 0, 1.0
    for _ in range(MAX_SAMPLE_ROUNDS):
        batch = draw(min(int((n - got) / rate * 1.2) + 16, 20 * n + 1000))
        ok = ~violations(schema, batch)
        rate = max(float(ok.mean()), 0.01)
        parts.append(batch[ok])
        got += int(ok.sum())
        if got >= n:
            return pd.concat(parts, ignore_index=True).iloc[:n].reset_index(drop=True)
    raise RuntimeError(
        f"the model puts almost no probability on records that satisfy the rules: {got} of {n} rows "
        f"after {MAX_SAMPLE_ROUNDS} rounds; check the rules ({', '.join(r.label for r in schema.rules)[:200]})"
    )
