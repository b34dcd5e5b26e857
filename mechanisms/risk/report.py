"""The risk report: the claim checked, the table sampled and split into the game, the refits attacked,
the implementation check, the figures summarised and the verdict."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd

from .. import registry
from ..noise import Noise, ZeroNoise
from ..schema import Schema
from .check import CHECK_RUNS_PER_RUN, MIN_CHECK_REFITS, check_game, check_refits
from .game import (
    ATTACKS,
    WHITE_BOX,
    DEFAULT_CANARY_PAIRS,
    Game,
    Table,
    rounded,
    summarise_attack,
    theoretical_advantage,
)
from .refit import (
    MAX_SYNTHETIC_CELLS,
    SAMPLE_FACTOR,
    ProgressFn,
    Refits,
    Results,
    attacked_refits,
    kept_schema,
    synthetic_rows,
)
from .shadow import shadow_classifier

MIN_ROWS = 50  # fewer records: the halves are too small for any attack to say anything
MAX_ROWS = 10_000  # records used (a random sample beyond): refits and distances stay within the time goal
DEFAULT_RUNS = 2  # refits (the web app: DPPORTAL_RISK_RUNS); a time budget may skip some
DEFAULT_CONFIDENCE = 0.95
CONTROL_MIN_AUC = 0.9

REFIT_ERRORS = (ValueError, RuntimeError, ArithmeticError)  # a refit that fails: the report says so


def not_computable(reason: str, **extra) -> dict:
    return {"status": "not computable", "reason": reason, "attacks": [], "control": [], **extra}


def refit_failed(exc: Exception, claim: dict) -> dict:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return not_computable(f"the mechanism could not be refitted on part of the table: {first}", **claim)


def risk_report(
    schema: Schema,
    prepared: pd.DataFrame | None,
    mechanism: str,
    *,
    epsilon: float,
    delta: float = 0.0,
    params: dict | None = None,
    runs: int = DEFAULT_RUNS,
    noise: Noise | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    noise_off_control: bool = True,
    max_rows: int = MAX_ROWS,
    progress: ProgressFn | None = None,
    release_seconds: float | None = None,
    attack_noise: Noise | None = None,
    time_budget: float | None = None,
    canary_pairs: int = DEFAULT_CANARY_PAIRS,
    sample_factor: float = SAMPLE_FACTOR,
    max_synthetic_cells: int = MAX_SYNTHETIC_CELLS,
    shadow: bool = True,
    check_runs: int | None = None,
    min_check_refits: int = MIN_CHECK_REFITS,
) -> dict[str, Any]:
    """The risk report of ``mechanism`` at (``epsilon``, ``delta``) with ``params`` on ``prepared``
    (the table as :meth:`Schema.prepare` returns it). Never raises for bad input: a report with
    status "not computable" and the reason instead.

    ``attack_noise`` replaces the noise of the attacked refits (tests and benchmarks: a broken
    variant such as :class:`~mechanisms.noise.ScaledNoise`); the claim stays ``epsilon``.

    ``time_budget`` (seconds): refits after the first are skipped when the slowest refit-and-attack
    step so far would end past it (the web app passes 3x the release's own time); the report lists
    what it skipped. The first refit and the first ``MIN_CHECK_REFITS`` measure-only refits run
    whatever the budget (0: those alone).

    ``check_runs``: implementation-check refits after those (:meth:`Mechanism.measure`, the noisy
    queries alone), default ``CHECK_RUNS_PER_RUN`` x ``runs``, fewer when the time budget ends first;
    the first ``min_check_refits`` of them run whatever the budget.

    ``max_synthetic_cells``: the cap on rows x columns drawn per attacked refit (0: rows alone capped)."""
    t0 = time.perf_counter()
    step = progress or (lambda f, s: None)
    claim = {
        "claimed_epsilon": epsilon,
        "claimed_delta": delta or 0.0,
        "mechanism": mechanism,
        "confidence": confidence,
    }
    try:
        kschema, epsilon, delta, runs = _checked_request(
            claim, schema, prepared, mechanism, epsilon, delta, params, runs, confidence, canary_pairs, time_budget
        )
    except ValueError as exc:
        return not_computable(str(exc).splitlines()[0], **claim)

    noise = noise if noise is not None else Noise.secure_backend()
    rng = noise.private_rng
    table = Table.sample(kschema, prepared, max_rows, rng)
    game = Game.split(table, canary_pairs, rng)
    max_cells = max(int(max_synthetic_cells), 0)
    syn_rows = synthetic_rows(game.n_train, len(kschema.names), sample_factor, max_cells)

    # the first private refit, then the shadow refit, the noise-off control and the other private
    # refits; with a time budget, a refit that would likely end past it is skipped (the first always runs)
    sequence = (
        ["private"]
        + (["shadow"] if shadow else [])
        + (["noise off"] if noise_off_control else [])
        + ["private"] * (runs - 1)
    )
    noises = {"private": attack_noise or noise, "shadow": attack_noise or noise, "noise off": ZeroNoise(base=noise)}
    run = Refits(mechanism, epsilon, delta, params, noises, rng, step, t0, time_budget, sample_factor, max_cells)
    res = Results(
        total_fits=len(sequence),
        check_total=CHECK_RUNS_PER_RUN * runs if check_runs is None else max(int(check_runs), 0),
        check_floor=max(int(min_check_refits), 0),
    )
    try:
        attacked_refits(table, game, run, sequence, res)
    except REFIT_ERRORS as exc:
        return refit_failed(exc, claim)
    if res.first_queries and res.check_total > 0:
        c_pairs, c_fixed = check_game(table, game, res.first_queries)
        if len(c_pairs) == 0:  # no two candidates the queries tell apart
            res.check_total = 0
        try:
            check_refits(table, c_pairs, c_fixed, run, res)
        except REFIT_ERRORS as exc:
            return refit_failed(exc, claim)
    _shadow_model_scores(res)

    step(0.97, "summarising")
    report = _assemble(res, table, game, claim, mechanism, params, delta, runs, confidence, time_budget, syn_rows)
    report.update(verdict(report))
    report["seconds"] = round(time.perf_counter() - t0, 3)
    if release_seconds:
        report["release_seconds"] = round(float(release_seconds), 3)
        report["time_ratio"] = round(report["seconds"] / max(float(release_seconds), 1e-9), 2)
    step(1.0, "done")
    return report


def _checked_request(
    claim: dict,
    schema: Schema,
    prepared,
    mechanism: str,
    epsilon,
    delta,
    params,
    runs,
    confidence,
    canary_pairs,
    time_budget,
) -> tuple[Schema, float, float, int]:
    """(kept schema, epsilon, delta, runs) of a request the report can compute, or a ValueError saying
    why not. A pure-DP configuration spends and claims no delta: ``claim`` is updated to match."""
    epsilon, delta = float(epsilon), float(delta or 0.0)
    claim.update(claimed_epsilon=epsilon, claimed_delta=delta)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"the claimed epsilon must be positive and finite, got {epsilon!r}")
    if prepared is None or len(prepared) == 0:
        raise ValueError("the release has no data to attack (no table was given)")
    if len(prepared) < MIN_ROWS:
        raise ValueError(
            f"the table has {len(prepared)} records: at least {MIN_ROWS} are needed to "
            f"split it into members, non-members and a reference"
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    runs = int(runs)
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if int(canary_pairs) < 1:
        raise ValueError(f"target pairs must be at least 1, got {canary_pairs}")
    if time_budget is not None and not time_budget >= 0:  # 0: the first refit and the check's floor only
        raise ValueError(f"the time budget must be 0 or more seconds, got {time_budget!r}")
    kschema = kept_schema(schema)
    missing = [c for c in kschema.names if c not in prepared.columns]
    if missing:
        raise ValueError(f"the table lacks column(s) {missing} of the schema")
    cls = registry.get(mechanism)
    cls.check_schema(kschema)
    if not cls.requires_delta(cls.validate_params(dict(params or {}), kschema)):
        delta = 0.0  # a pure-DP configuration: any delta given is not spent, nor claimed
        claim["claimed_delta"] = 0.0
    return kschema, epsilon, delta, runs


def _shadow_model_scores(res: Results) -> None:
    """The shadow model's scores of the private refits (trained for this mechanism's game: it has no
    meaning against the controls)."""
    clf = shadow_classifier(res.features["shadow"]) if res.features["shadow"] else None
    if clf is not None:
        res.scores["private"]["shadow_model"] = [
            (np.column_stack([lab, ~lab]).ravel(), clf(F)) for F, lab in res.features["private"]
        ]


def _summaries(res: Results, confidence: float, delta: float) -> tuple[list[dict], list[dict]]:
    """(attacks, control): each attack's figures on the private refits, and on the two non-private
    releases (the members themselves, the mechanism with its noise switched off)."""
    results = res.scores
    done = [a for a in ATTACKS if results["private"].get(a)]
    attacks = [summarise_attack(a, results["private"][a], confidence=confidence, delta=delta) for a in done]
    control = [
        dict(summarise_attack(a, results["members"][a], confidence=confidence, delta=0.0), release="members themselves")
        for a in done
        if results["members"].get(a)
    ]
    if results["noise off"][ATTACKS[0]]:
        control += [
            dict(
                summarise_attack(a, results["noise off"][a], confidence=confidence, delta=0.0),
                release="noise switched off",
            )
            for a in done
            if results["noise off"].get(a)
        ]
    return attacks, control


def _assemble(
    res: Results,
    table: Table,
    game: Game,
    claim: dict,
    mechanism: str,
    params,
    delta: float,
    runs: int,
    confidence: float,
    time_budget,
    syn_rows: int,
) -> dict[str, Any]:
    """The finished report's figures, before the verdict."""
    attacks, control = _summaries(res, confidence, delta)
    runs_done = len(res.scores["private"][ATTACKS[0]])
    return {
        "status": "done",
        **claim,
        "delta": delta,
        "params": params or {},
        "runs": runs_done,
        "runs_requested": runs,
        "skipped_for_time": res.skipped,
        "time_budget_seconds": time_budget,
        "rows_total": table.rows_total,
        "rows_used": len(table.frame),
        "reference_rows": int(len(game.reference)),
        "targets_per_run": int(2 * len(game.pairs)),
        "target_pairs": int(len(game.pairs)),
        "fixed_members": int(len(game.fixed)),
        "synthetic_rows_attacked": syn_rows,
        "shadow_game": bool(res.features["shadow"]),
        "implementation_check": (
            {
                "available": True,
                "reason": "",
                "refits": runs_done + res.check_done,
                "measure_only_refits": res.check_done,
            }
            if res.scores["private"][WHITE_BOX]
            else {
                "available": False,
                "reason": f"{mechanism} does not describe its noisy measurements as linear queries: "
                "only the attacks on its synthetic rows ran",
            }
        ),
        "attacks": attacks,
        "control": control,
        "attribute_inference": res.attribute or [],
        "linkability": res.linked,
        "singling_out": res.singled,
        "fit_seconds": [round(s, 3) for s in res.fit_seconds],
    }


