"""Refit orchestration: the mechanism refitted with the same parameters and epsilon on the game's
training tables, its synthetic rows attacked, in the order private, shadow, noise off, private..., each
skipped when it would likely end past the time budget (the first always runs)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..noise import Noise
from ..runner import build
from ..schema import Schema
from ..source import TableSource
from .anonymeter import attribute_inference, linkability, singling_out
from .cell_count import cell_count_scores, measured_marginals
from .distance import attack_scores
from .game import BASE_ATTACKS, WHITE_BOX, Game, Table
from .marginal import marginal_scores
from .measurements import query_scores
from .shadow import pair_features

ProgressFn = Callable[[float, str], None]

SAMPLE_FACTOR = 100  # synthetic rows drawn per refit, in multiples of the training size (for the counts)
MAX_SYNTHETIC_ROWS = 400_000  # ... and at most this many
MAX_SYNTHETIC_CELLS = 15 * MAX_SYNTHETIC_ROWS  # ... of at most this many cells (rows x columns): a wide table draws
# fewer (39 columns: 153,846 rows, where sampling 400,000 took 17 s of a refit; the counts' noise stays far
# below the mechanism's own)
CHECK_SHARE = 0.4  # of a time budget, left to the implementation check when the mechanism offers it


def synthetic_rows(n_train: int, columns: int, sample_factor: float, max_cells: int = MAX_SYNTHETIC_CELLS) -> int:
    """Synthetic rows drawn per attacked refit: ``sample_factor`` x the training size, at most
    ``MAX_SYNTHETIC_ROWS`` and ``max_cells`` cells (0: no cap on cells), never fewer than the
    training size."""
    cap = min(MAX_SYNTHETIC_ROWS, max_cells // max(int(columns), 1)) if max_cells else MAX_SYNTHETIC_ROWS
    return int(min(max(sample_factor, 1) * n_train, max(cap, n_train)))


def kept_schema(schema: Schema) -> Schema:
    """The schema restricted to its kept columns (refits read an already prepared frame)."""
    d = schema.to_dict()
    d["columns"] = [c for c in d["columns"] if c.get("kind") != "excluded"]
    d["draft"] = False
    return Schema.from_stored(d)


def fit_and_sample(
    name: str,
    schema: Schema,
    members: pd.DataFrame,
    *,
    epsilon,
    delta,
    params,
    noise: Noise,
    progress: ProgressFn | None = None,
    rows: int | None = None,
):
    """The mechanism fitted on ``members`` and ``rows`` synthetic rows from it (default: as many as
    members); returns (mechanism, synthetic frame)."""
    mech = build(
        name, schema, epsilon=epsilon, delta=delta, params=params, noise=noise, n=len(members), progress=progress
    )
    mech.fit(TableSource(schema, frame=members.reset_index(drop=True)))
    return mech, mech.sample(rows or len(members))


def synthetic_cells(schema: Schema, synthetic: pd.DataFrame, prepared_head: pd.DataFrame) -> np.ndarray:
    """The public cells of every synthetic row. A mechanism's rows are already in the schema's domain, so
    the cells are read off them directly (preparing 100x the training size costs more than the
    refit); when the prepared first rows give other cells, everything goes through prepare."""
    head = schema.to_cells(prepared_head)
    try:
        cells = schema.to_cells(synthetic)
        if cells.shape[0] == len(synthetic) and np.array_equal(cells[: len(head)], head):
            return cells
    except (ValueError, TypeError, KeyError):
        pass
    return schema.to_cells(schema.prepare(synthetic))


@dataclass
class Refits:
    """What every refit shares: the mechanism and its claim, the noise per kind of refit, the private
    choices' generator, the progress callback, the clock and the budget."""

    mechanism: str
    epsilon: float
    delta: float
    params: dict | None
    noises: dict[str, Noise]
    rng: np.random.Generator
    step: ProgressFn
    t0: float
    time_budget: float | None
    sample_factor: float
    max_cells: int = MAX_SYNTHETIC_CELLS


@dataclass
class Results:
    """Per release kind ("private", "members", "noise off") and attack, the (labels, scores) of each
    refit; per game, the pair features the shadow model reads; the Anonymeter evaluations of the first
    private refit; timings and what the budget skipped."""

    total_fits: int
    check_total: int
    check_floor: int = 0  # measure-only refits that run whatever the budget
    scores: dict[str, dict[str, list]] = field(
        default_factory=lambda: {
            k: {a: [] for a in BASE_ATTACKS + (WHITE_BOX,)} for k in ("private", "members", "noise off")
        }
    )
    features: dict[str, list] = field(
        default_factory=lambda: {"private": [], "members": [], "noise off": [], "shadow": []}
    )
    attribute: list | None = None
    linked: dict | None = None
    singled: dict | None = None
    fit_seconds: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    first_queries: list | None = None
    done_fits: int = 0
    check_done: int = 0


