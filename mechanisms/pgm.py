"""Select-measure-generate on Private-PGM: the pieces AIM and MST share.

* :class:`CellTable` -- the private table as public cell indices (``Schema.to_cells``) and its exact
  marginal counts. Only ``fit`` holds one.
* :func:`measure` -- a marginal's counts plus discrete Gaussian noise through
  :class:`~mechanisms.noise.Noise` (OpenDP's exact sampler in production).
* :class:`Measurements` -- the noisy measurements so far; repeated measurements of one marginal are
  pooled by inverse variance (the same least-squares loss, so the same estimate) so that the
  estimator's compiled program is reused when a marginal is measured again.
* :func:`estimate` -- Private-PGM (``mbi``, JAX) mirror descent: the graphical model that best fits
  the noisy measurements, with the PUBLIC row count n as its total. No inference is hand-written.
* :class:`ModelTables` -- the estimated model as plain arrays (the junction tree's clique marginals),
  the private summary that is stored, and :meth:`ModelTables.sample`, numpy sampling of synthetic
  cells from it (post-processing, drawn from ``Noise.rng``).

Privacy of one measurement (replace-one neighbours, n public): replacing one record moves one count
from one cell of a marginal to another, so the count vector changes by (+1, -1): L2 sensitivity
sqrt(2). Discrete Gaussian noise with standard deviation sigma on a vector of L2 sensitivity D is
D^2 / (2 sigma^2)-zCDP (Canonne, Kamath & Steinke 2020), so one marginal measured with sigma costs
rho = 1 / sigma^2. Everything after the noisy counts (estimation, sampling) is post-processing.

JAX is imported inside ``fit`` only (never by the web process), after the job's thread limit is set.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .noise import Noise

MARGINAL_L2_SENSITIVITY = math.sqrt(2.0)  # replace-one: one count -1, another +1
MARGINAL_RHO_PER_INV_VAR = MARGINAL_L2_SENSITIVITY ** 2 / 2  # rho = this / sigma^2 = 1 / sigma^2
QUALITY_L1_SENSITIVITY = 2.0  # replace-one: || x - xhat ||_1 moves by at most 2 (per unit weight)

Clique = tuple[str, ...]


def rho_of_measurement(sigma: float) -> float:
    """zCDP cost of one marginal measured with discrete Gaussian noise of std ``sigma`` (see above)."""
    return MARGINAL_RHO_PER_INV_VAR / sigma ** 2


def sigma_for_rho(rho: float) -> float:
    """Noise std of one marginal measurement that costs exactly ``rho`` (inverse of the above)."""
    return math.sqrt(MARGINAL_RHO_PER_INV_VAR / rho)


# ------------------------------------------------------------------------------------------------
# JAX / mbi, imported lazily
# ------------------------------------------------------------------------------------------------

# XLA flags for AIM's and MST's programs. AIM compiles one program per model structure and the programs run
# in well under their compile time: optimisation level 0 and the CPU fusion emitters off compile faster in
# less memory (they take effect since mechanisms/resources.py no longer hides them); same seed, one thread:
# bank_marketing at 10 140 -> 66 s, peak 889 -> 690 MiB; california_housing_numeric at 1 14.4 -> 7.9 s,
# 425 -> 358 MiB; execution-bound california_housing at 10 157 -> 164 s (docs/mechanisms/aim.md, "Speed").
# Estimates whose iterations outweigh the compile are compiled at level 2 (``optimisation_level``).
XLA_DEFAULT_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")


def xla_default_flags(threads: int) -> tuple[str, ...]:
    """XLA_DEFAULT_FLAGS plus LLVM's code generation split into as many parts as the job has threads.
    XLA splits every program's LLVM module into up to 32 parts compiled on a pool of its own, one thread per
    CPU: a one-thread job then compiled on both cores, and the parts cost more CPU in all than one module.
    Same seed, same path, one job thread, run one after the other (``python -m
    benchmarks.reproduce.aim_profile --rounds 100000 --seed 7 --tvd``, the flag set in XLA_FLAGS): adult at 1 compile
    21.9 -> 16.1 CPU s, release 42.7 -> 39.3 s wall, 50.1 -> 43.6 CPU s; credit_default_taiwan at 1 compile
    82.6 -> 64.1 CPU s, 278.7 -> 277.2 s wall, 308 -> 287 CPU s (the parallel parts had hidden on the idle
    core: a busy worker has none); same models (2-way TVD 0.02266 and 0.01505 both ways)."""
    return (*XLA_DEFAULT_FLAGS, f"--xla_cpu_parallel_codegen_split_count={max(int(threads), 1)}")


def load_mbi():
    """Import JAX and Private-PGM for this job: threads limited first (XLA reads its flags at import),
    float64 on (mbi stalls in float32 on large n), XLA's intra-op pool started with the job's threads.
    Returns the ``mbi`` module."""
    from . import resources

    threads = resources.threads_per_job()
    resources.limit_threads(threads)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    for flag in xla_default_flags(threads):  # the job's own XLA_FLAGS win
        if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
    import jax

    jax.config.update("jax_enable_x64", True)
    resources.start_jax_cpu_backend(threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi


# ------------------------------------------------------------------------------------------------
# The private table as cells
# ------------------------------------------------------------------------------------------------

class CellTable:
    """Cell indices of the private table (n x d, int) and exact marginal counts (fit only)."""

    def __init__(self, cells: np.ndarray, names: Sequence[str], sizes: Sequence[int]):
        self.cells = np.asarray(cells, dtype=np.int64)
        self.names = list(names)
        self.sizes = dict(zip(self.names, (int(s) for s in sizes)))
        self.index = {name: j for j, name in enumerate(self.names)}
        self._cache: dict[Clique, np.ndarray] = {}

    @property
    def n(self) -> int:
        return int(self.cells.shape[0])

    def shape(self, clique: Clique) -> tuple[int, ...]:
        return tuple(self.sizes[a] for a in clique)

    def counts(self, clique: Clique) -> np.ndarray:
        """Exact counts of the marginal on ``clique`` (flattened in the clique's attribute order)."""
        if clique not in self._cache:
            cols = [self.index[a] for a in clique]
            shape = self.shape(clique)
            flat = np.ravel_multi_index(tuple(self.cells[:, j] for j in cols), shape) if cols else np.zeros(self.n, int)
            self._cache[clique] = np.bincount(flat, minlength=int(np.prod(shape))).astype(np.int64)
        return self._cache[clique]


def measure(noise: Noise, counts: np.ndarray, sigma: float) -> np.ndarray:
    """Counts plus discrete Gaussian noise of std ``sigma`` (rho = 1 / sigma^2 under replace-one)."""
    return noise.gaussian_int(counts, scale=sigma).astype(np.float64)


# ------------------------------------------------------------------------------------------------
# Measurements and estimation
# ------------------------------------------------------------------------------------------------

@dataclass
class Measurement:
    """A noisy marginal: ``values`` estimate ``weights * counts(clique)`` with noise std ``sigma``."""

    clique: Clique
    values: np.ndarray
    sigma: float
    weights: np.ndarray | None = None  # None: the identity query


class Measurements:
    """Noisy measurements so far. Repeated identity measurements of one clique are pooled:
    y = sum(y_i / s_i^2) / sum(1 / s_i^2), s = sum(1 / s_i^2)^(-1/2) minimises the same squared loss
    up to a constant, so the estimate is unchanged and the compiled estimator is reused."""

    def __init__(self):
        self.items: list[Measurement] = []

    def add(self, m: Measurement) -> None:
        for i, old in enumerate(self.items):
            if old.clique == m.clique and old.weights is None and m.weights is None:
                w_old, w_new = old.sigma ** -2, m.sigma ** -2
                values = (old.values * w_old + m.values * w_new) / (w_old + w_new)
                self.items[i] = Measurement(m.clique, values, (w_old + w_new) ** -0.5)
                return
        self.items.append(m)

    @property
    def cliques(self) -> list[Clique]:
        return [m.clique for m in self.items]

    def to_mbi(self, mbi) -> list:
        out = []
        for m in self.items:
            if m.weights is None:
                out.append(mbi.LinearMeasurement(m.values, m.clique, stddev=m.sigma))
            else:
                out.append(mbi.LinearMeasurement(m.values, m.clique, stddev=m.sigma,
                                                 query=mbi.WeightedQuery(m.weights)))
        return out


_COMPILED = {}


def _compiled_estimate(mbi):
    """Private-PGM's MirrorDescent with its Armijo line search (mbi's ``_init``/``_step``/``_finalize``
    arithmetic, its marginal oracle and loss), compiled as ONE program per model structure, and with
    the marginals it already has carried from step to step.

    mbi's own ``estimate`` runs the set-up and finishing steps op by op, and JAX compiles every op anew
    for every new shape: about 60 small compilations per AIM round plus three programs, most of AIM's
    time (docs/mechanisms/aim.md). And mbi's ``_step`` starts every step by computing the marginals of
    the current potentials, which the previous step has just computed: the trial point's marginals mu2
    when its step was accepted (the potentials became theta2), the step's own mu when it was not (the
    potentials did not move). Carrying them does one message-passing pass per step instead of two
    (``_finalize``'s pass is the carried marginals too) and gives the same iterates: the loss, the
    gradient, the sufficient-decrease test and the step sizes are mbi's, on the same marginals
    (tests/mechanisms/test_pgm.py compares with mbi's ``estimate``). The starting point's marginals come
    from an extra first loop step that keeps the potentials (always accepted, step size unchanged), so
    the program traces the oracle once, not twice: XLA's compile time is most of AIM's at small epsilon."""
    if "run" not in _COMPILED:
        import jax
        import jax.numpy as jnp

        from mbi.estimation import _extract_potentials

        def run(estimator, domain, loss_fn, known_total, warm, iters):
            oracle = estimator._oracle(loss_fn.cliques, domain)
            potentials = _extract_potentials(warm, domain, loss_fn.cliques)
            alpha = 2.0 / (loss_fn.lipschitz * known_total)  # mbi's initial Armijo step

            value_and_grad = jax.value_and_grad(loss_fn)

            def step(i, state):
                # step 0 only computes the starting point's marginals (theta2 = theta, always kept), so the
                # program holds ONE copy of the oracle (message passing), which is most of its compile time;
                # the loss and its gradient are computed once per step, at the trial point, and carried
                # the branches are lax.cond, not element-wise selects over the three clique vectors: the same
                # values, and XLA compiles the program in 40% less time (credit_default_taiwan's round-42 model:
                # 7.4 -> 4.8 CPU s at level 2; adult's round 30: 1.65 -> 1.03 s at level 0)
                mu, theta, alpha, loss, grad = state
                first = i == 0
                theta2 = jax.lax.cond(first, lambda: theta, lambda: theta - alpha * grad)
                mu2 = oracle(theta2, known_total)
                loss2, grad2 = value_and_grad(mu2)
                accept = first | (loss - loss2 >= 0.5 * alpha * grad.dot(mu - mu2))
                alpha2 = jax.lax.select(first, alpha, jax.lax.select(accept, 1.01 * alpha, 0.5 * alpha))
                return jax.lax.cond(accept, lambda: (mu2, theta2, alpha2, loss2, grad2),
                                    lambda: (mu, theta, alpha2, loss, grad))

            zero = jax.tree_util.tree_map(jnp.zeros_like, potentials)  # replaced at step 0
            mu, theta, *_ = jax.lax.fori_loop(0, iters + 1, step, (
                zero, potentials, jnp.asarray(alpha, dtype=jnp.float64), jnp.zeros((), jnp.float64), zero))
            return mbi.MarkovRandomField(potentials=theta, marginals=mu, total=known_total)

        static = ("estimator", "domain")
        _COMPILED["run"] = {0: jax.jit(run, static_argnames=static),  # XLA_DEFAULT_FLAGS' level 0
                            2: jax.jit(run, static_argnames=static,
                                       compiler_options={"xla_backend_optimization_level": 2})}
        # level 0 (small, compile-bound programs): mbi's CPU default, Hugin message passing, the cheaper to
        # compile; level 2 (large, execution-bound): mbi's message_passing_implicit, which never holds the
        # super-cliques' tables and ran 2.3x faster on credit_default_taiwan (IMPLICIT_MAX_CLIQUES_PER_NODE)
        _COMPILED["estimator"] = {
            0: mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_hugin),
            2: mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_implicit)}
    return _COMPILED["run"], _COMPILED["estimator"]


