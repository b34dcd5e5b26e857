"""What each mechanism parameter changes for the data steward: accuracy, time, memory.

The ParamSpec ``help`` names the parameter as the paper does; the release form shows this text first
and the paper's under it (the API and ``python -m mechanisms list`` show both). Kept in one table,
beside the specs rather than in them, so that a steward-facing wording review happens in one place.
"""

from __future__ import annotations

from ..base import ParamSpec

_KD_COMMON = {
    "threshold": "Cells with fewer noisy rows than this are dropped. Higher: less noise kept, fewer rare "
                 "combinations. Leave empty: the paper's value for this epsilon. No effect on time.",
    "beta": "How cautious the automatic settings are. Smaller: coarser cells, more stable but blurrier output. "
            "Does not change the privacy guarantee.",
    "placement": "Where synthetic rows go inside their cell: spread out (uniform) or at the centre. Centre "
                 "repeats values; uniform looks more natural. No privacy or time effect.",
}

_NOISE_TYPE = ("Noise family. 'laplace': pure epsilon-DP, no delta. 'gaussian': needs a delta but adds much less "
               "noise when many columns or tables share the budget (the recommendation picks it when it predicts "
               "better). No effect on time.")

STEWARD_HELP: dict[tuple[str, str], str] = {
    ("baseline", "noise_type"): _NOISE_TYPE,
    ("density-lp", "noise_type"): _NOISE_TYPE,
    # mst
    ("mst", "iters"): "Fitting steps of the final model. More: follows the noisy measurements more closely, time "
                      "grows in proportion. No privacy cost.",
    ("mst", "tree"): "Whether to measure pairs of columns. Auto: only when the rows are enough for this budget to "
                     "tell pairs from noise (else all the budget goes to single columns, which is more accurate "
                     "then). Always: the paper's split, a third each to columns, choosing pairs and pairs.",
    ("mst", "compress"): "Merge rare values of each column before measuring pairs: less noise on the pairs; rare "
                         "values are then drawn evenly among themselves. No privacy cost.",
    # aim
    ("aim", "workload"): "Which combinations matter: every pair, every triple (slower), or every triple with the "
                         "target column (for models that predict it).",
    ("aim", "target"): "The column models will predict (only for the 'target' workload).",
    ("aim", "max_model_size"): "Largest model in MiB. Larger: keeps more relations between columns, more time and "
                               "memory.",
    ("aim", "max_rounds"): "Most measurement rounds. Fewer: more budget (less noise) per measurement, fewer "
                           "relations captured. Empty: 16 x the number of columns, fewer when the rows are few "
                           "for the budget.",
    ("aim", "iters"): "Fitting steps per model update. More: closer fit, time grows in proportion. No privacy cost.",
    ("aim", "final_iters"): "Fitting steps of the final model the rows are drawn from. More: follows the noisy "
                            "measurements more closely, a little more time. No privacy cost.",
    # density-lp
    ("density-lp", "reference"): "Where candidate rows come from. 'auto' picks for you. 'uniform' spends no budget "
                                 "on it but needs more candidates; others spend part of epsilon (see split).",
    ("density-lp", "degree"): "Which column combinations are kept: 2 keeps every pair. 3 keeps triples but "
                              "spreads the budget over many more tables (more noise per table) and takes much "
                              "longer.",
    ("density-lp", "split"): "Share of epsilon spent on the candidate rows; the rest on the kept column "
                             "combinations. The default (half) suits most tables.",
    ("density-lp", "m"): "Number of candidate rows the solver weighs. More: finer output, longer solve and more "
                         "memory. Empty: set from the table size.",
    ("density-lp", "lattice"): "Only for all-numeric tables of up to 3 columns: resolution of the smoothed "
                               "density. Finer: more detail and more noise.",
    ("density-lp", "bandwidth"): "Only for all-numeric tables of up to 3 columns: smoothing width. Wider: "
                                 "smoother, less detail.",
    ("density-lp", "tie_break"): "Spend 3-4x the solve time for slightly better average accuracy over "
                                 "combinations. No privacy cost.",
    ("density-lp", "bernstein_order"): "Only for the smoothed density: higher order follows the data's shape "
                                       "more closely but can add artefacts. 1 is safe.",
    # dpmerf
    ("dpmerf", "target"): "The column analysts will predict. Set it to train for that column (better models); "
                          "empty to model the whole table without a label. Must be a categorical column.",
    ("dpmerf", "features"): "Size of the released summary. More: captures finer structure but each number gets "
                            "noisier (worse on small tables), slower training and more memory.",
    ("dpmerf", "bandwidth"): "How close two rows must be to count as similar. Empty: a value from the public "
                             "bounds only. Rarely worth changing.",
    ("dpmerf", "epochs"): "Training steps of the generator. More: better fit to the released summary, time "
                          "grows in proportion. No privacy cost.",
    ("dpmerf", "batch_size"): "Rows generated per training step. Larger: steadier training, more memory and "
                              "time per step. Empty: set from the table size.",
    ("dpmerf", "hidden"): "Size of the generator network, e.g. '200,100'. Larger: can fit more complex tables, "
                          "slower. Empty: set from the number of columns.",
    ("dpmerf", "undersample"): "Balance the labels in the output: below 1 keeps fewer rows of the largest "
                               "class. No privacy cost.",
    # kdtree-grid
    ("kdtree-grid", "width"): "Cell size as a share of each numeric column's range. Smaller: more detail but "
                              "more cells, each noisier, more memory. Empty: the paper's value for this table.",
    **{("kdtree-grid", k): v for k, v in _KD_COMMON.items()},
    # kdtree-adaptive
    ("kdtree-adaptive", "split"): "Share of epsilon spent on deciding where to cut; the rest on counting rows "
                                  "in the final cells. The default (half) suits most tables.",
    ("kdtree-adaptive", "levels_independent"): "Cuts made without looking at the data. More: finer starting "
                                               "cells, more memory. Empty: the paper's value.",
    ("kdtree-adaptive", "levels_adaptive"): "Cuts made where the data is dense. More: finer detail where rows "
                                            "are, each decision noisier. Empty: a safe default.",
    ("kdtree-adaptive", "tau"): "How many noisy rows a cell needs before it is cut further. Empty: the paper's "
                                "value.",
    **{("kdtree-adaptive", k): v for k, v in _KD_COMMON.items()},
    # pmse
    ("pmse", "tree"): "'strict' keeps the proven privacy bound (use it). 'paper' fits better but its "
                      "sensitivity bound can be exceeded.",
    ("pmse", "features"): "Let the quality check also look at pairs of columns (default) or single columns only.",
    ("pmse", "depth"): "'paper' mode only: depth of the quality check's trees. Deeper: finer check, slower.",
    ("pmse", "cp"): "'paper' mode only: how much a split must improve the check to be kept.",
    ("pmse", "m"): "Synthetic copies per quality check. More: steadier check, slower in proportion.",
    ("pmse", "releases"): "Number of parameter sets released, each at a share of epsilon. More: more variety, "
                          "each noisier.",
    ("pmse", "iterations"): "Sampling steps. More: the output settles better, time in proportion. No privacy "
                            "cost.",
    ("pmse", "burn_in"): "Sampling steps thrown away at the start. More: less influence of the starting point, "
                         "slower.",
    ("pmse", "proposal_scale"): "Step size of the sampler at the start (it adapts). Rarely worth changing.",
    ("pmse", "column_order"): "Order in which columns are modelled, comma-separated. Empty: the schema's order.",
    # privhp
    ("privhp", "memory_mb"): "Memory the summary may use, in MiB. More: keeps more detail, in proportion. The "
                             "table itself is read in chunks and never held whole.",
    ("privhp", "depth"): "How many times the domain is halved. Deeper: finer detail, each level noisier. Empty: "
                         "set from n and epsilon.",
    ("privhp", "pruning_level"): "Levels kept exactly; deeper ones are approximated to save memory. Empty: set "
                                 "from the memory budget.",
    ("privhp", "k"): "Dense regions kept per approximated level. More: more detail, more memory. Empty: set "
                     "from the memory budget.",
    ("privhp", "width"): "Size of the approximate counters. Wider: more accurate, more memory. Empty: set from "
                         "the memory budget.",
    ("privhp", "sketch_depth"): "Rows of the approximate counters. More: fewer collisions, more memory and "
                                "time. Empty: set from n and epsilon.",
    ("privhp", "chunk_rows"): "Rows read at a time. Larger: faster reading, more working memory. No accuracy or "
                              "privacy effect.",
}


def steward_help(mechanism: str, spec: ParamSpec) -> str:
    """The steward-facing help of one parameter ('' when none is written yet)."""
    return STEWARD_HELP.get((mechanism, spec.name), "")
