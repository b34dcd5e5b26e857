"""One audit case per registered mechanism (see harness.py). Tables are tiny on purpose: the audit is of
the noisy summary's calibration, and small releases keep the bound tight (every noise coordinate that
the neighbour moves carries a visible share of epsilon).

Adding a mechanism (e.g. AIM or MST) whose fit draws its noise through ``Noise`` on its exact inputs is
one entry (the mutant halves whatever function the module uses to compute its noise scale):

    CASES["mst"] = Case("mst", TWO_CATS, _cats_frame(), [(0, {"a": "z", "b": "z"}), (0, {"a": "y"})],
                        mutant=_halve_scales("mechanisms.synthesizers.mst", "gaussian_scale"), delta=1e-5,
                        params={...fast settings...})

A second mode of a mechanism (e.g. baseline with Gaussian noise) is another key with the same
``mechanism``. Gaussian releases are audited against the mu-GDP equivalent of (epsilon, delta). Only the
recorded calls that line up on D and D' are audited (for an adaptive select-measure loop, at least the
first, non-adaptive measurements); selection steps that are not additive noise are not audited, which
loosens the bound but keeps it valid.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd

from mechanisms import registry
from mechanisms.noise import Noise
from mechanisms.schema import Column, Schema
from tests.privacy.harness import Call, Case, Claim, summary_sampler

ONE_CAT = Schema(columns=(Column("c", "categorical", categories=("a", "b", "c")),))
TWO_CATS = Schema(
    columns=(
        Column("a", "categorical", categories=("x", "y", "z")),
        Column("b", "categorical", categories=("x", "y", "z")),
    )
)
UNIT = Schema(columns=(Column("x", "continuous", lower=0.0, upper=1.0),))


def _frame(column: str, values) -> pd.DataFrame:
    return pd.DataFrame({column: [str(v) for v in values]})


def _cats_frame() -> pd.DataFrame:
    a = ["x"] * 10 + ["y"] * 10 + ["z"] * 10
    b = ["x", "y", "z"] * 10
    return pd.DataFrame({"a": a, "b": b})


def _halve_scales(module: str, function: str = "laplace_scale"):
    """Mutant: the module's noise-scale function returns half the scale (noise halved: twice the loss)."""

    def apply(monkeypatch):
        mod = importlib.import_module(module)
        real = getattr(mod, function)
        monkeypatch.setattr(mod, function, lambda *a, **kw: real(*a, **kw) / 2)

    return apply


def _set(module: str, **constants):
    def apply(monkeypatch):
        mod = importlib.import_module(module)
        for k, v in constants.items():
            monkeypatch.setattr(mod, k, v)

    return apply


# -- PrivHP: its noise is drawn into zeros before the pass, so the summary is built from its exact
#    counters (the same route as tests/mechanisms/synthesizers/test_privhp.py) -------------------------------------


def _privhp_summary(case: Case, seed: int) -> list[tuple[Call, Call]]:
    from mechanisms.synthesizers import privhp

    mech = privhp.PrivHP(case.schema, epsilon=case.epsilon, noise=Noise.seeded(seed), **case.params)
    mech.domain = privhp.Domain.from_schema(case.schema)
    mech.plan = privhp.make_plan(case.schema, len(case.frame), case.epsilon, mech.params)
    base = case.schema.prepare(case.frame)

    def exact(prepared):
        state = mech._empty_state()
        mech._update(state, prepared)
        mech._close_counters(state)
        return state["counters"], state["sketch"]

    best = None
    for _ in range(20):  # hash draws (public) until some neighbour collides in no sketch row
        mech._setup_hashing()
        ex_d = exact(base)
        for index, row in case.candidates:
            ex_d2 = exact(case.schema.prepare(case.neighbour(index, row)))
            moved = all(np.abs(a - b).sum() == 2 for a, b in zip(ex_d[0], ex_d2[0]))
            clean = (np.abs(ex_d[1] - ex_d2[1]).sum(axis=2) == 2).all()
            if moved and clean:
                best = (ex_d, ex_d2)
                break
        if best:
            break
    assert best, "no collision-free neighbour"
    p = mech.plan
    pairs = [
        (
            Call("laplace_int", best[0][0][l].ravel().astype(float), p.counter_scale(l + 1)),
            Call("laplace_int", best[1][0][l].ravel().astype(float), p.counter_scale(l + 1)),
        )
        for l in range(p.pruning_level)
    ]
    pairs += [
        (
            Call("laplace_int", best[0][1][s].ravel().astype(float), p.sketch_scale(p.pruning_level + 1 + s)),
            Call("laplace_int", best[1][1][s].ravel().astype(float), p.sketch_scale(p.pruning_level + 1 + s)),
        )
        for s in range(p.sketch_levels)
    ]
    return pairs


