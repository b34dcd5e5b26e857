"""The utility report in plain language: the quality score, chance levels and one reading per
headline metric."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def quality_score(columns: Sequence[dict], pair_items: Sequence[dict]) -> dict:
    """One quality score in [0, 1] (1 = the synthetic table reproduces every marginal measured), as
    SDMetrics' QualityReport does: the mean of "column shapes" (1 - TVD of each column's cells) and
    "column pair trends" (1 - TVD of each pair's 2-way cells), each averaged over its items.

    Differences from SDMetrics, stated: numeric columns are compared on their public bins (TVD on cells)
    rather than by the KS complement, and pairs by their 2-way cell TVD rather than by correlation
    similarity; pairs are the evaluated sample when there are more than ``MAX_PAIRS``. With a single
    kept column there are no pairs and the score is the column shapes alone.
    """
    shapes = float(np.mean([1.0 - c["tvd"] for c in columns])) if columns else None
    trends = float(np.mean([1.0 - p["tvd"] for p in pair_items])) if pair_items else None
    parts = [v for v in (shapes, trends) if v is not None]
    return {
        "score": float(np.mean(parts)) if parts else None,
        "column_shapes": shapes,
        "column_pair_trends": trends,
        "n_columns": len(columns),
        "n_pairs": len(pair_items),
    }


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def chance_level(metric: str, class_shares: Sequence[float] | None = None) -> float | None:
    """The score of guessing: ROC AUC 0.5; macro F1 of a uniform random guess among K classes, which
    for a class of share p is 2 p (1/K) / (p + 1/K) (precision p, recall 1/K), averaged over classes."""
    if metric == "roc_auc":
        return 0.5
    if metric == "macro_f1" and class_shares:
        k = len(class_shares)
        return float(np.mean([2 * p / k / (p + 1 / k) for p in class_shares]))
    return None


def tstr_reading(metric: str, synthetic: float, real: float, chance: float | None) -> str:
    """TSTR against chance, not as a share of the real score: an AUC of 0.38 is worse than guessing,
    not "43% of the real baseline". The share reported is of the real models' gain over chance."""
    label = metric.replace("_", " ").upper()
    head = f"Models trained on synthetic data reach {label} {synthetic:.3f} on real test rows"
    real_txt = f"models trained on real data reach {real:.3f}"
    if chance is None:
        return f"{head}; {real_txt}."
    if synthetic <= chance:
        return f"{head}: no better than chance ({chance:.3f}); {real_txt}."
    if real <= chance:
        return f"{head}, above chance ({chance:.3f}); {real_txt}, no better than chance."
    gain = (synthetic - chance) / (real - chance)
    return (
        f"{head}: {_pct(gain)} of the way from chance ({chance:.3f}) to the models trained on real data ({real:.3f})."
    )


def table_readings(res: dict) -> list[dict]:
    cols = res["columns"]
    out = []
    q = res.get("quality")
    if q and q["score"] is not None:
        trends = f", column pair trends {_pct(q['column_pair_trends'])}" if q["column_pair_trends"] is not None else ""
        out.append(
            {
                "metric": "Quality score",
                "value": q["score"],
                "reading": f"Quality {_pct(q['score'])} (100% = every column and pair distribution reproduced): "
                f"column shapes {_pct(q['column_shapes'])}{trends}.",
            }
        )
    worst = max(cols, key=lambda c: c["tvd"])
    out.append(
        {
            "metric": "1-way TVD (mean)",
            "value": res["summary"]["tvd_1way_mean"],
            "reading": f"Single-column distributions within {_pct(res['summary']['tvd_1way_mean'])} on average "
            f"(worst: {worst['name']}, {_pct(worst['tvd'])}).",
        }
    )
    num = [c for c in cols if "wasserstein" in c]
    if num:
        w = float(np.mean([c["wasserstein_normalized"] for c in num]))
        out.append(
            {
                "metric": "1-Wasserstein / range (mean)",
                "value": w,
                "reading": f"Numeric columns are shifted by {_pct(w)} of their public range on average.",
            }
        )
    pairs = res["pairs"]
    if pairs["items"]:
        wp = pairs["worst"]
        sampled = "" if pairs["fraction"] == 1 else f" (a sample of {_pct(pairs['fraction'])} of the pairs)"
        out.append(
            {
                "metric": "2-way TVD (mean)",
                "value": pairs["mean_tvd"],
                "reading": f"2-way marginals within {_pct(pairs['mean_tvd'])} on average{sampled} "
                f"(worst: {wp['a']} x {wp['b']}, {_pct(wp['tvd'])}).",
            }
        )
        cb = pairs["combinations"]
        out.append(
            {
                "metric": "Suppressed 2-way combinations",
                "value": cb["suppressed_fraction"],
                "reading": f"{_pct(cb['suppressed_fraction'])} of the 2-way combinations seen in the real data "
                "never appear in the synthetic data.",
            }
        )
        out.append(
            {
                "metric": "Fabricated 2-way combinations",
                "value": cb["fabricated_fraction"],
                "reading": f"{_pct(cb['fabricated_fraction'])} of the synthetic 2-way combinations never occur "
                "in the real data.",
            }
        )
        co = res["correlation"]
        out.append(
            {
                "metric": "Association difference (mean |diff|)",
                "value": co["mean_abs_difference"],
                "reading": f"Correlations / associations differ by {co['mean_abs_difference']:.3f} on average"
                + (
                    f" (largest: {co['worst']['a']} / {co['worst']['b']}, {co['worst']['difference']:+.2f})."
                    if co["worst"]
                    else "."
                ),
            }
        )
    pm = res.get("pmse")
    if pm:
        for kind in ("cart", "logistic"):
            r = pm[kind]["ratio"]
            verdict = (
                "hard to tell apart"
                if r is not None and r < 3
                else "noticeably different"
                if r is not None and r < 30
                else "easy to tell apart"
            )
            out.append(
                {
                    "metric": f"pMSE ({kind})",
                    "value": pm[kind]["pmse"],
                    "reading": f"A {'CART' if kind == 'cart' else 'logistic'} classifier separating real from "
                    f"synthetic rows: pMSE {pm[kind]['pmse']:.4f} (0 = indistinguishable, 0.25 = "
                    f"perfectly separated), {r:.1f}x its null value: {verdict}."
                    if r is not None
                    else f"pMSE {pm[kind]['pmse']:.4f} (0 = indistinguishable, 0.25 = perfectly separated).",
                }
            )
    mm = res.get("mmd")
    if mm:
        out.append(
            {
                "metric": "MMD^2 (Gaussian kernel)",
                "value": mm["mmd2"],
                "reading": f"Kernel distance between the two tables MMD^2 = {mm['mmd2']:.4f} "
                "(0 = same distribution; compare releases of the same table).",
            }
        )
    ml = res.get("ml")
    if ml:
        key = ml["primary_metric"]
        s, r = ml["mean"][key]["synthetic"], ml["mean"][key]["real"]
        if s is not None and r is not None:
            out.append(
                {
                    "metric": f"TSTR {key} (mean of 12 models)",
                    "value": s,
                    "reading": tstr_reading(key, s, r, ml.get("chance", chance_level(key))),
                }
            )
    pv = res.get("privacy")
    if pv:
        dcr = pv["dcr"]
        out.append(
            {
                "metric": "Exact-match rate",
                "value": pv["exact_match_rate_vs_reference"],
                "reading": f"{_pct(pv['exact_match_rate_vs_reference'])} of synthetic rows copy a real reference "
                f"row exactly (real holdout rows: {_pct(pv['holdout_exact_match_rate'])}).",
            }
        )
        out.append(
            {
                "metric": "DCR share below holdout 5th percentile",
                "value": dcr["synthetic_share_below_holdout_p05"],
                "reading": f"{_pct(dcr['synthetic_share_below_holdout_p05'])} of synthetic rows are closer to a real "
                "row than 95% of real holdout rows are (about 5% expected if synthetic rows are no "
                "closer than new real rows); median DCR "
                f"{dcr['synthetic_median']:.3f} vs {dcr['holdout_median']:.3f} for holdout rows.",
            }
        )
    return out
