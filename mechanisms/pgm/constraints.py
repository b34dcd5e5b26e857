"""Declared rules as structural zeros of the graphical model (Private-PGM's ``mbi.Constraint``).

A rule of the schema (``mechanisms.rules``: forbid, order, hierarchy) names cells of the public domain
that no record can occupy. Each rule becomes a table over the cells of its columns with the forbidden
cells marked (:func:`structural_zeros`); :func:`to_mbi` turns the tables into ``mbi.Constraint`` objects, which
Private-PGM folds into the potentials as ``-inf`` (the estimate puts zero probability there, and the
junction tree holds a clique on each rule's columns). Synthetic rows drawn from such a model never land
in a forbidden cell, so generation needs no rejection for them, and the model fits every noisy
measurement under the rule instead of being conditioned on it afterwards.

A cell is forbidden only when EVERY value it can decode to breaks the rule (categories exactly; a
numeric bin wholly inside a forbidden interval, or wholly above the other column's cell for an order
rule). A bin that straddles a rule's boundary stays allowed; the rare rows decoded on its wrong side are
left to the sampler's guard (``mechanisms.rules.sample_conforming``), which redraws them.

Privacy: rules are PUBLIC (declared in the schema, never learned from the data), so constraining the
model reads nothing private and costs no budget; the estimate stays post-processing of the noisy
measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .measurement import Clique

# A rule over columns whose cells multiply past this is left to the sampler's guard: its clique would be a
# table of the junction tree (8 bytes a cell).
MAX_ZERO_CELLS = 1_000_000


@dataclass(frozen=True)
class StructuralZero:
    """Cells of ``clique`` (axes in that order) that no record can occupy: ``allowed`` is False there."""

    clique: Clique
    allowed: np.ndarray

    @property
    def forbidden_cells(self) -> int:
        return int((~self.allowed).sum())


def cell_ranges(column) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest value each public cell of a numeric column decodes to (closed bounds):
    a bin's integers or its edges, a special value itself."""
    edges = column.bin_edges()
    if column.kind == "integer":
        lo = np.maximum(np.ceil(edges[:-1] - 1e-9), math.ceil(column.lower))
        hi = np.ceil(edges[1:] - 1e-9) - 1
        hi[-1] = math.floor(column.upper)
        hi = np.maximum(hi, lo)
    else:
        lo, hi = edges[:-1].astype(float), edges[1:].astype(float)
    spec = np.asarray(column.special, dtype=float)
    return np.concatenate([lo, spec]), np.concatenate([hi, spec])


def _inside(column, values) -> np.ndarray:
    """Cells of ``column`` all of whose values satisfy one forbid condition."""
    if column.kind == "categorical":
        return np.isin(np.asarray(column.categories, dtype=object), list(values))
    lo, hi = cell_ranges(column)
    return (lo >= float(values[0])) & (hi <= float(values[1]))


def rule_zero(schema, rule) -> StructuralZero | None:
    """The structural zero of one rule, or None when it forbids no whole cell or its table is too large."""
    if rule.kind not in ("hierarchy", "order", "forbid"):
        return None
    if rule.kind == "hierarchy":
        child, parent, pairs = rule.spec
        c, p = schema.column(child), schema.column(parent)
        allowed = np.ones((c.n_cells, p.n_cells), bool)
        cidx = {v: i for i, v in enumerate(c.categories)}
        pidx = {v: i for i, v in enumerate(p.categories)}
        for k, v in pairs:
            allowed[cidx[k]] = False
            allowed[cidx[k], pidx[v]] = True
        clique: Clique = (child, parent)
    elif rule.kind == "order":
        a, b = (schema.column(x) for x in rule.spec)
        lo_a, _ = cell_ranges(a)
        _, hi_b = cell_ranges(b)
        allowed = ~(lo_a[:, None] > hi_b[None, :])
        clique = tuple(rule.spec)
    else:
        clique = tuple(col for col, _ in rule.spec)
        if len(set(clique)) != len(clique):
            return None
        hit = [_inside(schema.column(col), vals) for col, vals in rule.spec]
        forbidden = hit[0]
        for h in hit[1:]:
            forbidden = np.multiply.outer(forbidden, h)
        allowed = ~np.asarray(forbidden, bool).reshape([h.size for h in hit])
    if allowed.size > MAX_ZERO_CELLS or allowed.all():
        return None
    return StructuralZero(clique, allowed)


def structural_zeros(schema, names: Sequence[str] | None = None) -> list[StructuralZero]:
    """Every rule of the schema that forbids whole cells, as structural zeros on the full-resolution cells
    (rules on one clique combined). ``names``: only rules whose columns are all among them. Public inputs only."""
    keep = set(schema.names if names is None else names)
    merged: dict[frozenset, StructuralZero] = {}
    for rule in schema.rules:
        if not set(rule_columns_of(rule)) <= keep:  # a rule on a column the model does not hold (derived, excluded)
            continue
        z = rule_zero(schema, rule)
        if z is None:
            continue
        key = frozenset(z.clique)
        if key in merged:
            old = merged[key]
            allowed = np.transpose(z.allowed, [z.clique.index(a) for a in old.clique])
            merged[key] = StructuralZero(old.clique, old.allowed & allowed)
        else:
            merged[key] = z
    return list(merged.values())


def rule_columns_of(rule) -> tuple[str, ...]:
    if rule.kind == "hierarchy":
        return tuple(rule.spec[:2])
    if rule.kind == "order":
        return tuple(rule.spec)
    if rule.kind == "forbid":
        return tuple(col for col, _ in rule.spec)
    return ()  # a kind this module does not model


def rule_columns(zeros: Sequence[StructuralZero]) -> set[str]:
    return {a for z in zeros for a in z.clique}


def to_mbi(mbi, domain, zeros: Sequence[StructuralZero]) -> tuple:
    """``mbi.Constraint`` objects on ``domain`` (axes in the domain's order), listing the forbidden cells or the
    allowed ones, whichever is shorter."""
    out = []
    for z in zeros:
        clique = domain.canonical(z.clique)
        allowed = np.transpose(z.allowed, [z.clique.index(a) for a in clique])
        sub = domain.project(clique)
        if (~allowed).sum() <= allowed.sum():
            out.append(mbi.Constraint(sub, invalid=np.argwhere(~allowed)))
        else:
            out.append(mbi.Constraint(sub, valid=np.argwhere(allowed)))
    return tuple(out)


def constraint_cliques(constraints) -> list[Clique]:
    return [tuple(c.domain.attributes) for c in constraints]


def log_factors(constraints) -> list[tuple[Clique, np.ndarray]]:
    """The constraints as log-potential factors (0 allowed, -inf forbidden), for variable elimination."""
    return [(tuple(c.domain.attributes), np.asarray(c.potential.values, dtype=np.float64)) for c in constraints]