# A program whose iterations touch at least this many MiB x iterations is compiled at XLA's optimisation level 2:
# about 2.7 s more compiling, iterations twice as fast. Measured (benchmarks/reproduce/estimate_speed.py, one thread):
# a 21.6 MiB model of credit_default_taiwan, 250 iterations: level 0 3.4 s compile + 29.2 s, level 2 6.1 s + 13.6 s.
OPTIMISE_MIB_ITERS = 1000.0


# Level-2 programs run mbi's message_passing_implicit (potentials kept in their cliques) when the measured cliques
# number at most this many per junction-tree clique, else Hugin: implicit recomputes each measured clique's
# marginal from all of its super-clique's inputs. Same seed and path, one thread: credit_default_taiwan at 1
# (24 columns, 2.7 measured cliques per tree clique at round 42) Hugin 595 s, implicit 471 s; california_housing
# at 10 (10 columns, a few large tree cliques holding most of its measured marginals) Hugin 272 s, implicit 320 s.
IMPLICIT_MAX_CLIQUES_PER_NODE = 3


def optimisation_level(model_mib: float, iters: int) -> int:
    """XLA optimisation level for an estimate over a ``model_mib`` junction tree: 2 where execution
    outweighs the longer compile (``OPTIMISE_MIB_ITERS``), else XLA_DEFAULT_FLAGS' 0."""
    return 2 if model_mib * iters >= OPTIMISE_MIB_ITERS else 0