def play(table: Table, game_pairs, game_fixed, ref_rows, syn_frame: pd.DataFrame, mech, first_in):
    """Every base attack's per-target scores and the labels, for one refit of one game (``mech`` None:
    the members themselves as the release)."""
    X, C, sizes = table.X, table.cells, table.sizes
    train_idx = np.r_[game_fixed, np.where(first_in, game_pairs[:, 0], game_pairs[:, 1])]
    syn_prepared = table.schema.prepare(syn_frame.iloc[: len(train_idx)])
    S = table.encoding.encode(syn_prepared)
    S_cells = synthetic_cells(table.schema, syn_frame, syn_prepared)
    t_idx = game_pairs.ravel()  # targets in pair order: (first, second) of each pair
    labels = np.column_stack([first_in, ~first_in]).ravel()
    sc = attack_scores(X[t_idx], S, X[ref_rows], table.encoding.numeric)
    sc["marginal_ratio"] = marginal_scores(C[t_idx], S_cells[: len(train_idx)], C[ref_rows], sizes)
    T = cell_count_scores(
        C[game_pairs[:, 0]],
        C[game_pairs[:, 1]],
        C[game_fixed],
        S_cells,
        len(train_idx),
        measured_marginals(mech, table.schema.names) if mech is not None else [(j,) for j in range(len(sizes))],
        sizes,
    )
    sc["cell_count"] = np.column_stack([T / 2, -T / 2]).ravel()
    queries = mech.noisy_queries() if mech is not None else None
    if queries:
        Tq = query_scores(queries, C, table.frame, game_pairs, game_fixed)
        sc[WHITE_BOX] = np.column_stack([Tq / 2, -Tq / 2]).ravel()
    return sc, labels, train_idx, S, S_cells


def attacked_refits(table: Table, game: Game, run: Refits, sequence: list[str], res: Results) -> None:
    """The refits of ``sequence`` ("private", "shadow", "noise off"), each attacked on its rows; the
    first private one also by the Anonymeter evaluators and beside the members themselves as a
    release. With the implementation check available the attacks on rows leave it CHECK_SHARE of
    the budget."""
    rng, step = run.rng, run.step
    for kind in sequence:
        share = 1.0 - CHECK_SHARE if res.scores["private"][WHITE_BOX] and res.check_total > 0 else 1.0
        if (
            res.step_seconds
            and run.time_budget is not None
            and (time.perf_counter() - run.t0 + max(res.step_seconds)) > share * run.time_budget
        ):
            res.skipped.append(kind)
            continue
        ts = time.perf_counter()
        shadow = kind == "shadow"
        game_pairs, game_fixed = (game.shadow_pairs, game.shadow_fixed) if shadow else (game.pairs, game.fixed)
        first_in = rng.random(len(game_pairs)) < 0.5
        members_idx = np.r_[game_fixed, np.where(first_in, game_pairs[:, 0], game_pairs[:, 1])]
        base, label = res.done_fits / (res.total_fits + 1), f"refit {res.done_fits + 1}/{res.total_fits} ({kind})"
        step(base, label)
        tf = time.perf_counter()
        mech, syn = fit_and_sample(
            run.mechanism,
            table.schema,
            table.frame.iloc[members_idx],
            epsilon=run.epsilon,
            delta=run.delta,
            params=run.params,
            noise=run.noises[kind],  # the fit's progress also lets a cancel stop it
            progress=lambda f, s: step(base + 0.9 * f / (res.total_fits + 1), label),
            rows=synthetic_rows(len(members_idx), len(table.schema.names), run.sample_factor, run.max_cells),
        )
        res.fit_seconds.append(time.perf_counter() - tf)
        res.done_fits += 1
        if kind == "private" and res.first_queries is None:
            res.first_queries = mech.noisy_queries()
        ref_rows = game.shadow_reference if shadow else game.reference
        sc, labels, train_idx, S, S_cells = play(table, game_pairs, game_fixed, ref_rows, syn, mech, first_in)
        res.features[kind].append((pair_features(sc), first_in))
        if kind != "shadow":
            for a in BASE_ATTACKS + (WHITE_BOX,):
                if a in sc:
                    res.scores[kind][a].append((labels, sc[a]))
        if kind == "private" and res.attribute is None:
            _first_private_extras(table, game, run, res, first_in, labels, train_idx, S, S_cells)
        res.step_seconds.append(time.perf_counter() - ts)


def _first_private_extras(table: Table, game: Game, run: Refits, res: Results, first_in, labels, train_idx, S, S_cells):
    """On the first private refit: attribute inference, linkability and singling out on its rows, and
    the positive control (the members themselves as a "release") on the same coins."""
    X, C, rng = table.X, table.cells, run.rng
    reference = X[game.reference]
    run.step(res.done_fits / (res.total_fits + 1), "attribute inference, linkability, singling out")
    res.attribute = attribute_inference(table.schema, X[train_idx], reference, S, table.encoding.numeric, rng)
    res.linked = linkability(table.schema, X[train_idx], reference, S, table.encoding.numeric, rng)
    res.singled = singling_out(C[train_idx], C[game.reference], S_cells[: len(train_idx)], rng)
    sc_m, _, _, _, _ = play(table, game.pairs, game.fixed, game.reference, table.frame.iloc[train_idx], None, first_in)
    res.features["members"].append((pair_features(sc_m), first_in))
    for a in BASE_ATTACKS:
        res.scores["members"][a].append((labels, sc_m[a]))
