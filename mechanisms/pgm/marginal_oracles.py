"""Marginals of an estimated model (post-processing): the junction tree's clique marginals, projections,
propagation along the tree and variable elimination, for AIM's selection of candidate cliques."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from .constraints import constraint_cliques, log_factors
from .junction_tree import JunctionTreeSize
from .measurement import Clique


def jtree_marginals(mbi, potentials, nodes: tuple[Clique, ...], constraints=()) -> list:
    """Marginals (total 1) of the junction tree's cliques ``nodes`` of the model with ``potentials``:
    Private-PGM's ``message_passing_stable`` on the potentials expanded to those cliques, compiled as
    ONE program. Run op by op, the expansion alone compiled about 150 small programs (credit_default_taiwan
    at 1: 22 s of a 274 s release; california_housing at 1: 1.8 s of 17 s). With the model's structural
    zeros (``constraints``, declared rules), Private-PGM's Shafer-Shenoy, which folds them in as -inf."""
    import jax

    def program(p, constraints):
        if constraints:
            oracle = mbi.marginal_oracles.message_passing_shafer_shenoy
            marginals = oracle(p.expand(list(nodes)), 1.0, constraints=constraints)
        else:
            marginals = mbi.marginal_oracles.message_passing_stable(p.expand(list(nodes)), 1.0)
        return [marginals.project(cl).datavector(flatten=False) for cl in nodes]

    return jax.jit(program)(potentials, tuple(constraints))


def model_cliques(model) -> list[Clique]:
    """The cliques of an estimated model's junction tree: its potentials' and its structural zeros'."""
    return [tuple(c) for c in model.cliques] + constraint_cliques(getattr(model, "constraints", ()))


# The junction tree (MiB, the model-size measure) from which candidate_marginals answers out-of-model pairs
# by propagation on its calibrated marginals rather than by variable elimination on the potentials. Below it,
# compiling the junction tree's message passing (~0.3-0.8 s a round) costs more than the eliminations save.
PROPAGATE_MIN_MIB = 1.0
# ... or when at least this many triples are out of the model's cliques (AIM's 'target' and 'all-3way' workloads):
# variable elimination costs about 10 ms a triple on a 39-column model, conditioning (triple_marginals) a few
# pair propagations in all.
PROPAGATE_MIN_TRIPLES = 50