def estimate(mbi, sizes: dict[str, int], names: Sequence[str], measurements: Measurements, *, total: int,
             iters: int, warm_start=None):
    """Private-PGM mirror descent over the noisy measurements (post-processing): ``iters`` steps with
    mbi's Armijo line search from zero potentials or from ``warm_start``'s, the public n as total."""
    import jax.numpy as jnp

    domain = mbi.Domain(list(names), [sizes[a] for a in names])
    runs, estimators = _compiled_estimate(mbi)
    loss_fn = mbi.marginal_loss.from_linear_measurements(measurements.to_mbi(mbi), domain)
    warm = None if warm_start is None else warm_start.potentials  # expanded inside the program
    structure = (tuple(loss_fn.cliques), None if warm is None else tuple(warm.cliques))
    if _COMPILED.get("structure", structure)[0] != structure[0]:
        for run in runs.values():
            run.clear_cache()  # a new model structure: earlier programs will not be called again (memory)
    _COMPILED["structure"] = structure
    mib = JunctionTreeSize(list(names), [sizes[a] for a in names]).size_mb(loss_fn.cliques)
    level = optimisation_level(mib, iters)
    estimator = estimators[level]
    if level == 2:  # the implicit oracle only where each junction-tree clique holds few measured cliques
        nodes = len(mbi.junction_tree.make_junction_tree(domain, loss_fn.cliques)[0].nodes)
        if len(loss_fn.cliques) > IMPLICIT_MAX_CLIQUES_PER_NODE * nodes:
            estimator = estimators[0]
    model = runs[level](estimator, domain, loss_fn, float(total), warm,
                        jnp.asarray(int(iters)))  # iters traced: one program
    release_freed_memory()
    return model


