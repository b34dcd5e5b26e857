"""Privacy risk report: attack a mechanism the way an adversary would, next to its claimed epsilon.

THIS PACKAGE IS NOT PRIVATE. It reads the raw (prepared) table many times and its results are for the
data steward only, like :mod:`mechanisms.evaluation`. It never changes a release; it refits the SAME
mechanism with the SAME parameters and epsilon on random subsets of the table and attacks those refits.

Membership inference (``runs`` refits)
    The table (at most ``max_rows`` records, a random sample beyond) is split once into a reference
    part (``REFERENCE_FRACTION``: population data the attacker is granted, never trained on, never a
    target) and a pool. The ``2 * canary_pairs`` most VULNERABLE records of the pool (rarest public
    cells, :func:`vulnerability`) form random pairs, the targets; every other pool record is in every
    training table, and the attacker is told them (the informed attacker of DP auditing: the guarantee
    holds against it too). In each run an independent fair coin per pair puts one of its two records
    in: flipping a coin replaces one record by another, exactly dpportal's neighbouring relation
    (replace one record, n public). The mechanism is fitted on the training table and samples
    ``sample_factor`` times as many synthetic rows (the guarantee covers any number of draws; at most
    ``MAX_SYNTHETIC_ROWS`` and ``MAX_SYNTHETIC_CELLS`` cells, so a wide table draws fewer rows). Each
    attack scores every target (higher: "member"):

    * ``dcr``: minus the distance to the closest synthetic record, on the public encoding (numeric
      columns scaled to [0, 1] on the schema's bounds, categorical columns 0/1 mismatch; the mean over
      columns, Gower's distance);
    * ``density_ratio``: DOMIAS (van Breugel et al., AISTATS 2023): the synthetic density over the
      reference density at the target, both kernel density estimates with the same Gower distance
      (exp(-distance / h), h the median distance of targets to their closest reference record);
    * ``marginal_ratio``: the same ratio with histogram densities on the public cells, one column at a
      time (columns taken as independent);
    * ``cell_count``: the informed attacker on the marginals the refit measured (every one-way
      marginal, MST's tree edges, AIM's cliques: :func:`measured_marginals`): the synthetic counts in
      each target's cells against the counts it expects from the known records
      (:func:`cell_count_scores`);
    * ``shadow_model``: a classifier on the four scores above, trained on a shadow game the attacker
      plays on its own reference records with one more refit (:func:`shadow_classifier`).

    Reported per attack: ROC AUC, TPR at FPR 1% and 0.1% (pooled over runs), the membership
    advantage (the largest TPR - FPR), and an empirical epsilon LOWER bound: on the pairs whose two
    scores differ most (a few guess counts, Bonferroni-corrected) the attacker guesses that the
    higher-scored record is the member, and :func:`mechanisms.audit.guessing_epsilon_lower_bound`
    turns the correct guesses into a bound with a one-sided Clopper-Pearson interval at ``confidence``.
    With k guesses all right the bound is only about ln(k / 3) at 95%: many refits (``runs``) make
    many guesses, and a time budget limits them.

Implementation check (white-box)
    The same game, attacked through the refit's NOISY MEASUREMENTS instead of its synthetic rows
    (:meth:`Mechanism.noisy_queries`: baseline's noisy histograms, MST's and AIM's noisy marginals,
    DP-MERF's noisy mean embedding and class counts): the informed attacker's log-likelihood ratio
    per pair (:func:`query_scores`). The measurements are the mechanism's DP output before any
    post-processing and never leave the worker, so this is no attack an analyst could run; it is the
    strongest test of the claim the platform can make, and the one that catches noise smaller than the
    proof needs (the rows blur it: a broken DP-MERF is invisible in its samples). After the attacked
    refits, measure-only refits (:meth:`Mechanism.measure`: DP-MERF skips its training, MST its final
    estimate) add coins: the first ``MIN_CHECK_REFITS`` whatever the time budget (on a wide table one
    attacked refit can take all of it, and fewer cannot flag a 10x noise error there; each costs at
    most the release's fit, AIM's being its whole fit), more while ``CHECK_SHARE`` of the budget
    lasts. Mechanisms whose summary is not a set of noisy linear queries report the check as not
    available.

Attribute inference (the Anonymeter method, Giomi et al., PoPETs 2023)
    On the first run's synthetic table: the attacker knows every column of a target but a secret one
    and guesses the secret from the closest synthetic record on the others. Success on members
    (training records) against success on the reference records (never trained on: the control);
    the risk is (members - control) / (1 - control) with a 95% interval from Wilson intervals. The same
    for linkability: two halves of a target's columns are linked when their closest synthetic records
    coincide; singling out: predicates read off the synthetic table that hold for exactly one record.
    Anonymeter itself (PyPI ``anonymeter`` 1.1.0) needs numpy < 1.27 (pip would downgrade this
    project's numpy 2.4 and add numba and polars); :mod:`.anonymeter` is a small reimplementation of
    its three evaluators' core (success on members vs. on control records, its risk formula, Wilson
    intervals).

Positive control
    The same attacks against releases that are not private: the members themselves (a "release" that
    copies its input), and the mechanism with its noise switched off
    (:class:`~mechanisms.noise.ZeroNoise`). When the best control AUC is below ``CONTROL_MIN_AUC`` the
    attacks are too weak on this table to support a verdict, and the report says so.

Randomness: splits and coins come from ``noise.private_rng`` (never published), refits draw through
``noise``; a seeded Noise makes the whole report reproducible (tests, benchmarks).

Modules: ``report`` (:func:`risk_report`, the steps above, and :func:`verdict`); ``game`` (the table's
split, the target pairs, the guesses and their epsilon lower bound); ``refit`` (the attacked refits) and
``check`` (the implementation check's measure-only refits); one module per attack: ``distance`` (``dcr``
and ``density_ratio``, one distance pass), ``marginal``, ``cell_count``, ``shadow``, ``measurements``
(the implementation check's attack); ``anonymeter`` (attribute inference, linkability, singling out);
``roc`` (AUC, TPR at FPR, advantage).
"""

