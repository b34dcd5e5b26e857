"""PrivHP: private synthetic data from a stream in bounded memory (Private Hot Partition).

Paper: "Private Synthetic Data Generation in Bounded Memory" (arXiv 2412.09756, v4), Algorithm 1 (PrivHP:
initialise, one pass, output), Algorithm 2 (GrowPartition) and Algorithm 3 (Consistency); the formulas lost
from the text are recovered in ``papers/privhp-formulas.md`` (labels [PROSE]/[D] there). The unpruned special
case ``pruning_level = depth`` is the static hierarchical method of He, Vershynin & Zhu (PMM, COLT 2023) with
PrivHP's consistency step.

Domain (public, from the confirmed schema only)
    The unit cube [0,1]^d, one axis per kept column. Continuous columns use the schema's unit encoding
    (``to_unit``: public bounds). Categorical and integer columns are DISCRETE axes with K public values
    (categories; ``ceil(lower)..floor(upper)``): value c owns the cell [c/K, (c+1)/K) of its axis and is
    placed at the centre of that cell. A midpoint cut therefore splits the list of values in half (no
    padding to a power of two); after b = ceil(log2 K) cuts every dyadic cell holds at most one value
    (proof: centres are 1/K apart, cells are <= 1/K wide), the axis is resolved and is skipped from then on.
    Dyadic cells that hold no value centre are *structurally empty*: a public fact, so their counts are set
    to zero by post-processing. Integer columns with more than 2^30 values are treated as continuous.

Hierarchy
    Binary decomposition, level m cuts axis ``schedule[m]`` at its midpoint; axes are cut in turn
    (round robin over the axes not yet resolved). A level-l node is an l-bit integer theta: the bits of
    its path, most significant first. For one record the depth-r id is built from per-axis cell indices by
    byte lookup tables (bit interleaving); its level-l ancestor is ``id_r >> (r - l)`` (bit arithmetic, no
    tree walk).

Algorithm 1 (one pass over ``source.chunks``; the table is never loaded whole)
    * root count = n: public under replace-one neighbours, so it gets no budget and no noise.
    * levels 1..L*: one exact counter per node, initialised with discrete Laplace noise of scale
      ``2 / sigma_l`` drawn before the pass.
    * levels L*+1..r: a private Count-Min sketch of j rows and w columns per level, every cell initialised
      with discrete Laplace noise of scale ``2 j / sigma_l``; row i hashes node ids with multiply-shift
      ``h_i(theta) = (a_i * theta mod 2^64) >> (64 - log2 w)``, a_i odd, drawn from ``noise.private_rng``
      (data independent, but kept secret: a stream separate from the published rows'); w is a power of two.
    * per chunk: level-L* ids are counted with ``bincount``; the sketches get ``bincount`` of each row's
      buckets. The counters of levels < L* are obtained after the pass by summing children: the paper's
      per-item update adds one on every node of the path, addition commutes, so the final counters are
      identical (this saves L* bincounts per chunk).

Privacy (replace-one neighbours, n public) -- derivation
    Replacing record x by x' removes one unit from the level-l node of x and adds one to the level-l node of
    x' (the same node: no change). Hence the level-l counter vector has L1 sensitivity 2. In a Count-Min
    sketch each of the j rows gets -1 in bucket h_i(theta_x) and +1 in bucket h_i(theta_x') (0 on a
    collision), so a level sketch has L1 sensitivity 2j. Discrete Laplace with scale Delta/sigma_l makes
    level l sigma_l-DP; the levels are released together (basic composition, they hold disjoint noise) and
    ``sum_l sigma_l = epsilon`` (``split_budget`` keeps the float sum <= epsilon). Hash functions are drawn
    independently of the data; consistency, growing, top-k and sampling read only the noisy structure
    (post-processing). The paper's Theorem 2 charges 1 per level and j per sketch: that is add/remove
    accounting; under the replace-one relation used here every scale is doubled (papers/privhp-formulas.md
    section 7, option (b)).

Budget split (Lemma 5, Lagrange multipliers; formulas section 10 [D])
    The noise term of the utility bound is sum_l a_l / sigma_l, minimised under sum sigma_l = epsilon by
    ``sigma_l = epsilon sqrt(a_l) / sum_i sqrt(a_i)``, with
    ``a_l = 2^(l-1) delta_(l-1)`` for counter levels (nodes whose consistency error moves mass, times the
    parent cell's l_inf diameter) and ``a_l = h_(l-1) j (delta_(l-1) + sum_(m>=l) delta_m)`` for sketch
    levels (h = hot nodes: 2^L* then k; pruning errors propagate down, Lemma 8). delta_l is the l_inf
    diameter of a level-l cell (0 along resolved discrete axes). For d = 1 the counter levels get equal
    budgets, as in PMM; for d = 2 sigma_l grows like 2^(l/4), PMM's square-root rule.

Algorithm 2/3 (consistency and growing; post-processing)
    Top-down over levels 1..L*, then level by level below L*: the hot nodes' children get the sketch
    estimate ``min_i C[i, h_i(child)]`` and Consistency(parent): (1) clamp children at 0, (2) split the
    difference Delta = parent - child0 - child1 evenly, (3) if a child would become negative it gets 0 and
    its sibling the parent's count. Counts are integers: an odd Delta's extra unit goes to the left child
    at even-numbered parents and to the right child at odd ones, so both constraints hold EXACTLY in
    integer arithmetic (the paper allows fractional counts). A structurally empty child gets 0 and its
    sibling the parent's count. The top-k children by consistent count (ties by position) are the next hot
    set; the others stay as leaves ("cold"); level-r children are leaves.

Sampling
    Root-to-leaf descent with u uniform on {0..n-1}, going left when u < c(left) and otherwise subtracting
    c(left): implemented as a search in the cumulative leaf counts in tree order (exactly the same leaf for
    the same u), then a point uniform in the leaf's cell (uniform over the values of a discrete axis in the
    cell), decoded through ``Schema.from_unit``.

Defaults (parameters left empty are derived from n, d, epsilon and ``memory_mb``; n is public)
    r = ceil(log2(epsilon n)) (He et al.), capped by the resolvable depth and 62. The budget M =
    ``memory_mb`` MiB covers the structure AND the output tree (``memory_model``). If the complete tree fits
    (41 bytes per depth-r node: counters, accumulator, leaves), L* = r: no pruning, exactly PMM's tree.
    Otherwise the exact part gets half of M: L* = floor(log2(M / 2 / 58 bytes)) (paper: L* ~ log2 M);
    j = clamp(ceil(log2(epsilon n) / 8), 2, 6) (Theta(log(epsilon n)) with a small constant: every cell's
    noise grows with j and the min of j noisy rows is biased low); w = the largest power of two with
    (r - L*)(8 j + 17) w <= M / 2 (sketch cells and their share of the output tree); k = w / 2 (w = 2k).

Memory before submission
    ``PrivHP.memory_estimate(schema, n, params=None, *, epsilon=1.0) -> int`` returns the peak bytes of a
    release: structure + output tree + growing temporaries + one chunk's working arrays (the web form
    shows it before the release is submitted; it reads no data; ``params`` may hold the form's raw
    strings, they are validated like the mechanism's). It does not count the Python interpreter and
    libraries (~100-150 MB RSS; OpenDP's native library ~100 MB more). ``PrivHP.plan_for(schema, n,
    epsilon, params)`` gives the resolved parameters (r, L*, k, w, j, per-level budgets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...accounting import EpsilonDeltaEvent, LaplaceEvent, PrivacyCost, split_budget
from ...base import Mechanism, ParamSpec
from ...noise import laplace_scale
from ...schema import Schema
from ...source import TableSource
from . import guide

COUNTER_SENSITIVITY = 2  # L1 change of one level's counter vector under replace-one (-1 and +1)
SKETCH_ROW_SENSITIVITY = 2  # L1 change of ONE sketch row under replace-one; a j-row sketch changes by 2j
MAX_DEPTH = 62  # node ids are int64 bit strings
MAX_DISCRETE_BITS = 30  # discrete axes with more than 2^30 values are treated as continuous (overflow-safe)
DEFAULT_MEMORY_MB = 8.0  # structure budget: 1M words; secure noise for 1M cells takes ~7 s
DEFAULT_CHUNK_ROWS = 100_000  # rows per streamed chunk: working memory ~ chunk x (d + 6) x 8 bytes
WORD = 8  # bytes per counter (int64)
LEAF_BYTES = 17  # an output leaf: id (int64), count (int64), level (int8)
BLOCK_PARENTS = 1 << 15  # parents made consistent at once while growing: bounds the temporaries
NOISE_BLOCK = 1 << 16  # values per call of the secure sampler (its list conversion costs ~70 bytes/value)
GROWTH_WORDS = 16  # int64 temporaries per candidate in one block (measured with tracemalloc: ~12)


# ------------------------------------------------------------------------------------------------
# The public domain: axes, cut schedule, encoding records to cells and decoding cells to points
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Domain:
    """Axes of the unit cube built from the confirmed schema (public)."""

    schema: Schema
    sizes: tuple[int, ...]  # K for a discrete axis, 0 for a continuous one
    bits: tuple[int | None, ...]  # cuts until a discrete axis is resolved (None: continuous)

    @classmethod
    def from_schema(cls, schema: Schema) -> "Domain":
        sizes, bits = [], []
        for c in schema.kept:
            if c.kind == "categorical":
                k = len(c.categories)
            elif c.kind == "integer":
                k = int(math.floor(c.upper) - math.ceil(c.lower)) + 1
            else:
                k = 0
            if k > 2**MAX_DISCRETE_BITS:  # huge integer range: continuous axis + rounding
                k = 0
            sizes.append(k)
            bits.append(None if k == 0 else int(math.ceil(math.log2(k))) if k > 1 else 0)
        return cls(schema=schema, sizes=tuple(sizes), bits=tuple(bits))

    @property
    def d(self) -> int:
        return len(self.sizes)

    @property
    def max_depth(self) -> int:
        if any(b is None for b in self.bits):
            return MAX_DEPTH
        return min(MAX_DEPTH, sum(self.bits))

    def schedule(self, depth: int) -> np.ndarray:
        """Axis cut at levels 1..depth (entry m-1 is level m): round robin over unresolved axes."""
        used = [0] * self.d
        out: list[int] = []
        axis = 0
        while len(out) < depth:
            for _ in range(self.d):
                b = self.bits[axis]
                if b is None or used[axis] < b:
                    break
                axis = (axis + 1) % self.d
            else:
                break  # every axis resolved
            out.append(axis)
            used[axis] += 1
            axis = (axis + 1) % self.d
        return np.asarray(out, dtype=np.int64)

    def cuts(self, schedule: np.ndarray) -> np.ndarray:
        """cuts[l, i] = number of cuts along axis i in levels 1..l (shape (r+1, d))."""
        out = np.zeros((len(schedule) + 1, self.d), dtype=np.int64)
        for m, a in enumerate(schedule, start=1):
            out[m] = out[m - 1]
            out[m, a] += 1
        return out

    def diameters(self, schedule: np.ndarray) -> np.ndarray:
        """delta_l, l = 0..r: l_inf diameter of a level-l cell (0 along resolved discrete axes)."""
        cuts = self.cuts(schedule)
        side = np.ldexp(1.0, -cuts)
        for i, b in enumerate(self.bits):
            if b is not None:
                side[cuts[:, i] >= b, i] = 0.0
        return side.max(axis=1)

    # -- records to cells --------------------------------------------------------------------------
    def codes(self, frame: pd.DataFrame) -> list[np.ndarray]:
        """Per axis: unit coordinate (continuous) or value code 0..K-1 (discrete)."""
        unit = self.schema.to_unit(frame)
        out = []
        for i, c in enumerate(self.schema.kept):
            col = unit[:, i]
            if self.sizes[i] == 0:
                out.append(col)
            elif c.kind == "integer":
                value = np.rint(c.lower + col * (c.upper - c.lower))
                out.append((value - math.ceil(c.lower)).astype(np.int64))
            else:
                out.append(col.astype(np.int64))
        return out

    def cell_index(self, axis: int, values: np.ndarray, t: int) -> np.ndarray:
        """Index of the dyadic cell (t cuts) holding each value: unit coordinate or value centre."""
        if t == 0:
            return np.zeros(len(values), dtype=np.int64)
        k = self.sizes[axis]
        if k == 0:
            q = np.floor(np.asarray(values, dtype=np.float64) * math.ldexp(1.0, t)).astype(np.int64)
            return np.clip(q, 0, (1 << t) - 1)
        c = np.asarray(values, dtype=np.int64)
        return ((2 * c + 1) << t) // (2 * k)  # centre (c + 1/2)/K lies in [q/2^t, (q+1)/2^t)

    def value_range(self, axis: int, prefix: np.ndarray, t: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """Discrete axis: values [lo, hi) whose centres lie in dyadic cell ``prefix`` after t cuts."""
        k = self.sizes[axis]
        p = np.asarray(prefix, dtype=np.int64)
        t = np.broadcast_to(np.asarray(t, dtype=np.int64), p.shape)
        two_t = np.left_shift(np.int64(1), t)
        den = 2 * two_t
        lo = -((two_t - 2 * p * k) // den)  # ceil((2pK - 2^t) / 2^(t+1))
        hi = -((two_t - 2 * (p + 1) * k) // den)
        return np.clip(lo, 0, k), np.clip(hi, 0, k)


def _deinterleave(ids: np.ndarray, level: int, schedule: np.ndarray, d: int) -> list[np.ndarray]:
    """Per-axis cell prefixes of level-``level`` node ids."""
    ids = np.asarray(ids, dtype=np.int64)
    prefix = [np.zeros(len(ids), dtype=np.int64) for _ in range(d)]
    for m in range(1, level + 1):
        a = schedule[m - 1]
        prefix[a] = (prefix[a] << 1) | ((ids >> (level - m)) & 1)
    return prefix


# ------------------------------------------------------------------------------------------------
# Resolved parameters (public: depend on schema, n, epsilon and the user's parameters only)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    depth: int  # r
    pruning_level: int  # L*
    k: int
    width: int  # w (power of two)
    sketch_depth: int  # j
    chunk_rows: int
    sigma: tuple[float, ...]  # budget of levels 1..r
    schedule: tuple[int, ...] = field(repr=False)

    @property
    def sketch_levels(self) -> int:
        return self.depth - self.pruning_level

    def counter_scale(self, level: int) -> float:
        return laplace_scale(sensitivity=COUNTER_SENSITIVITY, epsilon=self.sigma[level - 1])

    def sketch_scale(self, level: int) -> float:
        return laplace_scale(sensitivity=SKETCH_ROW_SENSITIVITY * self.sketch_depth, epsilon=self.sigma[level - 1])

    def memory_bytes(self, d: int) -> dict[str, int]:
        """Peak bytes by part (see ``memory_model``)."""
        return memory_model(self.depth, self.pruning_level, self.k, self.width, self.sketch_depth, self.chunk_rows, d)

    def to_dict(self) -> dict:
        return {
            "depth": self.depth,
            "pruning_level": self.pruning_level,
            "k": self.k,
            "width": self.width,
            "sketch_depth": self.sketch_depth,
            "chunk_rows": self.chunk_rows,
            "sigma": list(self.sigma),
        }


def memory_model(
    depth: int, pruning_level: int, k: int, width: int, sketch_depth: int, chunk_rows: int, d: int
) -> dict[str, int]:
    """Bytes held at the peak of a release, by part (checked against tracemalloc in the tests).

    structure: noisy counters of levels 1..L* (2^(L*+1) words), the exact level-L* accumulator (2^L*) and
    the (r - L*) sketches of j x w words; tree: the output leaves (id, count, level: 17 bytes) of which
    there are at most 2^(L*+1) + 2k(r - L*); growth: block temporaries of the growing step and the hot set;
    chunk: one chunk's frame and the per-record arrays of the update.
    """
    s = depth - pruning_level
    structure = WORD * (2 ** (pruning_level + 1) + 2**pruning_level + s * sketch_depth * width)
    tree = LEAF_BYTES * (2 ** (pruning_level + 1) + 2 * k * s)
    parents = min(BLOCK_PARENTS, max(2**pruning_level, k if s else 0))
    growth = GROWTH_WORDS * WORD * (2 * parents + (k if s else 0))
    chunk = WORD * chunk_rows * (3 * d + 8)
    return {
        "structure": structure,
        "tree": tree,
        "growth": growth,
        "chunk": chunk,
        "total": structure + tree + growth + chunk,
    }


def _pow2_floor(x: float) -> int:
    return 1 << max(int(math.floor(math.log2(x))), 0) if x >= 1 else 1


def _pow2_ceil(x: int) -> int:
    return 1 << max(int(math.ceil(math.log2(max(x, 1)))), 0)


def budget_split(
    epsilon: float, domain: Domain, schedule: np.ndarray, pruning_level: int, k: int, sketch_depth: int
) -> list[float]:
    """sigma_l proportional to sqrt(a_l) (Lemma 5 [D]; see the module docstring)."""
    r = len(schedule)
    delta = domain.diameters(schedule)
    tail = np.concatenate([np.cumsum(delta[::-1])[::-1], [0.0]])  # tail[l] = sum_{m>=l} delta_m
    weights = []
    hot = 2**pruning_level
    for level in range(1, r + 1):
        if level <= pruning_level:
            a = 2.0 ** (level - 1) * delta[level - 1]
        else:
            a = hot * sketch_depth * (delta[level - 1] + tail[level])
            hot = min(k, 2 * hot)
        weights.append(math.sqrt(max(a, 0.0)))
    if sum(weights) <= 0:
        weights = [1.0] * r
    return split_budget(epsilon, weights)


def make_plan(schema: Schema, n: int, epsilon: float, params: dict) -> Plan:
    domain = Domain.from_schema(schema)
    en = max(float(epsilon) * int(n), 2.0)
    r = params.get("depth") or int(math.ceil(math.log2(en)))
    r = max(1, min(int(r), domain.max_depth))
    schedule = domain.schedule(r)
    r = len(schedule)
    if r == 0:
        raise ValueError(
            "the schema's domain has a single point (every kept column has one value): nothing to decompose"
        )
    budget = float(params.get("memory_mb", DEFAULT_MEMORY_MB)) * 2**20  # bytes for structure + tree
    ls = params.get("pruning_level")
    if ls is None:  # full tree if it fits, else the exact part gets half of the budget
        full = (3 * WORD + LEAF_BYTES) * 2**r
        ls = r if full <= budget else int(math.floor(math.log2(budget / 2 / (3 * WORD + 2 * LEAF_BYTES))))
    ls = max(0, min(int(ls), r))
    j = params.get("sketch_depth") or min(max(int(math.ceil(math.log2(en) / 8)), 2), 6)
    k, w = params.get("k"), params.get("width")
    if w is not None:
        w = _pow2_ceil(max(int(w), 2))
    if k is None and w is None:  # the sketches and their share of the tree get the other half
        w = max(_pow2_floor(budget / 2 / (max(r - ls, 1) * (WORD * j + LEAF_BYTES))), 2)
    if w is None:
        w = max(_pow2_ceil(2 * int(k)), 2)
    if k is None:
        k = max(w // 2, 1)
    sigma = budget_split(float(epsilon), domain, schedule, ls, int(k), int(j))
    return Plan(
        depth=r,
        pruning_level=ls,
        k=int(k),
        width=int(w),
        sketch_depth=int(j),
        chunk_rows=min(int(params.get("chunk_rows") or DEFAULT_CHUNK_ROWS), int(n)),
        sigma=tuple(sigma),
        schedule=tuple(int(a) for a in schedule),
    )


# ------------------------------------------------------------------------------------------------
# Algorithm 3: consistency of one level (vectorised over all parents of the level)
# ------------------------------------------------------------------------------------------------


def consistency(
    parent: np.ndarray,
    child0: np.ndarray,
    child1: np.ndarray,
    parent_ids: np.ndarray,
    empty0: np.ndarray | None = None,
    empty1: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 3 on integer counts: returns children >= 0 with child0 + child1 == parent exactly.

    ``parent`` must already be consistent (>= 0). ``empty0/1`` flag structurally empty children (public).
    """
    parent = np.asarray(parent, dtype=np.int64)
    c0 = np.maximum(np.asarray(child0, dtype=np.int64), 0)  # correction 1
    c1 = np.maximum(np.asarray(child1, dtype=np.int64), 0)
    diff = parent - c0 - c1  # deficit > 0, surplus < 0
    half = diff // 2
    odd_left = (diff & 1).astype(bool) & (np.asarray(parent_ids) % 2 == 0)
    a = c0 + half + odd_left  # even split, the odd unit alternating sides
    b = parent - a
    neg_a, neg_b = a < 0, b < 0  # correction 2 (at most one can fire: a + b = parent >= 0)
    a = np.where(neg_a, 0, np.where(neg_b, parent, a))
    if empty1 is not None:  # a structurally empty child gets 0, its sibling the parent's count
        a = np.where(empty1, parent, a)
    if empty0 is not None:
        a = np.where(empty0, 0, a)  # both empty only under an empty parent, whose count is 0
    return a, parent - a