def release_programs() -> None:
    """A fit is over (its model is plain arrays now): drop the compiled estimation programs, which no
    later job reuses (each model structure compiles its own), and give the freed memory back."""
    if "run" in _COMPILED:
        for run in _COMPILED["run"].values():
            run.clear_cache()
        _COMPILED.pop("structure", None)
    release_freed_memory()


_LIBC: list = []


def release_freed_memory() -> None:
    """Give the C heap's freed pages back to the operating system (glibc's ``malloc_trim``; a no-op
    elsewhere). XLA's compiler allocates and frees a few hundred MiB per program; glibc keeps the freed
    pages, so without this a job's resident memory ratchets up with every model structure and a worker
    keeps it after the job. Measured on credit_default_taiwan at epsilon 0.1 (AIM, one thread): peak
    RSS 667 -> 525-592 MiB, resident after the fit 596 -> about 490 MiB (docs/mechanisms/aim.md, "Memory")."""
    if not _LIBC:
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.append(libc.malloc_trim if hasattr(libc, "malloc_trim") else None)
        except OSError:  # pragma: no cover - not glibc
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0](0)


# ------------------------------------------------------------------------------------------------
# The model as plain arrays: marginals of the junction tree's cliques; sampling
# ------------------------------------------------------------------------------------------------