def candidate_marginals(mbi, model, candidates: Sequence[Clique], total: int) -> dict[Clique, np.ndarray]:
    """The model's marginal counts (flattened, total n) of each candidate clique (post-processing).

    A clique inside one of the model's cliques is a projection of Private-PGM's estimated marginals.
    The others, on a model whose junction tree has at least ``PROPAGATE_MIN_MIB`` MiB: Private-PGM
    computes the junction tree's clique marginals (:func:`jtree_marginals`, one program); a candidate
    inside one of them is its projection, and a pair (a, b) in no common clique is propagated along
    the tree from the cliques holding a (:func:`pair_marginals`). That is the algorithm of mbi's
    ``calculate_many_marginals`` (Koller & Friedman 10.3), which cannot run here: it materialises a
    table over every pair of maximal cliques (products of cliques of MiBs). Any other candidate (a
    triple across cliques, or every out-of-model one on a small model) is computed by variable
    elimination on the model's log-potentials -- Private-PGM's own ``variable_elimination``, executed
    with numpy (:func:`eliminate`) because JAX would compile it anew for every candidate and every
    model. Before round 42 of a credit_default_taiwan release at epsilon 1 (24 columns; a 49.6 MiB
    junction tree; 198 of 290 candidates in no tree clique): eliminations 7.7 s, this 1.4 s.
    ``tests/mechanisms/pgm/test_pgm.py`` checks all three agree."""
    tables = {
        tuple(cl): np.asarray(model.marginals[cl].datavector(flatten=False), dtype=np.float64)
        for cl in model.marginals.cliques
    }
    out: dict[Clique, np.ndarray] = {}
    todo = _projected(tables, candidates, 1.0, out)
    if not todo:
        return out
    domain = model.potentials.domain
    constraints = tuple(getattr(model, "constraints", ()))
    cliques = model_cliques(model)
    triples = sum(len(c) == 3 for c in todo)
    size = JunctionTreeSize(list(domain), [domain[a] for a in domain]).size_mb(cliques)
    if size >= PROPAGATE_MIN_MIB or triples >= PROPAGATE_MIN_TRIPLES:
        jtree, _ = mbi.junction_tree.make_junction_tree(domain, cliques)
        nodes = tuple(tuple(c) for c in jtree.nodes)
        probs = dict(
            zip(
                nodes,
                (np.asarray(t, dtype=np.float64) for t in jtree_marginals(mbi, model.potentials, nodes, constraints)),
            )
        )
        rest = _projected(probs, todo, total, out)
        edges = [tuple(e) for e in jtree.edges]
        pairs = pair_marginals(probs, edges, [c for c in rest if len(c) == 2])
        for cand, table in pairs.items():
            out[cand] = (table * total).ravel()
        todo = [c for c in rest if len(c) != 2]
        for cand, table in triple_marginals(probs, edges, todo).items():
            out[cand] = (table * total).ravel()
        todo = [c for c in todo if c not in out]
    factors = [
        (tuple(cl), np.asarray(model.potentials[cl].datavector(flatten=False), dtype=np.float64))
        for cl in model.potentials.cliques
    ] + log_factors(constraints)
    for cand in todo:
        out[cand] = eliminate(factors, cand, total).ravel()
    return out


def _projected(
    tables: dict[Clique, np.ndarray], candidates: Sequence[Clique], scale: float, out: dict[Clique, np.ndarray]
) -> list[Clique]:
    """Put into ``out`` each candidate's projection of ``tables`` (x ``scale``, flattened); return the
    candidates that no table contains."""
    rest = []
    for cand in candidates:
        table = project_from(tables, cand)
        if table is None:
            rest.append(cand)
        else:
            out[cand] = (table * scale).ravel()
    return rest