# ------------------------------------------------------------------------------------------------
# The mechanism
# ------------------------------------------------------------------------------------------------


class PrivHP(Mechanism):
    name = "privhp"
    title = "PrivHP: bounded-memory streaming hierarchical decomposition"
    paper = "Private Synthetic Data Generation in Bounded Memory (PrivHP, arXiv 2412.09756), Algorithms 1-3"
    supported_kinds = frozenset({"continuous", "integer", "categorical"})
    streaming = True
    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 3
    target_structure = "joint"
    params = (
        ParamSpec(
            "memory_mb",
            "float",
            DEFAULT_MEMORY_MB,
            "memory budget M of the private structure in MiB (counters + sketches); sets L*, w, k "
            "when they are left empty",
            minimum=0.001,
            maximum=4096,
        ),
        ParamSpec(
            "depth",
            "int",
            None,
            "hierarchy depth r (default ceil(log2(epsilon n)))",
            minimum=1,
            maximum=MAX_DEPTH,
            optional=True,
        ),
        ParamSpec(
            "pruning_level",
            "int",
            None,
            "L*: levels 0..L* keep exact noisy counters; deeper levels use sketches and keep the "
            "top-k nodes (default from memory_mb; = depth when the full tree fits)",
            minimum=0,
            maximum=MAX_DEPTH,
            optional=True,
        ),
        ParamSpec(
            "k",
            "int",
            None,
            "pruning parameter: hot nodes kept per pruned level (default w/2)",
            minimum=1,
            maximum=2**30,
            optional=True,
        ),
        ParamSpec(
            "width",
            "int",
            None,
            "Count-Min sketch width w, rounded up to a power of two (default from memory_mb, or 2k)",
            minimum=2,
            maximum=2**30,
            optional=True,
        ),
        ParamSpec(
            "sketch_depth",
            "int",
            None,
            "Count-Min sketch rows j (default clamp(ceil(log2(eps n)/8), 2, 6))",
            minimum=1,
            maximum=32,
            optional=True,
        ),
        ParamSpec(
            "chunk_rows", "int", DEFAULT_CHUNK_ROWS, "rows read per streamed chunk", minimum=1000, maximum=10_000_000
        ),
    )

    @classmethod
    def check_schema(cls, schema: Schema) -> None:
        super().check_schema(schema)
        if Domain.from_schema(schema).max_depth == 0:  # refused before any data is read
            raise ValueError(
                "the schema's domain has a single point (every kept column has one value): nothing to decompose"
            )

    # -- public planning ------------------------------------------------------------------------------
    @classmethod
    def plan_for(cls, schema: Schema, n: int, epsilon: float, params: dict | None = None) -> Plan:
        if isinstance(n, bool) or int(n) < 1:
            raise ValueError(f"n must be a positive integer, got n={n!r}")
        return make_plan(schema, int(n), float(epsilon), cls.validate_params(dict(params or {}), schema))

    @classmethod
    def memory_parts(cls, schema: Schema, n: int, epsilon: float, params: dict) -> list[dict]:
        plan = cls.plan_for(schema, n, epsilon, params)
        return [
            {
                "part": k,
                "what": guide.MEMORY_PARTS.get(k, k),
                "bytes": v,
                "chunk_rows": plan.chunk_rows if k == "chunk" else None,
            }
            for k, v in plan.memory_bytes(len(schema.kept)).items()
            if k != "total"
        ]

    def check_plan(self, n: int) -> None:
        make_plan(self.schema, int(n), self.epsilon, self.params)

    def planned_memory_bytes(self, n: int) -> int:
        return self.memory_estimate(self.schema, n, self.params, epsilon=self.epsilon)

    @classmethod
    def memory_estimate(cls, schema: Schema, n: int, params: dict | None = None, *, epsilon: float = 1.0) -> int:
        """Bytes the release will hold (structure + growing + one chunk's working arrays); no data read."""
        plan = cls.plan_for(schema, n, epsilon, params)
        return plan.memory_bytes(len(schema.kept))["total"]

    # -- Algorithm 1 ------------------------------------------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        n = int(source.n)
        self.domain = Domain.from_schema(self.schema)
        self.plan = make_plan(self.schema, n, self.epsilon, self.params)
        self._setup_hashing()
        self.progress(0.0, "drawing initial noise")
        state = self._initial_state()
        seen = 0
        for chunk in source.chunks(self.plan.chunk_rows):
            self._update(state, chunk)
            seen += len(chunk)
            self.progress(0.05 + 0.8 * min(seen / n, 1.0), f"streamed {seen} of {n} rows")
        if seen != n:
            raise ValueError(f"the stream held {seen} rows but the public row count is n={n}")
        self._close_counters(state)
        self.progress(0.9, "consistency and growing")
        self._grow(n, state["counters"], state["sketch"])
        self.n = n
        self.progress(1.0, "done")

    def _setup_hashing(self) -> None:
        p = self.plan
        self.hash_a = self.noise.private_rng.integers(
            0, 2**64, size=(p.sketch_levels, p.sketch_depth), dtype=np.uint64, endpoint=False
        ) | np.uint64(1)
        self.hash_shift = np.uint64(64 - int(math.log2(p.width)))
        self._tables = self._deposit_tables()

    def _initial_noise(self, batch: int | None = None) -> tuple[list[np.ndarray], np.ndarray]:
        """Noise drawn before the pass: per counter level, and every sketch cell (optional batch axis)."""
        p = self.plan
        lead = () if batch is None else (batch,)
        counters = [
            self._noise_into(np.zeros(lead + (2**level,), np.int64), p.counter_scale(level))
            for level in range(1, p.pruning_level + 1)
        ]
        sketch = np.zeros(lead + (p.sketch_levels, p.sketch_depth, p.width), np.int64)
        for s in range(p.sketch_levels):
            level = p.pruning_level + 1 + s
            sketch[..., s, :, :] = self._noise_into(sketch[..., s, :, :].copy(), p.sketch_scale(level))
        return counters, sketch

    def _noise_into(self, zeros: np.ndarray, scale: float) -> np.ndarray:
        """Discrete Laplace noise in blocks: the secure sampler converts to Python lists, so one call
        per NOISE_BLOCK values keeps that transient small."""
        flat = zeros.reshape(-1)
        for start in range(0, flat.size, NOISE_BLOCK):
            flat[start : start + NOISE_BLOCK] = self.noise.laplace_int(flat[start : start + NOISE_BLOCK], scale=scale)
        return zeros

    def _initial_state(self) -> dict[str, Any]:
        """Algorithm 1 lines 1-3: counters and sketch cells start at their noise."""
        counters, sketch = self._initial_noise()
        return {"counters": counters, "sketch": sketch, "leaf": np.zeros(2**self.plan.pruning_level, np.int64)}

    def _empty_state(self) -> dict[str, Any]:
        """The same structure without noise (tests: exact counts)."""
        p = self.plan
        return {
            "counters": [np.zeros(2**level, np.int64) for level in range(1, p.pruning_level + 1)],
            "sketch": np.zeros((p.sketch_levels, p.sketch_depth, p.width), np.int64),
            "leaf": np.zeros(2**p.pruning_level, np.int64),
        }

    def _deposit_tables(self) -> list[list[np.ndarray]]:
        """Per axis and per byte of its depth-r cell index: the bits deposited at their id positions."""
        p, dom = self.plan, self.domain
        r = p.depth
        levels_of_axis: list[list[int]] = [[] for _ in range(dom.d)]
        for m, a in enumerate(p.schedule, start=1):
            levels_of_axis[a].append(m)
        tables = []
        for a in range(dom.d):
            t = len(levels_of_axis[a])
            per_byte = []
            for byte in range((t + 7) // 8):
                table = np.zeros(256, dtype=np.int64)
                for bit in range(8):
                    pos = 8 * byte + bit  # bit position in the cell index, 0 = least significant
                    if pos >= t:
                        break
                    level = levels_of_axis[a][t - 1 - pos]  # the (t - pos)-th cut along axis a
                    vals = np.arange(256)
                    table |= np.where((vals >> bit) & 1, np.int64(1) << (r - level), 0)
                per_byte.append(table)
            tables.append(per_byte)
        return tables

    def leaf_ids(self, frame: pd.DataFrame) -> np.ndarray:
        """Depth-r node id of every record (bit interleaving of the per-axis cell indices)."""
        p, dom = self.plan, self.domain
        cuts = dom.cuts(np.asarray(p.schedule))[p.depth]
        values = dom.codes(frame)
        ids = np.zeros(len(frame), dtype=np.int64)
        for a in range(dom.d):
            if not self._tables[a]:
                continue
            q = dom.cell_index(a, values[a], int(cuts[a]))
            for byte, table in enumerate(self._tables[a]):
                ids |= table[(q >> (8 * byte)) & 255]
        return ids

    def _update(self, state: dict[str, np.ndarray], frame: pd.DataFrame) -> None:
        """Algorithm 1 lines 4-8 for one chunk (vectorised)."""
        p = self.plan
        ids = self.leaf_ids(frame)
        state["leaf"] += np.bincount(ids >> (p.depth - p.pruning_level), minlength=2**p.pruning_level)
        if p.sketch_levels == 0:
            return
        for s in range(p.sketch_levels):
            level_ids = (ids >> (p.sketch_levels - 1 - s)).astype(np.uint64)
            for row in range(p.sketch_depth):
                buckets = (level_ids * self.hash_a[s, row]) >> self.hash_shift
                state["sketch"][s, row] += np.bincount(buckets.astype(np.int64), minlength=p.width)

    def _close_counters(self, state: dict[str, Any]) -> None:
        """Add the exact level-L* counts, and their sums up the tree, into the counters (in place)."""
        exact = state.pop("leaf")
        for level in range(self.plan.pruning_level, 0, -1):
            state["counters"][level - 1] += exact
            exact = exact.reshape(-1, 2).sum(axis=1)

    def _query(self, sketches: np.ndarray, s: int, ids: np.ndarray) -> np.ndarray:
        """Count-Min estimate min_i C[i, h_i(theta)] at sketch level index s."""
        u = ids.astype(np.uint64)
        est = None
        for row in range(self.plan.sketch_depth):
            b = ((u * self.hash_a[s, row]) >> self.hash_shift).astype(np.int64)
            v = sketches[s, row][b]
            est = v if est is None else np.minimum(est, v)
        return est

    def _empty(self, level: int, ids: np.ndarray) -> np.ndarray:
        """Structurally empty nodes: a discrete axis cell that holds no value centre (public)."""
        dom = self.domain
        if all(b is None for b in dom.bits):
            return np.zeros(len(ids), dtype=bool)
        cuts = dom.cuts(np.asarray(self.plan.schedule))[level]
        prefix = _deinterleave(ids, level, np.asarray(self.plan.schedule), dom.d)
        empty = np.zeros(len(ids), dtype=bool)
        for a in range(dom.d):
            if dom.sizes[a] and cuts[a] > 0:
                lo, hi = dom.value_range(a, prefix[a], int(cuts[a]))
                empty |= lo >= hi
        return empty

    # -- Algorithm 2 ------------------------------------------------------------------------------------
    def _consistent_children(
        self, level: int, parent_ids: np.ndarray, parent_counts: np.ndarray, est0: np.ndarray, est1: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        ids0 = 2 * parent_ids
        e0, e1 = self._empty(level, ids0), self._empty(level, ids0 + 1)
        return consistency(parent_counts, np.where(e0, 0, est0), np.where(e1, 0, est1), parent_ids, e0, e1)

    def _grow(self, n: int, noisy_counters: list[np.ndarray], sketches: np.ndarray) -> None:
        """Algorithm 2: consistency down the exact tree, then expand hot nodes and keep the top-k.

        Works in blocks of BLOCK_PARENTS parents so the temporaries stay bounded; the running top-k is
        merged block by block (ties: the smaller node id wins, a data-independent rule).
        """
        p = self.plan
        counts = np.array([n], dtype=np.int64)
        for level in range(1, p.pruning_level + 1):  # consistency, in place in the counter arrays
            noisy = noisy_counters[level - 1]
            for start in range(0, len(counts), BLOCK_PARENTS):
                ids = np.arange(start, min(start + BLOCK_PARENTS, len(counts)), dtype=np.int64)
                a, b = self._consistent_children(level, ids, counts[ids], noisy[2 * ids], noisy[2 * ids + 1])
                noisy[2 * ids], noisy[2 * ids + 1] = a, b
            counts = noisy
            noisy_counters[level - 1] = None  # the parent level is no longer needed
        ids = np.arange(len(counts), dtype=np.int64)
        leaves: list[tuple[int, np.ndarray, np.ndarray]] = []
        hot_per_level = [int(len(ids))]
        for s in range(p.sketch_levels):  # GrowPartition below L*
            level = p.pruning_level + 1 + s
            keep = 0 if level == p.depth else p.k
            hot_ids, hot_counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
            for start in range(0, len(ids), BLOCK_PARENTS):
                pid, pc = ids[start : start + BLOCK_PARENTS], counts[start : start + BLOCK_PARENTS]
                child = np.column_stack([2 * pid, 2 * pid + 1]).ravel()
                est = self._query(sketches, s, child)
                a, b = self._consistent_children(level, pid, pc, est[0::2], est[1::2])
                cand_ids = np.concatenate([hot_ids, child])
                cand_counts = np.concatenate([hot_counts, np.column_stack([a, b]).ravel()])
                order = np.lexsort((cand_ids, -cand_counts))
                top, cold = order[:keep], order[keep:]
                mass = cand_counts[cold] > 0  # cold nodes become leaves; empty ones are dropped
                leaves.append((level, cand_ids[cold][mass], cand_counts[cold][mass]))
                hot_ids, hot_counts = cand_ids[top], cand_counts[top]
            order = np.argsort(hot_ids)
            ids, counts = hot_ids[order], hot_counts[order]
            hot_per_level.append(int(len(ids)))
        if p.sketch_levels == 0:
            leaves.append((p.depth, ids[counts > 0], counts[counts > 0]))
        lv = np.concatenate([np.full(len(i), level, dtype=np.int8) for level, i, _ in leaves])
        li = np.concatenate([i for _, i, _ in leaves])
        lc = np.concatenate([c for _, _, c in leaves])
        order = np.argsort(li << (p.depth - lv.astype(np.int64)), kind="stable")  # tree (DFS) order
        self.leaf_level, self.leaf_id, self.leaf_count = lv[order], li[order], lc[order]
        self.hot_per_level = hot_per_level

    # -- sampling ---------------------------------------------------------------------------------------
    def descend(self, u: np.ndarray) -> np.ndarray:
        """Leaf index reached by the root-to-leaf descent for u in [0, c(root)) (tree order search)."""
        cum = np.cumsum(self.leaf_count)
        return np.searchsorted(cum, np.asarray(u), side="right")

    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        total = int(self.leaf_count.sum())
        leaf = self.descend(rng.integers(0, total, size=n))
        return self.schema.from_unit(self._points_in_leaves(leaf, rng))

    def _points_in_leaves(self, leaf: np.ndarray, rng: Any) -> np.ndarray:
        dom = self.domain
        schedule = np.asarray(self.plan.schedule)
        cuts_by_level = dom.cuts(schedule)
        X = np.zeros((len(leaf), dom.d), dtype=np.float64)
        levels = self.leaf_level[leaf]
        for level in np.unique(levels):
            rows = np.flatnonzero(levels == level)
            prefix = _deinterleave(self.leaf_id[leaf[rows]], int(level), schedule, dom.d)
            cuts = cuts_by_level[level]
            for a, c in enumerate(self.schema.kept):
                t = int(cuts[a])
                if dom.sizes[a] == 0:
                    X[rows, a] = (prefix[a] + rng.random(len(rows))) / math.ldexp(1.0, t)
                    continue
                lo, hi = (
                    dom.value_range(a, prefix[a], t)
                    if t
                    else (np.zeros(len(rows), np.int64), np.full(len(rows), dom.sizes[a]))
                )
                code = lo + np.floor(rng.random(len(rows)) * np.maximum(hi - lo, 1)).astype(np.int64)
                code = np.minimum(code, np.maximum(hi - 1, lo))
                if c.kind == "integer":
                    X[rows, a] = (math.ceil(c.lower) + code - c.lower) / (c.upper - c.lower)
                else:
                    X[rows, a] = code
        return X

    # -- accounting, summary, report ----------------------------------------------------------------------
    def privacy_cost(self) -> PrivacyCost:
        details: dict[str, Any] = {
            "root_count": "n (public, no budget)",
            "counter_l1_sensitivity_per_level": COUNTER_SENSITIVITY,
            "sketch_l1_sensitivity_per_level": "2 j (2 per row)",
        }
        if hasattr(self, "plan"):
            p = self.plan
            details.update(
                plan=p.to_dict(),
                counter_scales=[p.counter_scale(l) for l in range(1, p.pruning_level + 1)],
                sketch_scales=[p.sketch_scale(l) for l in range(p.pruning_level + 1, p.depth + 1)],
            )
            sketch = SKETCH_ROW_SENSITIVITY * p.sketch_depth
            events = tuple(
                LaplaceEvent(p.counter_scale(l), COUNTER_SENSITIVITY, discrete=True, label=f"level {l} counters")
                for l in range(1, p.pruning_level + 1)
            ) + tuple(
                LaplaceEvent(p.sketch_scale(l), sketch, discrete=True, label=f"level {l} sketch")
                for l in range(p.pruning_level + 1, p.depth + 1)
            )
        else:
            events = (EpsilonDeltaEvent(self.epsilon, label="the release's budget, planned"),)
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=0.0,
            guarantee="pure",
            caveats=(
                "the paper's Theorem 2 calibrates noise for add/remove neighbours (sensitivity 1 per level, j "
                "per sketch); this implementation doubles every scale so epsilon holds for replace-one",
                "regions outside the top-k hot nodes are sampled at coarse resolution (pruning error grows "
                "with how spread out the data is); sketch estimates include hash collisions",
                "the utility analysis assumes fully random hash functions; multiply-shift hashing is used "
                "(privacy does not depend on the hashes)",
            ),
            details=details,
            events=events,
        )

    def summary(self) -> dict[str, Any]:
        return {
            "leaf_level": self.leaf_level,
            "leaf_id": self.leaf_id,
            "leaf_count": self.leaf_count,
            "n": self.n,
            "plan": self.plan.to_dict(),
            "hot_per_level": self.hot_per_level,
        }

    def _load_summary(self, summary: dict[str, Any]) -> None:
        self.domain = Domain.from_schema(self.schema)
        pl = dict(summary["plan"])
        r = int(pl["depth"])
        schedule = self.domain.schedule(r)
        self.plan = Plan(
            depth=r,
            pruning_level=int(pl["pruning_level"]),
            k=int(pl["k"]),
            width=int(pl["width"]),
            sketch_depth=int(pl["sketch_depth"]),
            chunk_rows=int(pl["chunk_rows"]),
            sigma=tuple(float(x) for x in pl["sigma"]),
            schedule=tuple(int(a) for a in schedule),
        )
        self.leaf_level = np.asarray(summary["leaf_level"], dtype=np.int8)
        self.leaf_id = np.asarray(summary["leaf_id"], dtype=np.int64)
        self.leaf_count = np.asarray(summary["leaf_count"], dtype=np.int64)
        self.n = int(summary["n"])
        self.hot_per_level = [int(h) for h in summary.get("hot_per_level", [])]
        if self.leaf_count.sum() != self.n:
            raise ValueError(f"summary is inconsistent: leaf counts sum to {int(self.leaf_count.sum())}, n={self.n}")

    def report(self) -> dict:
        if not hasattr(self, "plan"):
            return {}
        p = self.plan
        mem = p.memory_bytes(len(self.schema.kept))
        return {
            "depth_r": p.depth,
            "pruning_level_L*": p.pruning_level,
            "k": p.k,
            "sketch_width_w": p.width,
            "sketch_rows_j": p.sketch_depth,
            "level_budgets": list(p.sigma),
            "memory_bytes": mem,
            "leaves_with_mass": int(len(self.leaf_count)),
            "hot_nodes_per_level": self.hot_per_level,
            "unpruned (PMM tree)": p.sketch_levels == 0,
        }