class JunctionTreeSize:
    """Private-PGM's ``hypothetical_model_size`` (the cells of the junction tree's maximal cliques x 8
    bytes), exactly, in about 1/20 of its time: AIM asks it of every candidate every round
    (credit_default_taiwan at 1: 10,524 junction trees at 6 ms, 63 s of a 447 s release).

    mbi builds the graph whose edges join the attributes of each clique; if it is a tree it eliminates
    in DFS post-order (no fill-in: the maximal cliques are its edges); otherwise it eliminates greedily,
    each step the attribute whose current cliques' union has the fewest cells (ties: the domain's
    order; an attribute in no clique costs 1), replacing those cliques by their union less it. That
    union is the attribute's closed neighbourhood in the elimination graph, and the triangulated
    graph's maximal cliques are the sets {v} + neighbours of v when v is eliminated that are not inside
    another such set (the order is a perfect elimination order of the triangulation). Here attributes
    are bits of an integer and the costs are exact integer products, updated only for the neighbours of
    the eliminated attribute. ``tests/mechanisms/test_pgm.py`` compares with mbi on random clique sets."""

    def __init__(self, names: Sequence[str], sizes: Sequence[int]):
        self.index = {a: i for i, a in enumerate(names)}
        self.sizes = [int(k) for k in sizes]
        self.d = len(self.sizes)

    def masks(self, cliques: Iterable[Clique]) -> list[int]:
        out = []
        for cl in cliques:
            m = 0
            for a in cl:
                m |= 1 << self.index[a]
            out.append(m)
        return out

    def neighbourhoods(self, masks: Iterable[int], nbr: list[int] | None = None) -> list[int]:
        """Closed neighbourhoods (bit i set for an attribute in some clique; 0 for one in none), added
        to ``nbr`` (modified) when given."""
        nbr = [0] * self.d if nbr is None else nbr
        for m in masks:
            rest = m
            while rest:
                low = rest & -rest
                nbr[low.bit_length() - 1] |= m
                rest ^= low
        return nbr

    def size_mb(self, cliques: Iterable[Clique]) -> float:
        return self.cells(self.neighbourhoods(self.masks(cliques))) * 8 / 2 ** 20

    def size_mb_plus(self, nbr: list[int], clique: Clique) -> float:
        """``size_mb`` of the cliques whose closed neighbourhoods are ``nbr``, plus ``clique``."""
        return self.cells(self.neighbourhoods(self.masks([clique]), list(nbr))) * 8 / 2 ** 20

    def _prod(self, mask: int) -> int:
        out = 1
        while mask:
            low = mask & -mask
            out *= self.sizes[low.bit_length() - 1]
            mask ^= low
        return out

    def cells(self, nbr: list[int]) -> int:
        """Cells of the maximal cliques of mbi's junction tree, given closed neighbourhoods ``nbr``."""
        d = self.d
        nbr = list(nbr)
        edges = sum(bin(m).count("1") - 1 for m in nbr if m) // 2
        if edges and edges == d - 1 and self._connected(nbr):  # a tree: its edges are the maximal cliques
            return sum(self.sizes[i] * self.sizes[j] for i in range(d) for j in range(i + 1, d) if nbr[i] >> j & 1)
        cost = [self._prod(m) for m in nbr]  # an attribute in no clique: prod of nothing = 1, as mbi
        unmarked = list(range(d))
        eliminated: list[int] = []
        for _ in range(d):
            v = min(unmarked, key=cost.__getitem__)  # first minimum in the domain's order, as mbi
            unmarked.remove(v)
            bit = 1 << v
            eliminated.append(nbr[v] | bit)
            later = nbr[v] & ~bit
            rest = later
            while rest:
                low = rest & -rest
                u = low.bit_length() - 1
                nbr[u] = (nbr[u] | later) & ~bit
                cost[u] = self._prod(nbr[u])
                rest ^= low
        cells = 0
        for i, c in enumerate(eliminated):  # inside another such set only if inside an earlier one's
            if not any(c & o == c for o in eliminated[:i]):  # (v in C_u: u eliminated before v)
                cells += self._prod(c)
        return cells

    def _connected(self, nbr: list[int]) -> bool:
        seen, frontier = 1, 1
        while frontier:
            low = frontier & -frontier
            frontier ^= low
            new = (nbr[low.bit_length() - 1] | low) & ~seen
            seen |= new
            frontier |= new
        return seen == (1 << self.d) - 1


