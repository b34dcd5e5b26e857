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
declared, never learned from the data, so using them costs no privacy. MST and AIM hold them inside
their model as structural zeros (:mod:`mechanisms.pgm.constraints`; ``rules_in_model``); for the other
mechanisms generation draws from the model conditioned on the rules (rows that break a rule are
redrawn: :func:`sample_conforming`, also the guard for MST and AIM). Both are post-processing of the
private measurements and the public schema. Rules the public
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
# Rejection (sample_conforming) is bounded: at most DRAW_FACTOR candidates per requested row plus
# DRAW_FLOOR in all, at most rows + BATCH_FLOOR candidates in one round (its memory), and a large request
# starts with a pilot round of PILOT_ROWS that measures the model's acceptance rate.
DRAW_FACTOR = 20
DRAW_FLOOR = 200_000
BATCH_FLOOR = 100_000
PILOT_ROWS = 20_000
CANDIDATE_CELL_BYTES = 60  # one candidate cell while a round is drawn and checked (object column, masks)
DRAW_SECONDS_PER_CELL = 1.0e-6  # one candidate cell drawn and checked (as guidance.runtime.DRAW)
CHECKED_KINDS = ("forbid", "order", "hierarchy")  # rules a sampled row can break by chance
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
        try:
            return derive.parse_body(body, label)
        except derive.DeriveError as exc:
            raise RuleError(str(exc)) from None
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
        {"forbid": _check_forbid, "order": _check_order, "hierarchy": _check_hierarchy, "derive": _check_derive}[
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


def _check_derive(schema, rule: Rule) -> None:
    try:
        derive.check_rule(schema, rule)
    except derive.DeriveError as exc:
        raise RuleError(str(exc)) from None


def probe_rows(schema, rows: int = PROBE_ROWS, *, fix_hierarchies: bool = True) -> pd.DataFrame:
    """Records drawn from the PUBLIC domain (uniform per column, hierarchy parents set from their map
    unless ``fix_hierarchies`` is False), for the satisfiability check and the draw plan. Public inputs
    only: no private data, so a fixed seed is fine."""
    rng = np.random.default_rng(0)
    out = {}
    for c in schema.kept:
        if c.is_numeric:
            v = rng.uniform(c.lower, c.upper, rows)
            out[c.name] = np.rint(v) if c.kind == "integer" else v
        else:
            out[c.name] = np.asarray(c.categories, dtype=object)[rng.integers(0, len(c.categories), rows)]
    frame = pd.DataFrame(out)
    for rule in schema.rules if fix_hierarchies else ():
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


class RejectionError(RuntimeError):
    """Generation stopped: the model cannot give the requested rows that satisfy the rules within the
    draw limit (the message names the acceptance rate measured and what to change)."""


def draw_limit(rows: int) -> int:
    """Candidate rows :func:`sample_conforming` may draw in all for ``rows`` conforming rows."""
    return DRAW_FACTOR * int(rows) + DRAW_FLOOR


def batch_limit(rows: int) -> int:
    """Candidate rows one round may draw (what bounds the memory of generation)."""
    return int(rows) + BATCH_FLOOR


@dataclass(frozen=True)
class DrawPlan:
    """What generating ``rows`` conforming rows may cost, from the schema and the rules alone (no data).

    ``public_acceptance``: the share of records drawn uniformly from the public domain, each column
    independently, that satisfy every rule: what a model that learned nothing about the rules'
    columns accepts. ``expected_draws``: the candidates drawn at that rate (the requested rows when the
    mechanism builds the rules into its model), at most ``max_draws``; ``max_batch``: the largest round."""

    rows: int
    columns: int
    public_acceptance: float
    expected_draws: int
    max_draws: int
    max_batch: int

    @property
    def extra_draws(self) -> int:
        """Candidates drawn besides the requested rows (the rejection's own work)."""
        return max(self.expected_draws - self.rows, 0)

    @property
    def extra_seconds(self) -> float:
        return self.extra_draws * self.columns * DRAW_SECONDS_PER_CELL

    @property
    def batch_bytes(self) -> int:
        """Peak memory of one round (0 without rules to check: then the sampler draws the rows once)."""
        return self.max_batch * self.columns * CANDIDATE_CELL_BYTES if self.expected_draws > self.rows else 0


def draw_plan(schema, rows: int, *, rules_in_model: bool = False) -> DrawPlan:
    """The :class:`DrawPlan` of ``rows`` conforming rows (public inputs only)."""
    rows = int(rows)
    checked = [r for r in schema.rules if r.kind in CHECKED_KINDS]
    columns = max(len(schema.kept), 1)
    if not checked:
        return DrawPlan(rows, columns, 1.0, rows, rows, rows)
    probe = probe_rows(schema, fix_hierarchies=False)
    bad = np.zeros(len(probe), bool)
    for rule in checked:
        bad |= rule_violations(rule, probe)
    acceptance = max(float((~bad).mean()), 0.5 / len(probe))
    limit = draw_limit(rows)
    expected = rows if rules_in_model else min(limit, math.ceil(rows / acceptance))
    return DrawPlan(rows, columns, acceptance, expected, limit, min(batch_limit(rows), limit))


def sample_conforming(
    draw: Callable[[int], pd.DataFrame],
    schema,
    n: int,
    *,
    progress: Callable[[float, str], None] | None = None,
) -> pd.DataFrame:
    """``n`` rows from ``draw`` (a model's sampler) that satisfy every rule: rows breaking one are
    redrawn, i.e. the model is conditioned on the public rules (post-processing).

    Bounded work: at most :func:`draw_limit` candidates in all and :func:`batch_limit` in one round.
    A request larger than :data:`PILOT_ROWS` starts with a pilot round of that size; after every round
    the acceptance rate measured so far (an optimistic bound on it: accepted + 3 over drawn, about a
    one-sided 95% bound) says whether the remaining rows can be drawn within the limits, and if not,
    generation stops at once with :class:`RejectionError` instead of running its rounds out.
    ``progress(fraction, stage)`` is called before every round after the first: a caller's callback
    that raises (a cancelled job) stops generation between rounds."""
    if not schema.rules:
        return draw(n)
    limit, cap = draw_limit(n), batch_limit(n)
    parts, got, drawn, accepted = [], 0, 0, 0
    for done_rounds in range(MAX_SAMPLE_ROUNDS):
        if progress is not None and done_rounds:
            progress(got / n, f"drawing rows that satisfy the rules: {got:,} of {n:,}")
        need = n - got
        size = min(int(need * 1.2) + 16, PILOT_ROWS) if not drawn else int(need * drawn / max(accepted, 1) * 1.2) + 16
        batch = draw(max(1, min(size, cap, limit - drawn)))
        ok = ~violations(schema, batch)
        k = int(ok.sum())
        drawn, accepted = drawn + len(batch), accepted + k
        if k:
            parts.append(batch[ok])
            got += k
        if got >= n:
            return pd.concat(parts, ignore_index=True).iloc[:n].reset_index(drop=True)
        still = (n - got) * drawn / (accepted + 3)  # candidates still needed at the optimistic rate
        rounds_left = MAX_SAMPLE_ROUNDS - done_rounds - 1
        if drawn + still > limit or still > rounds_left * cap:
            break
    rate = accepted / max(drawn, 1)
    raise RejectionError(
        f"the model puts almost no probability on records that satisfy the rules: {accepted:,} of "
        f"{drawn:,} drawn rows satisfied them ({rate:.2%}), so {n:,} rows would need about "
        f"{n / max(rate, 1e-12):,.0f} draws, more than the limit of {limit:,} ({DRAW_FACTOR} per requested row "
        f"+ {DRAW_FLOOR:,}); generation stopped early. Ask for fewer rows, choose a mechanism that models "
        f"the columns the rules join together (MST, AIM), or check the rules "
        f"({', '.join(r.label for r in schema.rules)[:200]})"
    )