def pair_marginals(
    probs: dict[Clique, np.ndarray], edges: Sequence[tuple[Clique, Clique]], pairs: Sequence[Clique]
) -> dict[Clique, np.ndarray]:
    """P(a, b) for each pair of attributes of a calibrated junction tree (a forest): ``probs``
    maps each tree clique to its marginal (axes in the clique's order, consistent on separators),
    ``edges`` joins cliques whose separators are their intersections.

    The tree's distribution is prod_C P(C) / prod_S P(S). From the cliques holding a (a connected
    subtree), a message P(a, S) crosses each separator S leaving it; entering clique C through S it
    gives P(a, b) = sum_S P(a, S) P(S, b) / P(S) for b in C, and the message P(a, S') = sum_S P(a, S)
    P(S, S') / P(S) onward to each other neighbour through S' (a is independent of C's other attributes
    given S). P(S, X) / P(S) is 0 where P(S) is (there P(a, S) is 0 too). Each pair is propagated from
    its attribute with fewer cells; a message goes only into subtrees holding partners still wanted;
    a partner in another tree of the forest is independent of a: P(a) P(b); a partner in a clique with a
    is that clique's projection. Post-processing of the marginals: no privacy cost."""
    nbrs: dict[Clique, list[Clique]] = {c: [] for c in probs}
    for u, v in edges:
        nbrs[u].append(v)
        nbrs[v].append(u)
    beyond: dict[tuple[Clique, Clique], set[str]] = {}  # attributes in the subtree entered by u -> v

    def attrs_beyond(u: Clique, v: Clique) -> set[str]:
        if (u, v) not in beyond:
            reached, stack, seen = set(v), [v], {u, v}
            while stack:
                for x in nbrs[stack.pop()]:
                    if x not in seen:
                        seen.add(x)
                        reached |= set(x)
                        stack.append(x)
            beyond[(u, v)] = reached
        return beyond[(u, v)]

    size = {a: probs[c].shape[i] for c in probs for i, a in enumerate(c)}
    label = {a: i for i, a in enumerate(size)}
    conditionals: dict[tuple[Clique, Clique, Clique], np.ndarray] = {}

    def conditional(c: Clique, sep: Clique, extra: Clique) -> np.ndarray:
        key = (c, sep, extra)
        if key not in conditionals:
            conditionals[key] = _separator_conditional(probs[c], c, sep, extra)
        return conditionals[key]

    wanted: dict[str, set[str]] = {}
    for a, b in pairs:
        first, second = (a, b) if (size[a], label[a]) <= (size[b], label[b]) else (b, a)
        wanted.setdefault(first, set()).add(second)
    found: dict[tuple[str, str], np.ndarray] = {}
    for a, need in wanted.items():
        need = set(need)
        holding = [c for c in probs if a in c]
        for b in list(need):  # in a common clique after all: its projection
            common = next((c for c in holding if b in c), None)
            if common is not None:
                found[(a, b)] = _marginal(probs[common], common, (a, b))
                need.discard(b)
        front = [
            (c, v, _marginal(probs[c], c, (a,) + _common(c, v)))
            for c in holding
            for v in nbrs[c]
            if a not in v and attrs_beyond(c, v) & need
        ]
        while front:
            came, c, message = front.pop()  # message over (a,) + the separator, in ``came``'s order
            sep = _common(came, c)
            labels = [label[a]] + [label[x] for x in sep]
            for b in [b for b in c if b in need]:
                extra = () if b in sep else (b,)
                k = conditional(c, sep, extra)
                found[(a, b)] = np.einsum(
                    message, labels, k, [label[x] for x in sep + extra], [label[a], label[b]], optimize=True
                )
                need.discard(b)
            for v in nbrs[c]:
                if v != came and attrs_beyond(c, v) & need:
                    out_sep = _common(c, v)
                    extra = tuple(x for x in out_sep if x not in sep)
                    k = conditional(c, sep, extra)
                    front.append(
                        (
                            c,
                            v,
                            np.einsum(
                                message,
                                labels,
                                k,
                                [label[x] for x in sep + extra],
                                [label[a]] + [label[x] for x in out_sep],
                                optimize=True,
                            ),
                        )
                    )
        for b in need:  # in another tree of the forest
            pa = _marginal(probs[holding[0]], holding[0], (a,))
            holder = next(c for c in probs if b in c)
            found[(a, b)] = np.multiply.outer(pa, _marginal(probs[holder], holder, (b,)))
    return {(a, b): found[(a, b)] if (a, b) in found else found[(b, a)].T for a, b in pairs}


# Triples (x, a, b) out of any tree clique are computed by conditioning on x where x has at most this many cells
# and at least TRIPLES_PER_CONDITION of them share it: the cost is |x| passes of pair propagation.
MAX_CONDITION_CELLS = 64
TRIPLES_PER_CONDITION = 4


