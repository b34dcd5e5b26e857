"""The estimated model as plain arrays (the junction tree's clique marginals): the private summary AIM
and MST store, and numpy sampling of synthetic cells from it (post-processing, from ``Noise.rng``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .marginal_oracles import jtree_marginals, project_from, model_cliques
from .measurement import Clique


@dataclass
class ModelTables:
    """A fitted graphical model as the marginals (probabilities) of its junction tree's cliques, and
    the order in which to sample columns. This is the private summary AIM and MST store."""

    names: list[str]
    sizes: dict[str, int]
    cliques: list[Clique]
    tables: list[np.ndarray]  # tables[i] has shape sizes of cliques[i], sums to 1
    order: list[str]

    @classmethod
    def from_model(cls, mbi, model, names: Sequence[str], sizes: dict[str, int]) -> "ModelTables":
        domain = mbi.Domain(list(names), [sizes[a] for a in names])
        jtree, elimination = mbi.junction_tree.make_junction_tree(domain, model_cliques(model))
        nodes = [tuple(c) for c in jtree.nodes]
        tables = []
        for t in jtree_marginals(mbi, model.potentials, tuple(nodes), getattr(model, "constraints", ())):
            t = np.clip(np.asarray(t, dtype=np.float64), 0.0, None)
            tables.append(t / t.sum() if t.sum() > 0 else np.full(t.shape, 1.0 / t.size))
        return cls(list(names), dict(sizes), nodes, tables, list(elimination)[::-1])

    def marginal(self, attrs: Clique) -> np.ndarray:
        """Probability table over ``attrs`` (axes in that order) from a clique that contains them."""
        table = project_from(dict(zip(self.cliques, self.tables)), attrs)
        if table is None:
            raise KeyError(f"no clique of the model contains {attrs}")
        return table

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """Synthetic cells (rows x d, in ``names`` order), column by column in the junction tree's
        order, each from its conditional given the columns already drawn that share a clique with
        it. Counts are rounded randomly (totals match the model up to rounding) and uniforms are
        stratified within each parent configuration, as Private-PGM's ``synthetic_data`` does;
        vectorised with numpy and drawn from ``rng`` only."""
        data: dict[str, np.ndarray] = {}
        for col in self.order:
            parents = tuple(a for a in self._neighbours(col) if a in data)
            k = self.sizes[col]
            if not parents:
                data[col] = _rounded_draw(self.marginal((col,)), rows, rng)
                continue
            joint = self.marginal(parents + (col,)).reshape(-1, k)
            row_sums = joint.sum(axis=1, keepdims=True)
            cond = np.where(row_sums > 0, joint / np.where(row_sums > 0, row_sums, 1.0), 1.0 / k)
            parent = np.ravel_multi_index(tuple(data[a] for a in parents), tuple(self.sizes[a] for a in parents))
            data[col] = _stratified_conditional_draw(cond, parent, rng)
        return np.column_stack([data[a] for a in self.names]).astype(np.int64)

    def _neighbours(self, col: str) -> list[str]:
        out: list[str] = []
        for cl in self.cliques:
            if col in cl:
                out.extend(a for a in cl if a != col and a not in out)
        return out

    # -- storage -------------------------------------------------------------------------------
    def to_summary(self, prefix: str = "model") -> dict:
        out: dict = {f"{prefix}_cliques": [list(c) for c in self.cliques], f"{prefix}_order": self.order}
        for i, t in enumerate(self.tables):
            out[f"{prefix}_table_{i}"] = t
        return out

    @classmethod
    def from_summary(
        cls, summary: dict, names: Sequence[str], sizes: dict[str, int], prefix: str = "model"
    ) -> "ModelTables":
        cliques = [tuple(c) for c in summary[f"{prefix}_cliques"]]
        tables = [np.asarray(summary[f"{prefix}_table_{i}"], dtype=np.float64) for i in range(len(cliques))]
        return cls(list(names), dict(sizes), cliques, tables, list(summary[f"{prefix}_order"]))


def _rounded_draw(p: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` values with counts floor(rows p) plus the remainder placed by the fractional parts
    (randomized rounding), in random order."""
    expected = p * rows
    counts = np.floor(expected).astype(np.int64)
    extra = rows - int(counts.sum())
    if extra > 0:
        frac = expected - counts
        frac = frac / frac.sum() if frac.sum() > 0 else np.full(p.size, 1.0 / p.size)
        extra_idx = rng.choice(p.size, size=min(extra, int(np.count_nonzero(frac))), replace=False, p=frac)
        counts[extra_idx] += 1
        counts[np.argmax(p)] += rows - int(counts.sum())
    values = np.repeat(np.arange(p.size), counts)
    return rng.permutation(values)


def _stratified_conditional_draw(cond: np.ndarray, parent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row from ``cond[parent[row]]``; within each parent value the uniforms are
    stratified ((rank + U) / group size), so each group's counts follow the conditional closely."""
    rows = parent.size
    n_parent, k = cond.shape
    order = rng.permutation(rows)
    order = order[np.argsort(parent[order], kind="stable")]
    group_size = np.bincount(parent, minlength=n_parent)
    group_start = np.concatenate([[0], np.cumsum(group_size)[:-1]])
    p_sorted = parent[order]
    u = (np.arange(rows) - group_start[p_sorted] + rng.random(rows)) / group_size[p_sorted]
    cdf = np.cumsum(cond, axis=1)
    cdf[:, -1] = 1.0
    flat = (cdf + np.arange(n_parent)[:, None]).ravel()
    pos = np.searchsorted(flat, p_sorted + u, side="right") - p_sorted * k
    out = np.empty(rows, dtype=np.int64)
    out[order] = np.clip(pos, 0, k - 1)
    return out
