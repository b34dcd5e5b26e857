"""Model accuracy for the "train a model" purpose: measured reference figures, not a prediction.

How well a model trained on synthetic data predicts a target (TSTR: train on synthetic, test on real)
depends above all on how strongly the target depends on the other columns, which only the data show:
on the recorded benchmark runs AIM (workload "target") at epsilon 1 kept 95% of the real data's AUC gain
over chance on one table and almost none on another. No honest prediction for a new table can be made from
the schema, n, epsilon and delta, so the guided release shows what was *measured* on the benchmark
tables, labelled as such, at the recorded epsilon nearest to the steward's. The one statement that
follows from public inputs alone is structural: a mechanism that synthesises every column independently
keeps no relation between the target and the other columns, so models trained on it predict at chance.

Each mechanism's figures (``tstr_measured`` in its package's guide.py) are printed by
``python -m benchmarks.calibration.tstr_reference`` from docs/data/ (binary targets, ROC AUC; per table the median over
the recorded runs, beside training on the real data); :func:`measured` gathers them.
"""

from __future__ import annotations

import math

CHANCE = 0.5
TABLES_NOTE = (
    "ROC AUC of models trained on each mechanism's output and tested on real rows, measured on "
    "four benchmark tables with a two-class target (adult, bank_marketing, credit_default_taiwan, "
    "german_credit), beside models trained on the real data; 0.5 is chance"
)


def measured() -> dict:
    """Every mechanism's recorded figures, {(variant, epsilon): {table: (TSTR AUC, real AUC)}}: each home's
    ``tstr_measured`` (printed by ``python -m benchmarks.calibration.tstr_reference``)."""
    from .. import registry  # the registry imports the mechanisms, which import the guidance

    return {key: figures for name in registry.names() for key, figures in registry.get(name).tstr_measured.items()}


def variant(mechanism: str, params: dict) -> str:
    """The recorded variant a release matches: a mechanism run around the target (its ``target_params``,
    e.g. AIM's workload "target") is recorded apart, as "<name>:target"."""
    from .. import registry

    around = registry.get(mechanism).target_params if mechanism in registry.names() else {}
    if around and all((params or {}).get(k) == v for k, v in around.items()):
        return f"{mechanism}:target"
    if (params or {}).get("key_columns"):  # the target as key column (MST): recorded apart, if at all
        return f"{mechanism}:key_columns"
    return mechanism


def nearest_epsilon(name: str, epsilon: float) -> float | None:
    """The recorded epsilon of ``name`` closest to ``epsilon`` on a log scale, or None when none is."""
    recorded = [e for (n, e) in measured() if n == name]
    return min(recorded, key=lambda e: abs(math.log(e / epsilon))) if recorded else None


def _span(values) -> str:
    values = list(values)
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f}-{hi:.2f}"


def reference(mechanism: str, params: dict, epsilon: float, *, independent: bool = False) -> dict:
    """What models trained on ``mechanism``'s output scored on the benchmark tables at the nearest
    recorded epsilon: ``kind`` "chance" (structural: independent columns), "measured" or "none"."""
    name = variant(mechanism, params)
    eps = nearest_epsilon(name, epsilon)
    tables = measured().get((name, eps), {})
    figures = {t: {"tstr_auc": s, "real_auc": r} for t, (s, r) in sorted(tables.items())}
    out = {
        "kind": "measured" if tables else "none",
        "variant": name,
        "epsilon": eps,
        "tables": figures,
        "predicted": independent and CHANCE or None,
    }
    if independent:
        out["kind"] = "chance"
        out["text"] = (
            "about 0.5 (chance): every column is synthesised on its own, so a model learns nothing "
            "about the target" + (f"; measured {_span(s for s, _ in tables.values())}" if tables else "")
        )
    elif tables:
        out["text"] = (
            f"measured {_span(s for s, _ in tables.values())} on {len(tables)} benchmark tables at "
            f"ε {eps:g} (real data: {_span(r for _, r in tables.values())}; chance 0.5)"
        )
    else:
        out["text"] = "not measured on the benchmark tables"
    return out


def note(target: str, categories: int | None) -> str:
    """The sentence beside the reference column: why it is not a prediction and what it is."""
    text = (
        f"Model accuracy is not predicted for this table: it depends on how strongly {target} depends on the "
        "other columns, which only the data can show (on the benchmark tables the same mechanism at the same "
        "epsilon kept 95% of the real data's gain over chance on one table and almost none on another). "
        f"Shown instead: {TABLES_NOTE}, at the recorded epsilon nearest to yours."
    )
    if categories != 2:
        text += f" {target} is not a two-class column, so the AUC figures are a looser guide."
    return text