def triple_marginals(
    probs: dict[Clique, np.ndarray], edges: Sequence[tuple[Clique, Clique]], triples: Sequence[Clique]
) -> dict[Clique, np.ndarray]:
    """P(x, a, b) (axes in each triple's order) for the triples that share an attribute x of at most
    ``MAX_CONDITION_CELLS`` cells with at least ``TRIPLES_PER_CONDITION`` others (the target of AIM's 'target'
    workload shares every one); the other triples are left out. For each value v of x, the calibrated
    junction tree of P( . | x = v) (:func:`conditioned`) answers every pair (a, b) by :func:`pair_marginals`,
    and P(x = v, a, b) = P(x = v) P(a, b | x = v). Exact for the tree's distribution: post-processing."""
    groups: dict[str, list[Clique]] = {}
    size = {a: probs[c].shape[i] for c in probs for i, a in enumerate(c)}
    counts: dict[str, int] = {}
    for t in triples:
        for a in t:
            counts[a] = counts.get(a, 0) + 1
    for t in triples:
        shared = [a for a in t if size[a] <= MAX_CONDITION_CELLS and counts[a] >= TRIPLES_PER_CONDITION]
        if shared:
            groups.setdefault(max(shared, key=lambda a: (counts[a], -size[a])), []).append(t)
    out: dict[Clique, np.ndarray] = {}
    for x, group in groups.items():
        holder = next(c for c in probs if x in c)
        px = _marginal(probs[holder], holder, (x,))
        rest = [tuple(a for a in t if a != x) for t in group]
        tables = np.zeros((size[x], len(group)), dtype=object)
        for v in range(size[x]):
            if px[v] <= 0:
                for k, (a, b) in enumerate(rest):
                    tables[v, k] = np.zeros((size[a], size[b]))
                continue
            found = pair_marginals(conditioned(probs, edges, x, v), edges, rest)
            for k, pair in enumerate(rest):
                tables[v, k] = px[v] * found[pair]
        for k, t in enumerate(group):
            joint = np.stack(list(tables[:, k]))  # axes (x,) + rest[k]
            order = (x,) + rest[k]
            out[t] = np.transpose(joint, [order.index(a) for a in t])
    return out


def conditioned(
    probs: dict[Clique, np.ndarray], edges: Sequence[tuple[Clique, Clique]], x: str, v: int
) -> dict[Clique, np.ndarray]:
    """The calibrated junction tree (a forest) of the distribution given x = v (P(x = v) > 0): each clique
    holding x keeps its slice x = v (x's axis kept, zero elsewhere) over P(x = v); from that connected subtree,
    each clique C entered through separator S (x not in S) becomes P(C) P(S | x = v) / P(S), outward; cliques
    in trees without x are unchanged (independent of x)."""
    nbrs: dict[Clique, list[Clique]] = {c: [] for c in probs}
    for u, w in edges:
        nbrs[u].append(w)
        nbrs[w].append(u)
    holding = [c for c in probs if x in c]
    out = dict(probs)
    for c in holding:
        out[c] = given_value(probs[c], c, x, v)
    seen, stack = set(holding), list(holding)
    while stack:
        c = stack.pop()
        for w in nbrs[c]:
            if w in seen:
                continue
            seen.add(w)
            sep = _common(w, c)
            given = _marginal(out[c], c, sep)
            prior = _marginal(probs[w], w, sep)
            ratio = np.divide(given, prior, out=np.zeros_like(given), where=prior > 0)
            order = [sep.index(a) for a in w if a in sep]
            shape = [probs[w].shape[i] if a in sep else 1 for i, a in enumerate(w)]
            out[w] = probs[w] * np.transpose(ratio, order).reshape(shape)
            stack.append(w)
    return out


def given_value(table: np.ndarray, clique: Clique, x: str, v: int) -> np.ndarray:
    """A clique marginal holding x, conditioned on x = v: its slice x = v (x's axis kept, zero elsewhere), total 1."""
    axis = clique.index(x)
    mask = np.zeros(table.shape[axis])
    mask[v] = 1.0
    sliced = table * mask.reshape([-1 if i == axis else 1 for i in range(len(clique))])
    return sliced / sliced.sum()


def _separator_conditional(table: np.ndarray, clique: Clique, sep: Clique, extra: Clique) -> np.ndarray:
    """P(sep, extra) / P(sep) from a clique's marginal ``table``: axes sep then extra; 0 where P(sep) is."""
    joint = _marginal(table, clique, sep + extra)
    den = joint.sum(axis=tuple(range(len(sep), len(sep) + len(extra))), keepdims=True)
    return np.divide(joint, den, out=np.zeros_like(joint), where=den > 0)