# -- pMSE: the exponential mechanism sampled EXACTLY on a public theta grid (the weighting and the
#    sensitivity the chain targets; the chain itself is audited in test_pmse_chain.py). D's utilities are
#    the real pMSE utilities of the table; D' moves every utility by the full 1/n that Theorem 2 allows,
#    in opposite directions at D's best theta and elsewhere: the worst pair the claim has to cover (real
#    pairs stay below it, n|du| <= 1: tests/mechanisms/synthesizers/test_pmse.py measures them). ---------------------

PMSE_GRID = 40


def _pmse_sampler(case: Case, seed: int):
    from mechanisms.synthesizers import pmse

    n = len(case.frame)
    mech = pmse.PMSEMechanism(case.schema, epsilon=case.epsilon, noise=Noise.seeded(seed), **case.params)
    model = mech._model()
    Z = np.random.default_rng(seed).standard_normal((case.params.get("m", 5), n, model.d))
    grid = [np.r_[b, math.log(v)] for b in np.linspace(0.05, 0.95, PMSE_GRID // 4) for v in (0.002, 0.01, 0.04, 0.09)]
    X = mech._unit(case.schema.prepare(case.frame))
    utility = pmse.PMSEUtility(X, model, Z, depth=1, alpha=None, pairwise=False)
    u_d = np.array([utility(t) for t in grid])
    u_d2 = u_d + 1.0 / n
    u_d2[np.argmin(u_d)] -= 2.0 / n

    def log_p(u):
        lw = pmse.log_weight(u, epsilon=case.epsilon, sensitivity=1.0 / n)
        return lw - np.logaddexp.reduce(lw)

    loss = log_p(u_d) - log_p(u_d2)  # the statistic: privacy loss of the drawn grid point
    noise = Noise.seeded(10_000 + seed)

    def draws(u):
        return lambda k: loss[
            pmse.exponential_mechanism_grid(u, epsilon=case.epsilon, sensitivity=1.0 / n, noise=noise, size=k)
        ]

    return draws(u_d), draws(u_d2), Claim("epsilon", case.epsilon)


def _pmse_mutant(monkeypatch):
    """The exponential mechanism's 2 in exp(-eps u / (2 du)) dropped (sensitivity understated 2x)."""
    from mechanisms.synthesizers import pmse

    real = pmse.log_weight
    monkeypatch.setattr(
        pmse, "log_weight", lambda u, *, epsilon, sensitivity: real(u, epsilon=epsilon, sensitivity=sensitivity / 2)
    )


def _dpmerf_mutant(monkeypatch):
    """Mean-embedding sensitivity understated 2x (noise halved)."""
    from mechanisms.synthesizers import dpmerf

    real = dpmerf.DPMERF.embedding_sensitivity
    monkeypatch.setattr(dpmerf.DPMERF, "embedding_sensitivity", lambda self, n: real(self, n) / 2)


_UNIT_VALUES = [0.05 * (i % 19) + 0.02 for i in range(19)] + [0.5]

CASES: dict[str, Case] = {
    "baseline": Case(
        "baseline",
        ONE_CAT,
        _frame("c", ["a"] * 10 + ["b"] * 10 + ["c"] * 10),
        [(0, {"c": "b"}), (0, {"c": "c"})],
        mutant=_halve_scales("mechanisms.synthesizers.baseline"),
    ),
    "kdtree-grid": Case(
        "kdtree-grid",
        UNIT,
        _frame("x", [0.1, 0.35, 0.6, 0.85] * 10),
        [(0, {"x": "0.85"}), (0, {"x": "0.35"})],
        mutant=_set("mechanisms.synthesizers.kdtree", COUNT_SENSITIVITY=1),
        params={"width": 0.25, "threshold": 1.0},
    ),
    "kdtree-adaptive": Case(
        "kdtree-adaptive",
        UNIT,
        _frame("x", [(k + 0.5) / 8 for k in range(8)] * 30),
        [(0, {"x": str(15 / 16)}), (0, {"x": str(3 / 16)})],
        mutant=_halve_scales("mechanisms.synthesizers.kdtree"),
        params={"levels_independent": 1, "levels_adaptive": 2, "tau": 0.0, "threshold": 1.0},
    ),
    "privhp": Case(
        "privhp",
        UNIT,
        _frame("x", np.linspace(0.01, 0.99, 20).round(4)),
        [(0, {"x": str(y)}) for y in np.linspace(0.3, 0.99, 50).round(4)],
        mutant=_set("mechanisms.synthesizers.privhp", COUNTER_SENSITIVITY=1, SKETCH_ROW_SENSITIVITY=1),
        params={"depth": 2, "pruning_level": 1, "k": 1, "width": 4, "sketch_depth": 2},
        summary=_privhp_summary,
    ),
    "density-lp": Case(
        "density-lp",
        TWO_CATS,
        _cats_frame(),
        [(0, {"a": "z", "b": "z"}), (0, {"a": "y"})],
        mutant=_halve_scales("mechanisms.synthesizers.density_lp"),
        params={"reference": "histogram", "m": 20},
    ),
    "dpmerf": Case(
        "dpmerf",
        TWO_CATS,
        _cats_frame(),
        [(0, {"a": "z", "b": "z"}), (0, {"a": "y"})],
        mutant=_dpmerf_mutant,
        params={"epochs": 1, "features": 10},
        delta=1e-5,
    ),
    "pmse": Case(
        "pmse",
        UNIT,
        _frame("x", _UNIT_VALUES),
        [],
        mutant=_pmse_mutant,
        params={"m": 2, "features": "columns"},
        sampler=_pmse_sampler,
    ),
}


# -- AIM and MST (Private-PGM): their measurements are Gaussian noise through Noise on exact marginals,
#    so recording works; the selection steps (Gumbel noisy max) are not audited. Active once the two are
#    registered (checked against the lead's branch: both within the claim, both mutants caught). ------


def _halve_measurement_noise(module: str):
    """Mutant: the select-measure loop measures with half the Gaussian std it accounts for."""

    def apply(monkeypatch):
        mod = importlib.import_module(module)
        real = mod.measure
        monkeypatch.setattr(mod, "measure", lambda noise, counts, sigma: real(noise, counts, sigma / 2))

    return apply


_PGM_CASES = {
    "aim": Case(
        "aim",
        TWO_CATS,
        _cats_frame(),
        [(0, {"a": "z", "b": "z"}), (0, {"a": "y"})],
        mutant=_halve_measurement_noise("mechanisms.synthesizers.aim"),
        delta=1e-5,
        params={"max_rounds": 2, "iters": 50},
    ),
    "mst": Case(
        "mst",
        TWO_CATS,
        _cats_frame(),
        [(0, {"a": "z", "b": "z"}), (0, {"a": "y"})],
        # compress=False: on 30 rows every noisy count is below 3 sigma, so compression (post-processing)
        # would merge each column into one cell and leave only the 1-way measurements to audit
        mutant=_halve_measurement_noise("mechanisms.synthesizers.mst"),
        delta=1e-5,
        params={"iters": 100, "compress": False},
    ),
}
CASES.update({name: case for name, case in _PGM_CASES.items() if name in registry.names()})

# MST with a key column and the tree given it (key_in_tree): y (2 cells) is the key column; a, b, c have 2, 3 and 4
# cells, so the tree marginals (y, a, b), (y, a, c), (y, b, c) have different sizes and a tree chosen differently on
# D and D' ends the common path (never compares two cliques). Record 0 is (y=0, a=x, b=x, c=x); its replacement
# differs in every column, so every marginal moves by (+1, -1).
KEYED = Schema(
    columns=(
        Column("y", "categorical", categories=("0", "1")),
        Column("a", "categorical", categories=("x", "y")),
        Column("b", "categorical", categories=("x", "y", "z")),
        Column("c", "categorical", categories=("x", "y", "z", "w")),
    )
)
KEYED_PARAMS = {"iters": 100, "compress": False, "key_columns": "y", "tree": "always"}


def _keyed_frame() -> pd.DataFrame:
    """a drives b (the tree's first edge, given y), b drives c."""
    y = ["0", "1"] * 20
    a = ["x"] * 20 + ["y"] * 20
    b = ["x"] * 18 + ["z"] * 2 + ["y"] * 20
    c = ["x"] * 17 + ["w"] * 3 + ["y"] * 10 + ["z"] * 10
    return pd.DataFrame({"y": y, "a": a, "b": b, "c": c})


def _tree_phase_sampler(case: Case, seed: int):
    """The tree marginals (y, a, b) of MST's key_in_tree on the worst-case neighbours, audited against their own
    phase's claim: rho/4 of the release's rho over the t = 2 tree marginals, a Gaussian release of
    mu = sqrt(2 rho / 4) (each marginal sqrt(2) / sigma_t, sigma_t = sqrt(t / (rho/4))). The 1-way marginals and
    key pairs before it are the path held fixed; the tree must be the same on D and D' (else the case is void)."""
    from mechanisms.accounting import zcdp_rho

    pairs = case.worst_pair(seed)
    tree = [(a, b) for a, b in pairs if a.values.size >= 2 * 2 * 3]  # (y, u, v): 12, 16 or 24 cells
    assert len(pairs) == 4 + 3 + 2 and len(tree) == 2, "the tree differs on D and D': the case audits nothing"
    noise = Noise.seeded(10_000 + seed)
    claim = Claim("mu", math.sqrt(2 * zcdp_rho(case.epsilon, case.delta) / 4))
    return summary_sampler(tree, 0, noise), summary_sampler(tree, 1, noise), claim


def _tree_marginals_one_fewer(monkeypatch):
    """Mutant: the tree marginals' sigma computed for t - 1 = 1 measurement instead of t = 2 (std / sqrt 2)."""
    mod = importlib.import_module("mechanisms.synthesizers.mst")
    real = mod.measure
    monkeypatch.setattr(
        mod,
        "measure",
        lambda noise, counts, sigma: real(noise, counts, sigma / math.sqrt(2) if np.size(counts) >= 12 else sigma),
    )


_KEYED_CANDIDATES = [(0, {"y": "1", "a": "y", "b": "z", "c": "w"})]  # every column changed: every marginal moves
_KEYED_CASES = {
    "mst-key-in-tree": Case(
        "mst",
        KEYED,
        _keyed_frame(),
        _KEYED_CANDIDATES,
        mutant=_halve_measurement_noise("mechanisms.synthesizers.mst"),
        delta=1e-5,
        params=KEYED_PARAMS,
    ),
    "mst-key-in-tree-marginals": Case(
        "mst",
        KEYED,
        _keyed_frame(),
        _KEYED_CANDIDATES,
        mutant=_tree_marginals_one_fewer,
        delta=1e-5,
        params=KEYED_PARAMS,
        sampler=_tree_phase_sampler,
    ),
}
CASES.update({name: case for name, case in _KEYED_CASES.items() if case.mechanism in registry.names()})


# -- Gaussian (zCDP) modes of baseline and density-lp: active once the mechanisms have ``noise_type`` ----


def _quadruple_rho(module: str):
    """Mutant: the module converts (epsilon, delta) to 4x the zCDP rho it may spend (noise std halved)."""

    def apply(monkeypatch):
        mod = importlib.import_module(module)
        real = mod.zcdp_rho
        monkeypatch.setattr(mod, "zcdp_rho", lambda *a, **kw: 4 * real(*a, **kw))

    return apply


def _has_noise_type(name: str) -> bool:
    return name in registry.names() and any(p.name == "noise_type" for p in registry.get(name).params)


if _has_noise_type("baseline"):
    CASES["baseline-gaussian"] = Case(
        "baseline",
        ONE_CAT,
        CASES["baseline"].frame,
        CASES["baseline"].candidates,
        mutant=_quadruple_rho("mechanisms.synthesizers.baseline"),
        delta=1e-5,
        params={"noise_type": "gaussian"},
    )
if _has_noise_type("density-lp"):
    CASES["density-lp-gaussian"] = Case(
        "density-lp",
        TWO_CATS,
        _cats_frame(),
        CASES["density-lp"].candidates,
        mutant=_quadruple_rho("mechanisms.synthesizers.density_lp"),
        delta=1e-5,
        params={"reference": "histogram", "m": 20, "noise_type": "gaussian"},
    )


# -- The tables release (crosstabs, ResidualPlanner): Gaussian noise through Noise on each residual's exact
#    coordinates. Record 0 is (x, x): replacing it by (z, z) changes both columns (D = {a, b}), by (y, x) or
#    (x, y) one; the audit takes whichever moves the residuals most. The mutant spends 4x rho (std halved). --

CASES["crosstabs"] = Case(
    "crosstabs",
    TWO_CATS,
    _cats_frame(),
    [(0, {"a": "z", "b": "z"}), (0, {"a": "y"}), (0, {"b": "y"})],
    mutant=_quadruple_rho("mechanisms.tables"),
    delta=1e-5,
    params={"tables": "a,b;b"},
)

# -- Private bounds estimation (mechanisms/bounds.py): a DP release charged like one, though
#    not a registered mechanism. Two columns; the replaced record moves bins in both. ------------------


def _run_bounds(case: Case, frame: pd.DataFrame, noise: Noise) -> None:
    from mechanisms import bounds

    bounds.estimate_bounds([frame], list(frame.columns), epsilon=case.epsilon, noise=noise, markers=[""], n=len(frame))


CASES["bounds"] = Case(
    "bounds",
    TWO_CATS,
    pd.DataFrame({"u": [str(v) for v in [3, 30, 300] * 10], "v": [str(v) for v in [-4, 0.5, 7000] * 10]}),
    [(0, {"u": "-70", "v": "0.003"}), (0, {"u": "3000"})],
    mutant=_halve_scales("mechanisms.bounds"),
    runner=_run_bounds,
)


# -- Private category discovery (mechanisms/categories.py): the noisy label counts are audited on neighbours
#    whose labels all occur in both tables (the calls line up); the threshold's delta has its own test in
#    tests/mechanisms/test_categories.py. ------------------------------------------------------------------


def _run_categories(case: Case, frame: pd.DataFrame, noise: Noise) -> None:
    from mechanisms import categories

    categories.discover_categories(
        [frame], list(frame.columns), epsilon=case.epsilon, delta=1e-6, noise=noise, markers=[""]
    )


CASES["categories"] = Case(
    "categories",
    TWO_CATS,
    _cats_frame(),
    [(0, {"a": "y", "b": "z"}), (0, {"a": "z"})],
    mutant=_halve_scales("mechanisms.categories"),
    runner=_run_categories,
)


def _run_categories_auto(case: Case, frame: pd.DataFrame, noise: Noise) -> None:
    """The bounds job's call: every non-empty missing marker a key of its own (labels="auto")."""
    from mechanisms import categories

    categories.discover_categories(
        [frame],
        list(frame.columns),
        epsilon=case.epsilon,
        delta=1e-6,
        noise=noise,
        markers=["", "?", "NA"],
        labels="auto",
    )


def _markers_frame() -> pd.DataFrame:
    """Labels x, y and the markers "?", "NA" and the empty cell in both columns (every key in both tables)."""
    a = ["x"] * 10 + ["y"] * 10 + ["?"] * 4 + ["NA"] * 3 + [""] * 3
    b = ["?"] * 8 + ["x"] * 10 + ["NA"] * 6 + ["y"] * 4 + [""] * 2
    return pd.DataFrame({"a": a, "b": b})


# the replaced record moves a label to a marker in one column and one marker to another in the other
CASES["categories-auto"] = Case(
    "categories",
    TWO_CATS,
    _markers_frame(),
    [(0, {"a": "?", "b": "NA"}), (0, {"a": "NA", "b": ""}), (0, {"b": "x"})],
    mutant=_halve_scales("mechanisms.categories"),
    runner=_run_categories_auto,
)