def _num(x) -> float:
    return math.inf if x == "inf" else float(x or 0.0)


def verdict(report: dict) -> dict:
    """The control check, the guarantee check and the plain-words summary of a finished report."""
    eps = report["claimed_epsilon"]
    delta = report.get("claimed_delta", 0.0)
    members_aucs = [
        c["auc"] for c in report["control"] if c.get("release") == "members themselves" and c["auc"] is not None
    ]
    control_auc = max(members_aucs) if members_aucs else None
    control_detected = control_auc is not None and control_auc >= CONTROL_MIN_AUC
    lb = max((_num(a["epsilon_lower_bound"]) for a in report["attacks"]), default=0.0)
    failed = lb > eps
    rows = [a for a in report["attacks"] if a.get("sees", "synthetic rows") == "synthetic rows"]
    white = [a for a in report["attacks"] if a.get("sees") == "noisy measurements"]
    adv = max((a["advantage"] or 0.0 for a in rows), default=0.0)
    limit = theoretical_advantage(eps, delta)
    summary = (
        f"An attacker who holds one person's full record can tell whether that person was in the data "
        f"with at most {100 * adv:.1f}% more success than a coin flip (theoretical limit at this "
        f"epsilon: {100 * limit:.1f}%)."
    )
    if white and not failed:
        summary += (
            f" Implementation check: an attacker who also saw the mechanism's noisy measurements (never "
            f"published) gets an empirical lower bound of {_num(white[0]['epsilon_lower_bound']):.2f} on "
            f"epsilon, within the claimed {eps:g}."
        )
    if failed:
        summary += (
            f" FAILURE: the attacks prove epsilon is at least {lb:.2f}, above the claimed {eps:g}: "
            f"the release's guarantee does not hold (an implementation error)."
        )
    if not control_detected:
        summary += (
            f" The attacks did not detect the non-private control (best AUC {control_auc}, needed "
            f"{CONTROL_MIN_AUC}): they are too weak on this table to support a verdict."
        )
    return {
        "control_auc": control_auc,
        "control_detected": control_detected,
        "epsilon_lower_bound": rounded(lb),
        "guarantee_failed": failed,
        "empirical_advantage": rounded(adv),
        "implementation_check_bound": rounded(_num(white[0]["epsilon_lower_bound"])) if white else None,
        "theoretical_advantage": rounded(limit),
        "summary": summary,
    }
