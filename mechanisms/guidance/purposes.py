"""The value objects of a recommendation, all public: what analysts will do with the table
(:class:`Purpose`), the public facts a prediction may use (:class:`Setting`), a mechanism's predicted
errors (:class:`Errors`, what each home's ``predict_accuracy`` returns) and one row of the table the
steward sees (:class:`Prediction`)."""

from __future__ import annotations

import functools
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..accounting import short_repr
from ..schema import MISSING_CATEGORY, Schema

PURPOSES = ("explore", "marginals", "ml")
MAX_KEY_COLUMNS = 3  # as MST's key_columns (mechanisms.synthesizers.mst.MAX_KEY_COLUMNS; a test checks they agree)
STATUSES = ("recommended", "ok", "would-fail", "unavailable")


@dataclass(frozen=True)
class Purpose:
    """What analysts will do with the synthetic table.

    ``explore``: the whole table (every pair), or with ``key_columns`` (at most 3) the table cross-tabulated
    by those columns first (the pairs with a key column); ``marginals``: cross-tabulations of ``pairs``
    (empty = all pairs); ``ml``: train models predicting ``target``. ``larger_than_memory``: the table
    does not fit in the worker's memory, so only streaming mechanisms can run.
    """

    kind: str = "explore"
    target: str | None = None
    pairs: tuple[tuple[str, str], ...] = ()
    larger_than_memory: bool = False
    key_columns: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in PURPOSES:
            raise ValueError(f"purpose must be one of {list(PURPOSES)}, got purpose={self.kind!r}")
        if self.kind == "ml" and not self.target:
            raise ValueError("purpose 'ml' needs a target column (the column models will predict)")
        keys = self.key_columns
        if keys and self.kind != "explore":
            raise ValueError(f"key_columns belong to purpose 'explore', got purpose={self.kind!r}")
        if len(keys) > MAX_KEY_COLUMNS:
            raise ValueError(
                f"key_columns may name at most {MAX_KEY_COLUMNS} columns, got {len(keys)}: {short_repr(list(keys))}"
            )
        twice = next((c for i, c in enumerate(keys) if c in keys[:i]), None)
        if twice is not None:
            raise ValueError(f"key_columns name the column {short_repr(twice)} twice")

    def check(self, schema: Schema) -> None:
        """Every named column must be a kept column of the schema."""
        names = set(schema.names)
        if self.target is not None and self.target not in names:
            raise ValueError(f"target must name a kept column of the schema, got target={self.target!r}")
        for a, b in self.pairs:
            for c in (a, b):
                if c not in names:
                    raise ValueError(f"pair ({a!r}, {b!r}): {c!r} is not a kept column of the schema")
            if a == b:
                raise ValueError(f"a pair needs two different columns, got ({a!r}, {b!r})")
        for c in self.key_columns:
            if c not in names:
                raise ValueError(f"key_columns must name kept columns of the schema, got {short_repr(c)}")

    def pairs_of_interest(self, schema: Schema) -> list[tuple[int, int]]:
        names = schema.names
        index = {n: i for i, n in enumerate(names)}
        if self.kind == "ml":
            t = index[self.target]
            return [(min(t, j), max(t, j)) for j in range(len(names)) if j != t]
        if self.kind == "marginals" and self.pairs:
            return sorted({(min(index[a], index[b]), max(index[a], index[b])) for a, b in self.pairs})
        keys = {index[c] for c in self.key_columns}
        return [(i, j) for i, j in itertools.combinations(range(len(names)), 2) if not keys or i in keys or j in keys]

    def describe(self) -> str:
        if self.kind == "ml":
            return f"train models that predict {self.target}"
        if self.kind == "marginals":
            return (
                ("cross-tabulate " + ", ".join(f"{a} x {b}" for a, b in self.pairs))
                if self.pairs
                else "cross-tabulate every pair of columns"
            )
        if self.key_columns:
            return f"explore the whole table, cross-tabulated by {and_list(self.key_columns)} first"
        return "explore the whole table"

    def to_dict(self) -> dict:
        return {
            "purpose": self.kind,
            "target": self.target,
            "pairs": [list(p) for p in self.pairs],
            "key_columns": list(self.key_columns),
            "larger_than_memory": self.larger_than_memory,
            "description": self.describe(),
        }

    @classmethod
    def parse(
        cls,
        kind: str | None,
        *,
        target: str | None = None,
        pairs: str | Sequence | None = None,
        larger_than_memory: bool = False,
        key_columns: str | Sequence[str] | None = None,
    ) -> "Purpose":
        """From form / query / CLI text: ``pairs`` as 'a:b, c:d' (or a list of 2-item sequences),
        ``key_columns`` as 'a, b' (or a list of names)."""
        kind = (kind or "explore").strip()
        parsed: list[tuple[str, str]] = []
        if isinstance(pairs, str):
            for item in filter(None, (p.strip() for p in pairs.replace(";", ",").split(","))):
                a, sep, b = item.partition(":")
                if not sep or not a.strip() or not b.strip():
                    raise ValueError(f"pairs are written column:column, separated by commas; got {item!r}")
                parsed.append((a.strip(), b.strip()))
        elif pairs:
            for p in pairs:
                if not isinstance(p, (list, tuple)) or len(p) != 2 or not all(isinstance(c, str) for c in p):
                    raise ValueError(f"each pair must be two column names, got {p!r}")
                parsed.append((p[0], p[1]))
        return cls(
            kind=kind,
            target=(target or "").strip() or None,
            pairs=tuple(parsed),
            larger_than_memory=bool(larger_than_memory),
            key_columns=_names(key_columns),
        )


