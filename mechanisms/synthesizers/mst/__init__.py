"""MST: McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", Journal of Privacy and Confidentiality 11(3), 2021.

The algorithm as implemented (the paper's Section 4 and the authors' reference script, with
Private-PGM's ``mbi`` for estimation):

1. **Measure** every 1-way marginal with Gaussian noise (a third of the zCDP budget).
2. **Compress** each column's domain: values whose NOISY count is below 3 sigma are merged into one
   cell (post-processing of step 1); a column where fewer than two values clear 3 sigma is left whole, as
   SmartNoise does (see compress_support), and so is a column of a declared rule (its structural zeros are on
   the full-resolution cells). Sampling undoes the merge with non-negative least squares on the merged
   values' own noisy counts (a numeric column's bins first fitted rising then falling, ``_merged_shares``):
   values the measurements say are empty get no rows.
3. **Select** a maximum spanning tree of column pairs (a third of the budget): Kruskal's algorithm
   where each of the d - 1 edges is chosen by the exponential mechanism among the pairs that join
   two components, scored by how badly the 1-way model fits the pair, || x_ab - xhat_ab ||_1.
4. **Measure** the tree's d - 1 pairs with Gaussian noise (the last third).
5. **Generate**: Private-PGM estimates the graphical model that best fits all noisy measurements
   (mirror descent, the public n as total), and synthetic rows are sampled from it.

With ``key_columns`` (k <= 3 columns the steward names, e.g. the label analysts crosstab first), every
pair (key column, other column) is measured too: k (d - k) + k (k - 1) / 2 *key pairs*, a public choice
(parameters and schema only), so nothing is spent choosing them. The key pairs already join each key
column to every other column, so the tree is selected among the d - k other columns only (d - k - 1
edges; a tree edge through a key column would measure a key pair twice). The model is then the tree with
each key column joined to all columns: its junction tree's cliques are (key columns + one tree edge).

**The tree conditioned on the key columns** (``key_in_tree``, the default where the key columns' cells
multiply to at most ``KEY_TREE_MAX_CELLS`` = 16 in the schema; the tree-augmented naive Bayes of Friedman,
Geiger & Goldszmidt 1997, with the key columns as the class): each tree edge (a, b) is measured WITH the key
columns attached, as the marginal (keys, a, b), so the 3-way relation the model's cliques hold is measured
rather than implied by (keys, a), (keys, b) and (a, b). Four equal phases of rho:

1. the d 1-way marginals (as above, compression included);
2. the key pairs;
3. the tree of the other columns, by the exponential mechanism (Kruskal as above), each candidate edge
   (a, b) scored || x_Kab - xhat_Kab ||_1, where xhat is the Private-PGM model of the noisy 1-way marginals
   and key pairs: how badly what is already measured explains the edge's relation given the key columns;
4. the tree's d - k - 1 marginals (keys, a, b).

Up to 16 key cells multiply each measured tree marginal's cells by at most 16 (its noise grows with its
cells, a fixed share of the phase each); more key cells would spread each triple too thin, so then (or with
``key_in_tree=False``) the tree's pairs (a, b) are measured as above. The model's junction tree is the same
either way (cliques keys + edge): model size, estimation time and memory are unchanged.

Privacy (replace-one neighbours, n public), accounted in zCDP and converted to the steward's
(epsilon, delta) by :func:`~mechanisms.accounting.zcdp_rho`:

* A marginal's count vector changes by (+1, -1) when one record is replaced: L2 sensitivity
  sqrt(2), so a marginal measured with discrete Gaussian noise of std sigma costs 2 / (2 sigma^2)
  = 1 / sigma^2. The d 1-way marginals get sigma_1 = sqrt(d / (rho/3)) each, total rho/3; the d - 1
  tree pairs sigma_2 = sqrt((d - 1) / (rho/3)), total rho/3. (The reference script calibrates to
  add/remove neighbours, sensitivity 1: under replace-one the same sigma would cost twice as much.)
* The quality score || x_ab - xhat_ab ||_1 moves by at most 2 under replace-one (xhat is computed
  from noisy 1-way measurements only, so it does not depend on the record), so each exponential
  mechanism step uses sensitivity 2 (the reference script's 1 is the add/remove value). Each of the
  d - 1 steps is rho/(3(d - 1))-zCDP (Gumbel-max through OpenDP's exact ``make_noisy_max``).
* Total rho/3 + rho/3 + rho/3 = rho; compression, estimation and sampling are post-processing.
* With key columns the last third measures the m = (d - k - 1) + k (d - k) + k (k - 1) / 2 tree and key
  pairs, each with sigma_2 = sqrt(m / (rho/3)) (zCDP composition: m x 1 / sigma_2^2 = rho/3), and the
  selection's third is split over its d - k - 1 steps. Where there is no tree to select (d - k < 2) the
  budget is halved between the 1-way marginals and the key pairs.
* The tree conditioned on the key columns (``key_in_tree``): rho/4 each. The d 1-way marginals get
  sigma_1 = sqrt(d / (rho/4)); the p = k (d - k) + k (k - 1) / 2 key pairs sigma_k = sqrt(p / (rho/4)); the
  t = d - k - 1 tree marginals (keys, a, b) sigma_t = sqrt(t / (rho/4)) -- each a count vector whose L2
  sensitivity is sqrt(2) whatever its arity (one record leaves one cell and enters one), so 1 / sigma^2
  each and rho/4 per phase. The selection score || x_Kab - xhat_Kab ||_1: xhat is computed from the noisy
  1-way and key-pair measurements only (post-processing of phases 1-2, the same on both neighbours), and
  the record moves x_Kab by -1 in one cell and +1 in another, so the score moves by at most 2: each of the
  t noisy-max steps has sensitivity 2 and rho/(4t). Total 4 x rho/4 = rho; the phases are chosen by
  public inputs only (parameters, schema, n), and each phase's choices depend on earlier phases' DP
  outputs only (adaptive zCDP composition).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from ...accounting import (
    ExponentialEvent,
    PrivacyCost,
    ZCDPEvent,
    exponential_epsilon,
    gaussian_events,
    zcdp_epsilon,
    zcdp_rho,
)
from ...base import Mechanism, ParamSpec
from ...pgm import (
    QUALITY_L1_SENSITIVITY,
    CellTable,
    JunctionTreeSize,
    Measurement,
    Measurements,
    ModelTables,
    candidate_marginals,
    estimate,
    load_mbi,
    measure,
    release_programs,
    rho_of_measurement,
    rule_columns,
    sigma_for_rho,
    structural_zeros,
)
from ...pgm.nonneg import merged_fit, nonnegative_shares
from ...source import TableSource
from . import guide

COMPRESS_THRESHOLD_SIGMAS = 3.0  # the reference script's rule: noisy count below 3 sigma -> merged
MAX_PAIR_CELLS = 50_000_000  # all column pairs' exact counts are held for selection (int64: 400 MB)
MAX_KEY_COLUMNS = 3  # each key column multiplies every clique of the model by its cells
MAX_MODEL_MIB = 80.0  # the largest tree + key model (AIM's default limit, the paper's): estimation time and memory
KEY_TREE_MAX_CELLS = 16  # key columns of at most this many cells together: the tree's edges measured with them
# key_in_tree: shares of rho of the 1-way marginals, key pairs, tree selection, tree marginals (keys, a, b)
KEY_TREE_SHARES = (0.25, 0.25, 0.25, 0.25)


def compress_support(y: np.ndarray, sigma: float) -> np.ndarray:
    """The values of one column kept as their own cells: those whose noisy count is at least 3 sigma.

    As SmartNoise's MST (and unlike the reference script, which merges them all), a column where fewer
    than two values clear the threshold is not compressed at all: merging it into one cell would throw
    away what its noisy counts still say (at epsilon 0.1 on german_credit every column is in this case,
    and the merged columns came out uniform: 1-way TVD 0.364 against SmartNoise's 0.216). Post-processing
    of the noisy 1-way measurement only.
    """
    keep = y >= COMPRESS_THRESHOLD_SIGMAS * sigma
    return keep if keep.sum() >= 2 else np.ones(y.size, bool)


TREE_NOISE_LIMIT = 2.5  # tree pairs measured only if their noise std is at most this x the mean pair-cell count


def key_pairs_for(names: list[str], keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every pair (key column, other column), each once, key column first: k (d - k) + k (k - 1) / 2 pairs.
    A public choice: the parameters and the schema's names only."""
    return [(key, a) for i, key in enumerate(keys) for a in names if a != key and a not in keys[:i]]


def measured_pairs(d: int, keys: int) -> tuple[int, int]:
    """(tree pairs, key pairs) measured on ``d`` columns with ``keys`` key columns: the tree spans the
    d - keys other columns."""
    return max(d - keys - 1, 0), keys * (d - keys) + keys * (keys - 1) // 2


def budget_parts(d: int, keys: int, conditioned: bool = False) -> float:
    """rho over the 1-way marginals' share when pairs are measured: 3 (equal thirds: 1-way marginals, tree
    selection, pairs); 2 when there is no tree to select (d - keys < 2: the key pairs already join every column);
    1 / KEY_TREE_SHARES[0] for the tree conditioned on the key columns (``conditioned``)."""
    if not measured_pairs(d, keys)[0]:
        return 2
    return 1 / KEY_TREE_SHARES[0] if conditioned and keys else 3


def key_cells(schema, keys: tuple[str, ...]) -> int:
    """The key columns' cells multiplied (the schema's, before compression: public)."""
    return math.prod(int(schema.column(a).n_cells) for a in keys) if keys else 1


def tree_conditioned(schema, keys: tuple[str, ...], key_in_tree: bool) -> bool:
    """Whether the tree's edges are measured with the key columns attached, (keys, a, b): asked for, key
    columns named, at most ``KEY_TREE_MAX_CELLS`` key cells and a tree to select (at least 2 other columns).
    Public inputs only."""
    d = len(schema.names)
    small = key_cells(schema, keys) <= KEY_TREE_MAX_CELLS
    return bool(key_in_tree and keys and measured_pairs(d, len(keys))[0] and small)


def compressed_sizes(n: int, rho: float, sizes: list[int], *, parts: float = 3) -> list[int]:
    """A public upper bound on each column's cell count after compression: the tree's 1-way measurements
    have sigma_1 = sqrt(d / (rho / parts)), the noisy counts sum to about n, so at most n / (3 sigma_1)
    values clear the 3-sigma threshold, plus the merged cell (fewer than two: the column stays whole). Only
    n, rho and the schema are read: a column at one cell per value (ages 0-100) is judged by the cells the
    model will really have."""
    sigma1 = sigma_for_rho(rho / parts / max(len(sizes), 1))
    clear = int(n // (COMPRESS_THRESHOLD_SIGMAS * sigma1))
    if clear < 2:  # compress_support leaves a column whole when fewer than two values clear the threshold
        return [int(k) for k in sizes]
    return [min(int(k), clear + 1) for k in sizes]


def tree_is_informative(
    n: int,
    rho: float,
    sizes: list[int],
    *,
    compress: bool = True,
    keys: int = 0,
    conditioned: bool = False,
    key_positions: tuple[int, ...] = (),
) -> bool:
    """Whether the spanning tree's 2-way measurements can say anything at this n and budget.

    The d - 1 tree pairs get sigma_2 = sqrt((d - 1) / (rho / 3)) each (replace-one; with ``keys`` key
    columns the m tree and key pairs of :func:`measured_pairs`, sigma_2 = sqrt(m / (rho / parts)),
    :func:`budget_parts`; with the tree ``conditioned`` on the key columns, the larger of the key pairs' and
    the tree marginals' sigma, each phase a quarter). When sigma_2 is more
    than 2.5 times the mean count of a 2-way cell, n / (mean cells of a column pair), the pairs are mostly
    noise, and the third of the budget spent selecting them and the third measuring them are lost: then
    (``tree='auto'``) MST measures the 1-way marginals only, with the whole budget. Public inputs only (n,
    rho, the schema's cell counts, bounded by what compression keeps: :func:`compressed_sizes`). Measured
    (docs/mechanisms/mst.md, "Small epsilon"): at epsilon
    0.1, german_credit (800 rows) and bank_marketing (3,616) are past the limit (ratio 11.7 and 4.2; the
    paper's split gave 2-way TVD 0.54 and 0.24 where the 1-way measurements alone give 0.40 and 0.19);
    the other four tables are within it (ratio 1.1-1.4, as german_credit at epsilon 1), where the tree
    helps (0.078 against 0.096 on adult).

    With the key columns' positions (``key_positions``) the key pairs are judged on their own cells too: a
    label's pairs (2 cells by a column's) have far fewer cells than the mean pair, so where the key pairs
    can be told from noise the pairs are measured even if the mean pair could not (credit_adult at epsilon 1,
    the label as key column, tree's pairs and key pairs sharing a third: sigma_2 85 against a limit of 81 on
    the mean pair's 465 cells, 840 on the key pairs' 45).
    """
    d = len(sizes)
    measured = sum(measured_pairs(d, keys))
    if measured == 0:
        return False
    parts = budget_parts(d, keys, conditioned)
    sizes = compressed_sizes(n, rho, sizes, parts=parts) if compress else list(sizes)
    pairs = [a * b for a, b in itertools.combinations(sizes, 2)]
    if conditioned and keys:  # the key pairs and the tree marginals, each their own share
        tree, key_pairs = measured_pairs(d, keys)
        sigma2 = max(
            sigma_for_rho(rho * KEY_TREE_SHARES[1] / key_pairs), sigma_for_rho(rho * KEY_TREE_SHARES[3] / tree)
        )
    else:
        sigma2 = sigma_for_rho(rho / parts / measured)
    if sigma2 <= TREE_NOISE_LIMIT * n / (sum(pairs) / len(pairs)):
        return True
    if not (keys and key_positions):
        return False
    if conditioned:
        sigma2 = sigma_for_rho(rho * KEY_TREE_SHARES[1] / measured_pairs(d, keys)[1])
    key_cells = [sizes[i] * sizes[j] for i in key_positions for j in range(d) if j != i]
    return sigma2 <= TREE_NOISE_LIMIT * n / (sum(key_cells) / len(key_cells))


def key_model_mib(names: list[str], sizes: list[int], keys: tuple[str, ...]) -> float:
    """The largest junction tree (MiB, as Private-PGM counts it) that the tree + key model can have on
    columns of these cell counts, whatever tree the selection picks: the key columns joined to every column
    and the tree a star on the largest other column. That star has the most cells of any spanning tree (its
    edges are the largest products), and each junction-tree clique is the key columns plus one tree edge, so
    no selected tree's model is larger (tests/mechanisms/synthesizers/test_mst_key_columns.py checks
    Private-PGM's elimination order on random trees). Public inputs only."""
    size = dict(zip(names, sizes))
    rest = sorted((a for a in names if a not in keys), key=lambda a: -size[a])
    star = [(rest[0], a) for a in rest[1:]]
    cliques = star + key_pairs_for(names, keys) + [(a,) for a in names]
    return JunctionTreeSize(names, sizes).size_mb(cliques)


def _scores_given(
    mbi, model, comp: CellTable, pairs: list[tuple[str, str]], keys: tuple[str, ...], zeros
) -> dict[tuple[str, str], float]:
    """|| x_Kab - xhat_Kab ||_1 for each pair (a, b) of non-key columns, K the key columns: x the exact
    counts, xhat the model's (``model``: Private-PGM's estimate from the 1-way marginals and the key pairs).

    In that model every clique is a 1-way marginal or holds a key column and one other column, so a and b
    are independent given K: xhat_Kab = xhat_Ka xhat_Kb / xhat_K, one broadcast product per pair from the
    model's d - k marginals (keys, a) (Private-PGM's, :func:`~mechanisms.pgm.candidate_marginals`). Pairs
    that declared rules join (a structural zero's clique on non-key columns links a to b) are computed
    by Private-PGM on (keys, a, b) instead. The exact counts are bincounts of one flat index per pair
    (not cached: hundreds of triples). Post-processing of the noisy measurements, plus the exact counts
    that make the score (sensitivity 2, the module's docstring)."""
    names = sorted({a for e in pairs for a in e}, key=comp.names.index)
    shape_k = [comp.sizes[k] for k in keys]
    cells_k = math.prod(shape_k)
    fitted = candidate_marginals(mbi, model, [tuple(keys)] + [tuple(keys) + (a,) for a in names], comp.n)
    p_k = fitted[tuple(keys)].reshape(cells_k)
    given = {a: fitted[tuple(keys) + (a,)].reshape(cells_k, comp.sizes[a]) for a in names}
    inv_k = np.divide(1.0, p_k, out=np.zeros_like(p_k), where=p_k > 0)
    linked = {a: a for a in names}  # components of the non-key columns joined by the rules' cliques

    def root(a):
        while linked[a] != a:
            a = linked[a]
        return a

    for z in zeros:
        cols = [a for a in z.clique if a in linked]
        for a, b in zip(cols, cols[1:]):
            linked[root(a)] = root(b)
    joined = [e for e in pairs if root(e[0]) == root(e[1])]
    exact_model = candidate_marginals(mbi, model, [tuple(keys) + e for e in joined], comp.n) if joined else {}
    flat_k = np.zeros(comp.n, dtype=np.int64)
    for k in keys:  # C order, as CellTable.counts
        flat_k = flat_k * comp.sizes[k] + comp.cells[:, comp.index[k]]
    out = {}
    for a, b in pairs:
        na, nb = comp.sizes[a], comp.sizes[b]
        flat = (flat_k * na + comp.cells[:, comp.index[a]]) * nb + comp.cells[:, comp.index[b]]
        exact = np.bincount(flat, minlength=cells_k * na * nb)
        clique = tuple(keys) + (a, b)
        if clique in exact_model:
            xhat = exact_model[clique]
        else:
            xhat = (given[a][:, :, None] * (given[b] * inv_k[:, None])[:, None, :]).ravel()
        out[(a, b)] = float(np.abs(exact - xhat).sum())
    return out


class MST(Mechanism):
    name = "mst"
    title = "MST: maximum spanning tree of noisy 2-way marginals (Private-PGM)"
    paper = "McKenna, Miklau & Sheldon, JPC 2021 (winner of the NIST 2018 DP synthetic data challenge)"
    cell_tables = 2  # reads source.cells() (chunked encoding), then the CellTable and its compressed copy
    needs_delta = True
    rules_in_model = True  # declared rules are structural zeros of the Private-PGM model (mechanisms.pgm.constraints)
    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 6
    target_structure = "joint"
    params = (
        ParamSpec(
            "iters",
            "int",
            5000,
            "Mirror-descent iterations of the final Private-PGM estimate: more "
            "fits the noisy marginals more closely and takes longer (no privacy cost)",
            100,
            100_000,
        ),
        ParamSpec(
            "tree",
            "choice",
            "auto",
            "auto: measure the spanning tree of column pairs only when the rows "
            "are enough for the budget to tell pairs from noise, else spend everything on the 1-way "
            "marginals (better at small epsilon on small tables); always: the paper's three-way split",
            choices=("auto", "always"),
        ),
        ParamSpec(
            "compress",
            "bool",
            True,
            "Merge each column's values whose noisy count is below 3 noise "
            "standard deviations into one cell before the 2-way measurements (post-processing: "
            "less noise on the pairs; rare values drawn in proportion to their own noisy counts fitted non-negative)",
        ),
        ParamSpec(
            "key_columns",
            "columns",
            "",
            "Up to 3 columns (comma-separated) whose relation to every other column is measured besides the "
            "spanning tree, e.g. the label analysts cross-tabulate first: the tree is chosen among the other "
            "columns and the pairs' third of the budget is shared by more pairs (a public choice: no privacy "
            "cost beyond the split)",
            maximum=MAX_KEY_COLUMNS,
        ),
        ParamSpec(
            "key_in_tree",
            "bool",
            True,
            "With key columns of at most 16 cells together: measure each spanning-tree edge (a, b) with the key "
            "columns attached, (keys, a, b), chosen by how badly the key pairs explain it (a quarter of the budget "
            "each to the 1-way marginals, the key pairs, the selection and the tree); off: the tree's pairs (a, b) "
            "alone (no privacy cost beyond the split)",
        ),
    )

    @classmethod
    def check_pairs(cls, schema) -> None:
        sizes = schema.cell_sizes
        total = sum(a * b for a, b in itertools.combinations(sizes, 2))
        if total > MAX_PAIR_CELLS:
            big = sorted(zip(sizes, schema.names), reverse=True)[:5]
            raise ValueError(
                f"mst: the {len(sizes)} columns' 2-way marginals have {total:,} cells, above the limit of "
                f"{MAX_PAIR_CELLS:,}; the largest columns are {', '.join(f'{n} ({s} cells)' for s, n in big)}: "
                f"exclude some, or declare fewer categories or bins"
            )

    def check_plan(self, n: int) -> None:
        self.check_pairs(self.schema)
        keys = self.params["key_columns"]
        names, sizes = self.schema.names, [int(k) for k in self.schema.cell_sizes]
        if not keys or not self._pairs_measured(n, zcdp_rho(self.epsilon, self.delta), sizes):
            return
        if self.params["compress"]:
            whole = rule_columns(structural_zeros(self.schema))  # rule columns are never compressed
            small = compressed_sizes(n, zcdp_rho(self.epsilon, self.delta), sizes, parts=self._parts())
            sizes = [k if a in whole else c for a, k, c in zip(names, sizes, small)]
        mib = key_model_mib(names, sizes, keys)
        if mib > MAX_MODEL_MIB:
            cells = ", ".join(f"{k} ({sizes[names.index(k)]} cells)" for k in keys)
            raise ValueError(
                f"mst: with key_columns {', '.join(keys)} the model could need {mib:,.0f} MiB, above the limit of "
                f"{MAX_MODEL_MIB:g} MiB (each key column multiplies every pair of the tree by its cells: {cells}); "
                f"name fewer key columns or ones with fewer categories, or declare fewer categories or bins"
            )

    def _parts(self) -> float:
        return budget_parts(len(self.schema.names), len(self.params["key_columns"]), self._conditioned())

    def _conditioned(self) -> bool:
        """Whether the tree's edges are measured with the key columns attached (:func:`tree_conditioned`)."""
        return tree_conditioned(self.schema, self.params["key_columns"], self.params["key_in_tree"])

    def _pairs_measured(self, n: int, rho: float, sizes: list[int]) -> bool:
        """Whether this fit measures pairs (tree and key pairs): ``tree='always'``, or the rule of
        :func:`tree_is_informative`. Public inputs only."""
        keys = len(self.params["key_columns"])
        if sum(measured_pairs(len(sizes), keys)) == 0:
            return False
        positions = tuple(self.schema.names.index(a) for a in self.params["key_columns"])
        return self.params["tree"] == "always" or tree_is_informative(
            n,
            rho,
            sizes,
            compress=self.params["compress"],
            keys=keys,
            conditioned=self._conditioned(),
            key_positions=positions,
        )

    # -- fit: the only step that reads private data ------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        mbi, log, names, n = self._measure(source)
        self.progress(0.55, "estimating the graphical model (Private-PGM)")
        model = estimate(
            mbi,
            dict(zip(names, self._compressed_sizes())),
            names,
            log,
            total=n,
            iters=self.params["iters"],
            zeros=self.zeros,
        )
        self.model = ModelTables.from_model(mbi, model, names, dict(zip(names, self._compressed_sizes())))
        self.merged_shares = self._merged_shares(n)
        release_programs()  # a worker keeps neither the programs nor the freed heap after the job
        self.progress(1.0, "model estimated")

    def _measure_only(self, source: TableSource) -> None:
        """Steps 1-4 (every noisy measurement) without the final estimate (the risk report's check)."""
        self._measure(source)
        release_programs()

    def _compressed_sizes(self) -> list[int]:
        return [self._compressed_size(j) for j in range(len(self.supports))]

    def _measure(self, source: TableSource):
        """Steps 1-4, the only ones that read the private table: returns (mbi, the measurements, names, n)."""
        self.check_pairs(self.schema)
        mbi = load_mbi()
        names, sizes = self.schema.names, self.schema.cell_sizes
        keys = self.params["key_columns"]
        table = CellTable(source.cells(), names, sizes)
        d, n = len(names), table.n
        self.rho = zcdp_rho(self.epsilon, self.delta)
        self.use_tree = self._pairs_measured(n, self.rho, [int(k) for k in sizes])
        parts = self._parts() if self.use_tree else 1  # no pairs: the whole budget measures the 1-way marginals
        sigma1 = sigma_for_rho(self.rho / parts / d)
        self.progress(0.05, "measuring 1-way marginals")
        one_way = [measure(self.noise, table.counts((a,)), sigma1) for a in names]
        self.spent = [d * rho_of_measurement(sigma1)]

        # the declared rules' columns stay whole: their structural zeros are on the full-resolution cells
        self.zeros = structural_zeros(self.schema)
        ruled = rule_columns(self.zeros)
        self.supports = [
            compress_support(y, sigma1) if self.params["compress"] and a not in ruled else np.ones(y.size, bool)
            for a, y in zip(names, one_way)
        ]
        self.one_way = one_way  # noisy (DP): the merged values' shares are fitted to them after the estimate
        comp = CellTable(self._compress_cells(table.cells), names, [self._compressed_size(j) for j in range(d)])
        log = Measurements()
        for j, a in enumerate(names):
            log.add(self._compressed_measurement(a, one_way[j], self.supports[j], sigma1))

        edges: list[tuple[str, str]] = []
        pairs: list[tuple[str, str]] = []
        sigma2 = sigma_key = None
        self.conditioned = self.use_tree and self._conditioned()
        self.rho_select = 0.0
        if self.conditioned:  # four quarters: 1-way marginals, key pairs, selection, tree marginals (keys, a, b)
            pairs = key_pairs_for(names, keys)
            shares = KEY_TREE_SHARES
            sigma_key = sigma_for_rho(self.rho * shares[1] / len(pairs))
            self.progress(0.15, "measuring the key pairs")
            for e in pairs:
                log.add(Measurement(e, measure(self.noise, comp.counts(e), sigma_key), sigma_key))
            self.spent.append(len(pairs) * rho_of_measurement(sigma_key))
            self.progress(0.25, "selecting the spanning tree given the key columns")
            rest = [a for a in names if a not in keys]
            edges = self._select_tree(mbi, comp, log, self.rho * shares[2], rest, keys=keys)
            sigma2 = sigma_for_rho(self.rho * shares[3] / len(edges))
            self.progress(0.45, "measuring the tree's marginals with the key columns")
            for a, b in edges:
                clique = tuple(keys) + (a, b)
                log.add(Measurement(clique, measure(self.noise, comp.counts(clique), sigma2), sigma2))
            self.spent.append(len(edges) * rho_of_measurement(sigma2))
        elif self.use_tree:
            rest = [a for a in names if a not in keys]
            if len(rest) > 1:
                self.progress(0.15, "selecting the spanning tree")
                edges = self._select_tree(mbi, comp, log, self.rho / parts, rest)
            pairs = key_pairs_for(names, keys)
            sigma2 = sigma_for_rho(self.rho / parts / (len(edges) + len(pairs)))
            what = " and ".join(w for w, on in (("the tree's 2-way marginals", edges), ("the key pairs", pairs)) if on)
            self.progress(0.45, f"measuring {what}")
            for e in edges + pairs:
                log.add(Measurement(e, measure(self.noise, comp.counts(e), sigma2), sigma2))
            self.spent.append((len(edges) + len(pairs)) * rho_of_measurement(sigma2))
        if math.fsum(self.spent) > self.rho * (1 + 1e-9):  # pragma: no cover - guards the derivation
            raise AssertionError(f"mst spent rho={math.fsum(self.spent)} > {self.rho}")
        self.edges = edges
        self.key_pairs = pairs
        self.sigmas = (sigma1, sigma2) if sigma_key is None else (sigma1, sigma2, sigma_key)
        self.measurements, self.measured_rows = log, n  # read-only: mechanisms.tables publishes them
        self._noisy_queries = log.noisy_queries(names, self._compressed_sizes(), cell_map=self._compress_cells)
        return mbi, log, names, n

    def _merged_shares(self, n: int) -> list[np.ndarray]:
        """Per column, the probability of each merged value within its merged cell: non-negative least squares
        (:func:`~mechanisms.pgm.nonneg.nonnegative_counts`) with the model's count of the merged cell as the
        total, on the merged values' own noisy 1-way counts -- for the ordered bins of a numeric column, on
        those counts fitted rising then falling around the largest kept bin (:func:`~mechanisms.pgm.nonneg.
        unimodal_fit`), which pools each noisy bin with its neighbours. Values below the fitted threshold get
        nothing: a handful of rows is neither spread over every merged value (a money column's whole log
        range, as a uniform draw does) nor put on the few bins of a long empty tail whose noise happens to be
        highest. Post-processing of the noisy 1-way measurements and the model."""
        out = []
        for j, (a, s) in enumerate(zip(self.schema.names, self.supports)):
            if s.all():
                out.append(np.ones(0))
                continue
            y = np.asarray(self.one_way[j], dtype=np.float64).copy()
            col = self.schema.column(a)
            if col.is_numeric and col.n_bins > 2:
                bins, kept = y[: col.n_bins], s[: col.n_bins]
                mode = int(np.argmax(np.where(kept, bins, -np.inf))) if kept.any() else int(np.argmax(bins))
                y[: col.n_bins] = merged_fit(bins, kept, mode)
            total = float(self.model.marginal((a,))[-1]) * n
            out.append(nonnegative_shares(y[~s], total))
        return out

    def _compressed_size(self, j: int) -> int:
        s = self.supports[j]
        return int(s.sum()) + (0 if s.all() else 1)

    def _compress_cells(self, cells: np.ndarray) -> np.ndarray:
        out = np.empty_like(cells)
        for j, s in enumerate(self.supports):
            mapping = np.where(s, np.cumsum(s) - 1, s.sum())
            out[:, j] = mapping[cells[:, j]]
        return out

    @staticmethod
    def _compressed_measurement(attr: str, y: np.ndarray, support: np.ndarray, sigma: float) -> Measurement:
        """The 1-way measurement over the compressed domain: the merged cell's noisy count is the sum of
        k noisy counts (std sigma sqrt(k)); dividing it and its query weight by sqrt(k) keeps std sigma."""
        if support.all():
            return Measurement((attr,), y, sigma)
        k = int((~support).sum())
        values = np.append(y[support], y[~support].sum() / math.sqrt(k))
        weights = np.ones(values.size)
        weights[-1] = 1 / math.sqrt(k)
        return Measurement((attr,), values, sigma, weights)

    def _select_tree(
        self, mbi, comp: CellTable, log: Measurements, rho_select: float, names: list[str], keys: tuple[str, ...] = ()
    ) -> list[tuple[str, str]]:
        """A spanning tree of ``names`` (all columns but the key columns), d' - 1 noisy-max steps. Each pair
        (a, b) is scored || x - xhat ||_1 on (a, b), or with ``keys`` on (keys, a, b) (:func:`_scores_given`),
        xhat the Private-PGM model of the measurements so far (``log``: the 1-way marginals, and the key pairs)."""
        model = estimate(mbi, comp.sizes, comp.names, log, total=comp.n, iters=2500, zeros=self.zeros)
        pairs = list(itertools.combinations(names, 2))
        if keys:
            score = _scores_given(mbi, model, comp, pairs, keys, self.zeros)
        else:
            fitted = candidate_marginals(mbi, model, pairs, comp.n)
            score = {e: float(np.abs(comp.counts(e) - fitted[e]).sum()) for e in pairs}
        parent = {a: a for a in names}

        def root(a):
            while parent[a] != a:
                a = parent[a]
            return a

        rho_step = rho_select / (len(names) - 1)
        tree = []
        for _ in range(len(names) - 1):
            candidates = [e for e in pairs if root(e[0]) != root(e[1])]
            i = self.noise.select_max_zcdp(
                [score[e] for e in candidates], sensitivity=QUALITY_L1_SENSITIVITY, rho=rho_step
            )
            a, b = candidates[i]
            tree.append((a, b))
            parent[root(a)] = root(b)
        self.spent.append(rho_select)
        self.rho_select = rho_select
        return tree

    # -- post-processing -------------------------------------------------------------------------
    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        comp = self.model.sample(n, rng)
        cells = np.empty_like(comp)
        for j, s in enumerate(self.supports):
            kept, merged = np.flatnonzero(s), np.flatnonzero(~s)
            col = comp[:, j]
            is_merged = col >= kept.size
            cells[~is_merged, j] = kept[col[~is_merged]]
            if merged.size:
                shares = self.merged_shares[j] if self.merged_shares else None
                cells[is_merged, j] = rng.choice(merged, size=int(is_merged.sum()), p=shares)
        return self.schema.from_cells(cells, rng)

    def privacy_cost(self) -> PrivacyCost:
        rho = zcdp_rho(self.epsilon, self.delta)
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=self.delta,
            guarantee="approximate",
            caveats=(
                f"accounted in zero-concentrated DP inside the release: rho = {rho:.6g}, converted to the "
                f"requested (epsilon, delta) by the Canonne-Kamath-Steinke bound",
                "only the 1-way marginals are measured: no relation between columns is kept (tree='auto' found "
                "too few rows for the budget to measure pairs)"
                if getattr(self, "use_tree", True) is False
                else self._pairs_caveat(),
                "rare values (noisy count below 3 noise standard deviations) are merged and drawn in proportion "
                "to their noisy counts fitted non-negative (values the measurements say are empty are not drawn)"
                if self.params["compress"]
                else "no domain compression",
            ),
            details={
                "zcdp_rho": rho,
                "rho_split": self._rho_split(),
                "marginal_l2_sensitivity": "sqrt(2)",
                "selection_score_sensitivity": QUALITY_L1_SENSITIVITY,
                "epsilon_from_rho": zcdp_epsilon(rho, self.delta),
                **self._key_details(),
            },
            events=self._privacy_events(rho),
        )

    def _privacy_events(self, rho: float) -> tuple:
        """What a fit spent: its marginals' discrete Gaussian measurements (L2 sensitivity sqrt(2)) and the
        spanning tree's noisy-max steps; before a fit, the planned budget as one zCDP event."""
        log = getattr(self, "measurements", None)
        if log is None:
            return (ZCDPEvent(rho, label="the release's budget, planned"),)
        events = gaussian_events(
            [m.sigma for m in log.items], sensitivity=math.sqrt(2), discrete=True, label="marginals"
        )
        edges = getattr(self, "edges", None) or []
        if edges:  # the tree's selection: len(edges) equal noisy-max steps
            step = exponential_epsilon(sensitivity=QUALITY_L1_SENSITIVITY, rho=self.rho_select / len(edges))
            events += (ExponentialEvent(step, count=len(edges), label="spanning-tree selection"),)
        return events

    def _pairs_caveat(self) -> str:
        keys = self.params["key_columns"]
        if not keys:
            return (
                "only the 1-way marginals and the 2-way marginals of one spanning tree of column pairs are "
                "measured: relations outside the tree (and all higher-order ones) come from the model's "
                "conditional-independence assumptions"
            )
        if getattr(self, "conditioned", self._conditioned()):
            return (
                f"only the 1-way marginals, the 2-way marginals of every pair with a key column ({', '.join(keys)}) "
                "and, for each edge (a, b) of one spanning tree of the other columns, the marginal of the key columns "
                "with a and b are measured: other relations come from the model's conditional-independence "
                "assumptions (given the key columns, each column depends on the others only through the tree)"
            )
        return (
            f"only the 1-way marginals and the 2-way marginals of every pair with a key column ({', '.join(keys)}) "
            "and of one spanning tree of the other columns are measured: other relations (and all higher-order "
            "ones) come from the model's conditional-independence assumptions"
        )

    def _key_details(self) -> dict:
        """The key columns and their pairs (public: parameters and schema), as measured by the fit (none
        when no pairs were measured) or, before a fit, as planned."""
        keys = self.params["key_columns"]
        if not keys:
            return {}
        pairs = getattr(self, "key_pairs", None)
        pairs = key_pairs_for(self.schema.names, keys) if pairs is None else pairs
        out = {"key_columns": list(keys), "key_pairs": [list(e) for e in pairs]}
        conditioned = getattr(self, "conditioned", None)
        out["key_in_tree"] = self._conditioned() if conditioned is None else conditioned
        return out

    def _rho_split(self) -> str:
        """How rho was spent: after a fit, what happened (pairs measured or not); before it, the plan."""
        keys = self.params["key_columns"]
        ones = "all on the 1-way marginals"
        if not keys:
            plan, measured = "1/3 one-way, 1/3 tree selection, 1/3 tree pairs", "the spanning tree was measured"
        elif self._conditioned():
            plan = (
                "1/4 one-way, 1/4 key pairs, 1/4 tree selection given the key columns, 1/4 the tree's marginals "
                "with the key columns (an equal share each)"
            )
            measured = "the key pairs and the spanning tree of the other columns with the key columns were measured"
        elif self._parts() == 3:
            plan = "1/3 one-way, 1/3 tree selection, 1/3 tree pairs and key pairs (an equal share each)"
            measured = "the spanning tree of the other columns and the key pairs were measured"
        else:
            plan = "1/2 one-way, 1/2 key pairs (an equal share each; the key pairs join every column, no tree)"
            measured = "the key pairs were measured"
        if not hasattr(self, "use_tree"):
            return f"{plan} (tree='auto' with too few rows for the budget: {ones})"
        if self.use_tree:
            return f"{plan}: {measured}"
        return (
            f"{ones}: {'the spanning tree' if not keys else 'no pair'} was not measured (tree='auto' and too few "
            "rows for the budget to tell pairs from noise)"
            if len(self.schema.names) > 1
            else f"{ones} (one column: no pairs)"
        )

    def report(self) -> dict:
        if not hasattr(self, "edges"):
            return {}
        out = {
            "tree_measured": bool(self.edges),
            "tree_edges": [list(e) for e in self.edges],
            "key_pairs": [list(e) for e in self.key_pairs],
            "sigma_one_way": self.sigmas[0],
            "sigma_two_way": self.sigmas[1],
            "compressed_cells": [self._compressed_size(j) for j in range(len(self.supports))],
        }
        if len(self.sigmas) == 3:  # the tree conditioned on the key columns: sigma_two_way is the tree marginals'
            keys = list(self.params["key_columns"])
            out["tree_marginals"] = [keys + list(e) for e in self.edges]
            out["sigma_key_pairs"] = self.sigmas[2]
        return out

    def summary(self) -> dict[str, Any]:
        out = self.model.to_summary()
        for j, s in enumerate(self.supports):
            out[f"support_{j}"] = s.astype(np.uint8)
            if not s.all():
                out[f"merged_shares_{j}"] = self.merged_shares[j]
        out["edges"] = [list(e) for e in self.edges]
        out["key_pairs"] = [list(e) for e in self.key_pairs]
        out["sigmas"] = list(self.sigmas)
        return out

    def _load_summary(self, summary: dict[str, Any]) -> None:
        d = len(self.schema.names)
        self.supports = [np.asarray(summary[f"support_{j}"]).astype(bool) for j in range(d)]
        # a summary stored without merged shares draws merged values uniformly
        shares = [summary.get(f"merged_shares_{j}") for j in range(d)]
        self.merged_shares = (
            None
            if any(x is None for x, s in zip(shares, self.supports) if not s.all())
            else [np.ones(0) if x is None else np.asarray(x, dtype=np.float64) for x in shares]
        )
        sizes = dict(zip(self.schema.names, (self._compressed_size(j) for j in range(d))))
        self.model = ModelTables.from_summary(summary, self.schema.names, sizes)
        self.edges = [tuple(e) for e in summary["edges"]]
        self.key_pairs = [tuple(e) for e in summary.get("key_pairs", [])]  # none stored: no key columns
        self.sigmas = tuple(summary["sigmas"])
        self.conditioned = len(self.sigmas) == 3  # the key pairs' sigma stored: the tree given the key columns