from __future__ import annotations

from .anonymeter import MAX_SECRETS, anonymeter_risk, attribute_inference, linkability, singling_out, wilson
from .cell_count import cell_count_scores, measured_marginals
from .check import CHECK_CANDIDATES, CHECK_PAIRS_FACTOR, CHECK_RUNS_PER_RUN, MIN_CHECK_REFITS
from .distance import Encoding, attack_scores, closest, gower_block
from .game import (
    ATTACK_TITLES,
    ATTACKS,
    BASE_ATTACKS,
    DEFAULT_CANARY_PAIRS,
    FPR_LEVELS,
    GUESS_FRACTIONS,
    REFERENCE_FRACTION,
    WHITE_BOX,
    guesses,
    membership_game,
    summarise_attack,
    theoretical_advantage,
    vulnerability,
)
from .marginal import marginal_scores
from .measurements import CHECK_MAX_COS, check_pairs, query_scores
from .refit import (
    CHECK_SHARE,
    MAX_SYNTHETIC_CELLS,
    MAX_SYNTHETIC_ROWS,
    SAMPLE_FACTOR,
    ProgressFn,
    kept_schema,
    synthetic_cells,
    synthetic_rows,
)
from .report import (
    CONTROL_MIN_AUC,
    DEFAULT_CONFIDENCE,
    DEFAULT_RUNS,
    MAX_ROWS,
    MIN_ROWS,
    not_computable,
    risk_report,
    verdict,
)
from .roc import advantage, roc_auc, roc_points, tpr_at_fpr
from .shadow import pair_features, shadow_classifier

__all__ = [
    "ATTACKS",
    "ATTACK_TITLES",
    "BASE_ATTACKS",
    "CHECK_CANDIDATES",
    "CHECK_MAX_COS",
    "CHECK_PAIRS_FACTOR",
    "CHECK_RUNS_PER_RUN",
    "CHECK_SHARE",
    "CONTROL_MIN_AUC",
    "DEFAULT_CANARY_PAIRS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RUNS",
    "Encoding",
    "FPR_LEVELS",
    "GUESS_FRACTIONS",
    "MAX_ROWS",
    "MAX_SECRETS",
    "MAX_SYNTHETIC_CELLS",
    "MAX_SYNTHETIC_ROWS",
    "MIN_CHECK_REFITS",
    "MIN_ROWS",
    "ProgressFn",
    "REFERENCE_FRACTION",
    "SAMPLE_FACTOR",
    "WHITE_BOX",
    "advantage",
    "anonymeter_risk",
    "attack_scores",
    "attribute_inference",
    "cell_count_scores",
    "check_pairs",
    "closest",
    "gower_block",
    "guesses",
    "kept_schema",
    "linkability",
    "marginal_scores",
    "measured_marginals",
    "membership_game",
    "not_computable",
    "pair_features",
    "query_scores",
    "risk_report",
    "roc_auc",
    "roc_points",
    "shadow_classifier",
    "singling_out",
    "summarise_attack",
    "synthetic_cells",
    "synthetic_rows",
    "theoretical_advantage",
    "tpr_at_fpr",
    "verdict",
    "vulnerability",
    "wilson",
]