def _jtree_marginals(mbi, potentials, nodes: tuple[Clique, ...]) -> list:
    """Marginals (total 1) of the junction tree's cliques ``nodes`` of the model with ``potentials``:
    Private-PGM's ``message_passing_stable`` on the potentials expanded to those cliques, compiled as
    ONE program. Run op by op, the expansion alone compiled about 150 small programs (credit_default_taiwan
    at 1: 22 s of a 274 s release; california_housing at 1: 1.8 s of 17 s)."""
    import jax

    def program(p):
        marginals = mbi.marginal_oracles.message_passing_stable(p.expand(list(nodes)), 1.0)
        return [marginals.project(cl).datavector(flatten=False) for cl in nodes]

    return jax.jit(program)(potentials)


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
        jtree, elimination = mbi.junction_tree.make_junction_tree(domain, [tuple(c) for c in model.cliques])
        nodes = [tuple(c) for c in jtree.nodes]
        tables = []
        for t in _jtree_marginals(mbi, model.potentials, tuple(nodes)):
            t = np.clip(np.asarray(t, dtype=np.float64), 0.0, None)
            tables.append(t / t.sum() if t.sum() > 0 else np.full(t.shape, 1.0 / t.size))
        return cls(list(names), dict(sizes), nodes, tables, list(elimination)[::-1])

    def marginal(self, attrs: Clique) -> np.ndarray:
        """Probability table over ``attrs`` (axes in that order) from a clique that contains them."""
        table = _project_from(dict(zip(self.cliques, self.tables)), attrs)
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
    def from_summary(cls, summary: dict, names: Sequence[str], sizes: dict[str, int],
                     prefix: str = "model") -> "ModelTables":
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


# ------------------------------------------------------------------------------------------------
# Model marginals of candidate cliques (for selection)
# ------------------------------------------------------------------------------------------------

# The junction tree (MiB, the model-size measure) from which candidate_marginals answers out-of-model pairs
# by propagation on its calibrated marginals rather than by variable elimination on the potentials. Below it,
# compiling the junction tree's message passing (~0.3-0.8 s a round) costs more than the eliminations save.
PROPAGATE_MIN_MIB = 1.0