def _common(u: Clique, v: Clique) -> Clique:
    """The separator of u and v, in u's order."""
    return tuple(a for a in u if a in v)


def _marginal(table: np.ndarray, attrs: Clique, keep: Clique) -> np.ndarray:
    """``table`` (one axis per attribute of ``attrs``) summed onto ``keep`` (axes in that order)."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in keep)
    kept = [a for a in attrs if a in keep]
    return np.transpose(table.sum(axis=drop), [kept.index(a) for a in keep])


def project_from(tables: dict[Clique, np.ndarray], attrs: Clique) -> np.ndarray | None:
    """``attrs``' table (axes in that order) summed from the first clique containing them, or None."""
    for cl, t in tables.items():
        if set(attrs) <= set(cl):
            drop = tuple(i for i, a in enumerate(cl) if a not in attrs)
            kept = [a for a in cl if a in attrs]
            return np.transpose(t.sum(axis=drop), [kept.index(a) for a in attrs])
    return None


Factor = tuple[Clique, np.ndarray]  # (attributes, log-potential table with one axis per attribute)


def eliminate(factors: Sequence[Factor], query: Clique, total: float) -> np.ndarray:
    """Marginal over ``query`` (axes in that order, summing to ``total``) of the distribution
    proportional to exp(sum of the log-potential ``factors``): variable elimination as in
    Private-PGM's ``variable_elimination`` (greedy smallest-table order, log-sum-exp), in numpy.
    Factors in connected components that do not touch the query only rescale it and are skipped."""
    with np.errstate(divide="ignore"):  # structural zeros (-inf log-potentials) sum to log 0 = -inf
        return _eliminate(factors, query, total)


def _eliminate(factors: Sequence[Factor], query: Clique, total: float) -> np.ndarray:
    relevant = _relevant(factors, set(query))
    sizes = {a: t.shape[i] for cl, t in relevant for i, a in enumerate(cl)}
    to_eliminate = set(sizes) - set(query)
    while to_eliminate:
        z = min(to_eliminate, key=lambda v: math.prod(sizes[a] for a in _union(c for c, _ in relevant if v in c)))
        touching = [f for f in relevant if z in f[0]]
        relevant = [f for f in relevant if z not in f[0]]
        attrs = _union(c for c, _ in touching)
        joint = sum(_align(f, attrs, sizes) for f in touching)
        axis = attrs.index(z)
        peak = joint.max(axis=axis, keepdims=True)
        peak = np.where(np.isfinite(peak), peak, 0.0)
        reduced = np.log(np.exp(joint - peak).sum(axis=axis)) + np.squeeze(peak, axis=axis)
        relevant.append((tuple(a for a in attrs if a != z), reduced))
        to_eliminate.discard(z)
    joint = sum((_align(f, tuple(query), sizes) for f in relevant), np.zeros([sizes[a] for a in query]))
    joint = np.broadcast_to(joint, [sizes[a] for a in query])
    p = np.exp(joint - joint.max())
    return p * (total / p.sum())


def _relevant(factors: Sequence[Factor], query: set[str]) -> list[Factor]:
    reached, keep, changed = set(query), [], True
    pending = list(factors)
    while changed:
        changed = False
        for f in list(pending):
            if reached & set(f[0]):
                reached |= set(f[0])
                keep.append(f)
                pending.remove(f)
                changed = True
    return keep


def _union(cliques: Iterable[Clique]) -> Clique:
    out: list[str] = []
    for cl in cliques:
        out.extend(a for a in cl if a not in out)
    return tuple(out)


def _align(factor: Factor, attrs: Clique, sizes: dict[str, int]) -> np.ndarray:
    """The factor's table with one axis per attribute of ``attrs`` (size 1 where it has none)."""
    cl, table = factor
    order = sorted(range(len(cl)), key=lambda i: attrs.index(cl[i]))
    t = np.transpose(table, order)
    shape = [sizes[a] if a in cl else 1 for a in attrs]
    return t.reshape(shape)