# Suggesting a key column for "explore" (suggest_key_columns): words a label's name is made of, and the most
# categories a suggested column may declare (a small key domain: every pair with it stays small).
LABEL_WORDS = ("income", "label", "target", "class", "outcome", "y")
SUGGEST_MAX_CATEGORIES = 5


@dataclass(frozen=True)
class KeySuggestion:
    """A column to cross-tabulate by first, suggested from the confirmed schema alone for the steward to
    confirm (it is never applied without them)."""

    columns: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict:
        return {"columns": list(self.columns), "reason": self.reason}


def suggest_key_columns(schema: Schema) -> KeySuggestion | None:
    """The column an "explore" release is likely cross-tabulated by first, from the schema only (names, kinds,
    declared categories; never data): a categorical column of 2 to SUGGEST_MAX_CATEGORIES declared categories
    whose name holds a label word (LABEL_WORDS: 'income', 'adult_income', 'Class'; not 'workclass'), the last
    such; else the last column when it has 2 categories (a table's label is usually last). None otherwise."""
    kept = list(schema.kept)

    def categories(c) -> int:
        return len([x for x in c.categories or () if x != MISSING_CATEGORY]) if c.kind == "categorical" else 0

    def words(name: str) -> set[str]:
        return set(re.split(r"[^0-9a-z]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())) - {""}

    small = [c for c in kept if 2 <= categories(c) <= SUGGEST_MAX_CATEGORIES]
    named = [c for c in small if words(c.name) & set(LABEL_WORDS)]
    if named:
        c = named[-1]
        where = ", the table's last column" if c is kept[-1] else ""
        return KeySuggestion((c.name,), f"{categories(c)} categories, named like a label{where}")
    if small and small[-1] is kept[-1] and categories(kept[-1]) == 2:
        return KeySuggestion((kept[-1].name,), "2 categories, the table's last column (where labels usually are)")
    return None


def and_list(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Column names from 'a, b' or a list of names (empty entries dropped)."""
    if not value:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    elif not all(isinstance(c, str) for c in value):
        raise ValueError(f"key_columns must be column names, got {short_repr(list(value))}")
    return tuple(c.strip() for c in value if c.strip())


@dataclass(frozen=True)
class Setting:
    """The public facts a prediction may use."""

    schema: Schema
    n: int
    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"rows must be a positive integer, got rows={self.n!r}")
        if not (isinstance(self.epsilon, (int, float)) and math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon must be positive and finite, got epsilon={self.epsilon!r}")
        if not (isinstance(self.delta, (int, float)) and 0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got delta={self.delta!r}")

    @functools.cached_property
    def sizes(self) -> list[int]:
        return self.schema.cell_sizes

    @functools.cached_property
    def d(self) -> int:
        return len(self.schema.kept)

    @functools.cached_property
    def pair_key(self) -> list[tuple]:
        """What a pair's predicted error may depend on: each column's cell count and kind."""
        return [(k, c.kind) for k, c in zip(self.sizes, self.schema.kept)]

    def with_epsilon(self, epsilon: float) -> "Setting":
        return Setting(self.schema, self.n, epsilon, self.delta)


@dataclass
class Errors:
    """A mechanism's predicted errors: 1-way TVD per kept column, 2-way TVD for any pair (i < j).
    ``two_way`` may depend on a pair only through its columns' cell counts and kinds (it is cached on
    them, so that tables with hundreds of columns stay fast)."""

    one_way: list[float]
    two_way: Callable[[int, int], float]
    modelled: str
    priors: list[str] = field(default_factory=list)


@dataclass
class Prediction:
    mechanism: str
    title: str
    status: str
    reason: str = ""
    tvd_1way: float | None = None
    tvd_2way: float | None = None
    score: float | None = None  # the purpose's metric: mean predicted 2-way TVD over its pairs
    modelled: str = ""
    priors: list[str] = field(default_factory=list)
    label_conditional: bool = False  # models the other columns given the ml target
    params: dict = field(default_factory=dict)  # parameters the prediction assumes beyond the defaults
    model_quality: dict | None = None  # "train a model": measured TSTR AUC reference (model_quality.reference)

    def to_dict(self) -> dict:
        def r(x):
            return None if x is None else round(x, 4)

        return {
            "mechanism": self.mechanism,
            "title": self.title,
            "status": self.status,
            "reason": self.reason,
            "predicted_tvd_1way": r(self.tvd_1way),
            "predicted_tvd_2way": r(self.tvd_2way),
            "score": r(self.score),
            "modelled": self.modelled,
            "priors": self.priors,
            "params": self.params,
            "label_conditional": self.label_conditional,
            "model_quality": self.model_quality,
        }