def candidate_marginals(mbi, model, candidates: Sequence[Clique], total: int) -> dict[Clique, np.ndarray]:
    """The model's marginal counts (flattened, total n) of each candidate clique (post-processing).

    A clique inside one of the model's cliques is a projection of Private-PGM's estimated marginals.
    The others, on a model whose junction tree has at least ``PROPAGATE_MIN_MIB`` MiB: Private-PGM
    computes the junction tree's clique marginals (:func:`_jtree_marginals`, one program); a candidate
    inside one of them is its projection, and a pair (a, b) in no common clique is propagated along
    the tree from the cliques holding a (:func:`pair_marginals`). That is the algorithm of mbi's
    ``calculate_many_marginals`` (Koller & Friedman 10.3), which cannot run here: it materialises a
    table over every pair of maximal cliques (products of cliques of MiBs). Any other candidate (a
    triple across cliques, or every out-of-model one on a small model) is computed by variable
    elimination on the model's log-potentials -- Private-PGM's own ``variable_elimination``, executed
    with numpy (:func:`eliminate`) because JAX would compile it anew for every candidate and every
    model. Before round 42 of a credit_default_taiwan release at epsilon 1 (24 columns; a 49.6 MiB
    junction tree; 198 of 290 candidates in no tree clique): eliminations 7.7 s, this 1.4 s.
    ``tests/mechanisms/test_pgm.py`` checks all three agree."""
    tables = {tuple(cl): np.asarray(model.marginals[cl].datavector(flatten=False), dtype=np.float64)
              for cl in model.marginals.cliques}
    out: dict[Clique, np.ndarray] = {}
    todo = _projected(tables, candidates, 1.0, out)
    if not todo:
        return out
    domain = model.potentials.domain
    cliques = [tuple(cl) for cl in model.cliques]
    if JunctionTreeSize(list(domain), [domain[a] for a in domain]).size_mb(cliques) >= PROPAGATE_MIN_MIB:
        jtree, _ = mbi.junction_tree.make_junction_tree(domain, cliques)
        nodes = tuple(tuple(c) for c in jtree.nodes)
        probs = dict(zip(nodes, (np.asarray(t, dtype=np.float64) for t in _jtree_marginals(mbi, model.potentials,
                                                                                             nodes))))
        rest = _projected(probs, todo, total, out)
        pairs = pair_marginals(probs, [tuple(e) for e in jtree.edges], [c for c in rest if len(c) == 2])
        for cand, table in pairs.items():
            out[cand] = (table * total).ravel()
        todo = [c for c in rest if len(c) != 2]
    factors = [(tuple(cl), np.asarray(model.potentials[cl].datavector(flatten=False), dtype=np.float64))
               for cl in model.potentials.cliques]
    for cand in todo:
        out[cand] = eliminate(factors, cand, total).ravel()
    return out


def _projected(tables: dict[Clique, np.ndarray], candidates: Sequence[Clique], scale: float,
               out: dict[Clique, np.ndarray]) -> list[Clique]:
    """Put into ``out`` each candidate's projection of ``tables`` (x ``scale``, flattened); return the
    candidates that no table contains."""
    rest = []
    for cand in candidates:
        table = _project_from(tables, cand)
        if table is None:
            rest.append(cand)
        else:
            out[cand] = (table * scale).ravel()
    return rest


def pair_marginals(probs: dict[Clique, np.ndarray], edges: Sequence[tuple[Clique, Clique]],
                   pairs: Sequence[Clique]) -> dict[Clique, np.ndarray]:
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
        front = [(c, v, _marginal(probs[c], c, (a,) + _common(c, v))) for c in holding for v in nbrs[c]
                 if a not in v and attrs_beyond(c, v) & need]
        while front:
            came, c, message = front.pop()  # message over (a,) + the separator, in ``came``'s order
            sep = _common(came, c)
            labels = [label[a]] + [label[x] for x in sep]
            for b in [b for b in c if b in need]:
                extra = () if b in sep else (b,)
                k = conditional(c, sep, extra)
                found[(a, b)] = np.einsum(message, labels, k, [label[x] for x in sep + extra], [label[a], label[b]],
                                          optimize=True)
                need.discard(b)
            for v in nbrs[c]:
                if v != came and attrs_beyond(c, v) & need:
                    out_sep = _common(c, v)
                    extra = tuple(x for x in out_sep if x not in sep)
                    k = conditional(c, sep, extra)
                    front.append((c, v, np.einsum(message, labels, k, [label[x] for x in sep + extra],
                                                  [label[a]] + [label[x] for x in out_sep], optimize=True)))
        for b in need:  # in another tree of the forest
            pa = _marginal(probs[holding[0]], holding[0], (a,))
            holder = next(c for c in probs if b in c)
            found[(a, b)] = np.multiply.outer(pa, _marginal(probs[holder], holder, (b,)))
    return {(a, b): found[(a, b)] if (a, b) in found else found[(b, a)].T for a, b in pairs}


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


def _project_from(tables: dict[Clique, np.ndarray], attrs: Clique) -> np.ndarray | None:
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
