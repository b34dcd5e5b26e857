"""A statistician's first checks on the file an analyst downloads, at full resolution, against the floor.

THIS MODULE IS NOT PRIVATE: it reads the raw table and is for the data steward only (like
:mod:`mechanisms.evaluation.utility`), never attached to a download.

Everything is computed on CSV cells as strings, as an analyst reads them (no schema binning):

* **labels**: the share of categorical cells whose label never occurs in the real data (a label the
  export rewrote, a missing marker spelled differently);
* **numeric columns**: mean, sd, median, p10, p90 and the share of each special value (0 and the
  schema's declared special values), real against synthetic; the worst column's mean error on the scale
  ``|mean_syn - mean_real| / (|mean_real| + sd_real / 10)``;
* **1-way TVD at full resolution**: categorical labels; numeric values one cell per value when the
  real column holds at most ``MAX_VALUE_CELLS`` distinct values, else ``QUANTILE_BINS_1WAY`` quantile
  bins of the real column (missing markers a cell of their own);
* **2-way TVD**: numeric columns in ``QUANTILE_BINS_2WAY`` quantile bins; and again with numeric
  columns cut into ``EQUAL_WIDTH_BINS`` equal-width bins over the public bounds (the usual peer view);
* **never-seen pairs**: the share of rows holding a pair of categorical values that never occur
  together in the real data;
* **rules**: the share of rows breaking a declared consistency rule (:mod:`mechanisms.rules`).

Every figure is reported beside the **floor**: the same figure for a same-size sample of real rows
that the reference did not contain (sampling error only, no privacy), so that "3x the floor" reads as
what it is. :func:`split_reference` makes the two real parts from one table.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..rules import violations
from ..schema import Schema

MAX_VALUE_CELLS = 200  # numeric columns with at most this many distinct real values: compared per value
QUANTILE_BINS_1WAY = 50
QUANTILE_BINS_2WAY = 20
EQUAL_WIDTH_BINS = 10
MAX_PAIRS = 300  # 2-way TVDs on a seeded sample of pairs beyond this many (42 columns have 861)
MEAN_SCALE_SD = 10  # mean error scale: |mean| + sd / 10, so a column centred on 0 is judged on its spread
# A column "far off": its 1-way TVD at least this many times the floor and above FAR_OFF_TVD absolute.
FAR_OFF_FACTOR = 3.0
FAR_OFF_TVD = 0.05


def split_reference(real: pd.DataFrame, rows: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two disjoint parts of a real table: the reference (half of it) and a floor sample of at most
    ``rows`` other rows (the size of the synthetic table it stands beside)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(real))
    half = len(real) // 2
    reference = real.iloc[np.sort(order[:half])].reset_index(drop=True)
    floor = real.iloc[np.sort(order[half : half + max(1, min(rows, len(real) - half))])].reset_index(drop=True)
    return reference, floor


class _Columns:
    """The reference table's view of each kept column: kind, numbers, its full-resolution cells."""

    def __init__(self, schema: Schema, reference: pd.DataFrame):
        self.schema = schema
        self.markers = set(schema.missing_markers) | {schema.missing_text}
        self.kept = [c for c in schema.kept if c.name in reference.columns]
        self.ref = reference

    def numbers(self, frame: pd.DataFrame, name: str) -> np.ndarray:
        s = frame[name].astype(str).str.strip()
        return self.schema.column(name).parse_numbers(s.where(~s.isin(self.markers))).to_numpy(dtype=float)

    def codes(self, frame: pd.DataFrame, col, *, bins: str) -> tuple[np.ndarray, int]:
        """Cell codes of one column of ``frame`` (labels; numbers per value or in bins of the reference;
        ``bins`` is "fine", "pair" or "equal"), and the number of codes."""
        if col.kind == "categorical":
            labels = pd.Index(pd.unique(self.ref[col.name].astype(str)))
            codes = labels.get_indexer(frame[col.name].astype(str))
            return np.where(codes < 0, len(labels), codes), len(labels) + 1
        x, xr = self.numbers(frame, col.name), self.numbers(self.ref, col.name)
        finite = xr[np.isfinite(xr)]
        if bins == "equal":
            edges = np.linspace(col.lower, col.upper, EQUAL_WIDTH_BINS + 1)[1:-1]
        elif bins == "fine" and len(np.unique(finite)) <= MAX_VALUE_CELLS:
            values = np.unique(finite)
            pos = np.clip(np.searchsorted(values, x), 0, max(len(values) - 1, 0))
            exact = len(values) > 0
            code = np.where(exact & (values[pos] == x), pos, len(values))  # another value: a cell of its own
            return np.where(np.isnan(x), len(values) + 1, code), len(values) + 2
        else:
            k = QUANTILE_BINS_1WAY if bins == "fine" else QUANTILE_BINS_2WAY
            edges = np.unique(np.quantile(finite, np.linspace(0, 1, k + 1)[1:-1])) if len(finite) else np.array([])
        code = np.searchsorted(edges, x, side="right")
        return np.where(np.isnan(x), len(edges) + 1, code), len(edges) + 2


def _tvd_codes(a: np.ndarray, b: np.ndarray, k: int) -> float:
    pa = np.bincount(a, minlength=k) / max(len(a), 1)
    pb = np.bincount(b, minlength=k) / max(len(b), 1)
    return float(0.5 * np.abs(pa - pb).sum())


def _stats(x: np.ndarray, specials: list[float]) -> dict:
    present = x[np.isfinite(x)]
    if len(present) == 0:
        return {
            "mean": None,
            "sd": None,
            "median": None,
            "p10": None,
            "p90": None,
            "missing": 1.0,
            "shares": {str(v): 0.0 for v in specials},
        }
    q = np.quantile(present, [0.1, 0.5, 0.9])
    return {
        "mean": float(present.mean()),
        "sd": float(present.std()),
        "median": float(q[1]),
        "p10": float(q[0]),
        "p90": float(q[2]),
        "missing": float(1 - len(present) / len(x)),
        "shares": {_label(v): float((present == v).mean()) for v in specials},
    }


def _label(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _numeric_section(cols: _Columns, frames: dict[str, pd.DataFrame]) -> list[dict]:
    out = []
    for c in cols.kept:
        if not c.is_numeric:
            continue
        specials = sorted({0.0} | set(map(float, c.special)) if c.lower <= 0 <= c.upper else set(map(float, c.special)))
        stats = {k: _stats(cols.numbers(f, c.name), specials) for k, f in frames.items()}
        real = stats["real"]
        item: dict[str, Any] = {"name": c.name, "specials": [_label(v) for v in specials], **stats}
        for side in ("synthetic", "floor"):
            s = stats[side]
            item[f"mean_error_{side}"] = _mean_error(real, s)
            item[f"special_share_error_{side}"] = (
                float(np.mean([abs(s["shares"][k] - real["shares"][k]) for k in real["shares"]]))
                if real["shares"]
                else 0.0
            )
        out.append(item)
    return out


def _mean_error(real: dict, other: dict) -> float | None:
    if real["mean"] is None or other["mean"] is None:
        return None
    return abs(other["mean"] - real["mean"]) / (abs(real["mean"]) + real["sd"] / MEAN_SCALE_SD + 1e-12)


def _foreign_share(cols: _Columns, frame: pd.DataFrame, real_labels: dict[str, set]) -> dict:
    bad = total = 0
    per_column = {}
    for c in cols.kept:
        s = frame[c.name].astype(str)
        if c.kind == "categorical":
            foreign = ~s.isin(real_labels[c.name])
        else:  # a numeric cell must be a number (a date in its format) or a missing marker
            text = s.str.strip()
            foreign = c.parse_numbers(text.where(~text.isin(cols.markers))).isna() & ~text.isin(cols.markers)
        k = int(foreign.sum())
        if k:
            per_column[c.name] = {"share": k / max(len(s), 1), "examples": sorted(set(s[foreign]))[:5]}
        bad += k
        total += len(s)
    return {"share": bad / max(total, 1), "columns": per_column}


def _unseen_pair_rows(cols: _Columns, frame: pd.DataFrame) -> float:
    cats = [c for c in cols.kept if c.kind == "categorical"]
    if len(cats) < 2 or len(frame) == 0:
        return 0.0
    ref = {c.name: cols.codes(cols.ref, c, bins="fine") for c in cats}
    mine = {c.name: cols.codes(frame, c, bins="fine")[0] for c in cats}
    hit = np.zeros(len(frame), bool)
    for a, b in combinations([c.name for c in cats], 2):
        kb = ref[b][1]
        seen = np.unique(ref[a][0] * kb + ref[b][0])
        hit |= ~np.isin(mine[a] * kb + mine[b], seen)
    return float(hit.mean())


def _pair_tvds(cols: _Columns, frame: pd.DataFrame, pairs, bins: str) -> float:
    if not pairs:
        return 0.0
    codes = {c.name: cols.codes(frame, c, bins=bins) for c in cols.kept}
    ref = {c.name: cols.codes(cols.ref, c, bins=bins) for c in cols.kept}
    out = []
    for a, b in pairs:
        kb = codes[b][1]
        k = codes[a][1] * kb
        out.append(_tvd_codes(ref[a][0] * kb + ref[b][0], codes[a][0] * kb + codes[b][0], k))
    return float(np.mean(out))


def report(
    schema: Schema,
    reference: pd.DataFrame,
    synthetic: pd.DataFrame,
    floor: pd.DataFrame,
    *,
    real_labels: pd.DataFrame | None = None,
    seed: int = 0,
) -> dict:
    """Full-resolution checks of ``synthetic`` against ``reference`` (real rows), each beside the floor:
    the same check for ``floor`` (real rows not in the reference, as many as the synthetic ones where
    possible). All three are raw CSV string frames. ``real_labels`` (default: reference and floor) is
    the real data whose labels count as known. NOT PRIVATE: steward-only."""
    for what, frame in (("synthetic", synthetic), ("reference", reference), ("floor", floor)):
        missing = [c.name for c in schema.kept if c.name not in frame.columns]
        if missing:
            raise ValueError(f"the {what} table lacks column(s) {missing[:10]}")
    cols = _Columns(schema, reference)
    known = pd.concat([reference, floor]) if real_labels is None else real_labels
    labels = {c.name: set(known[c.name].astype(str)) for c in cols.kept if c.kind == "categorical"}
    pairs = list(combinations([c.name for c in cols.kept], 2))
    if len(pairs) > MAX_PAIRS:
        pick = np.sort(np.random.default_rng(seed).choice(len(pairs), MAX_PAIRS, replace=False))
        pairs = [pairs[i] for i in pick]
    sides = {"synthetic": synthetic, "floor": floor}
    one_way = {side: {c.name: _tvd_codes(*_codes_pair(cols, c, f)) for c in cols.kept} for side, f in sides.items()}
    numeric = _numeric_section(cols, {"real": reference, **sides})
    res = {
        "rows": {"reference": len(reference), "synthetic": len(synthetic), "floor": len(floor)},
        "not_private": "computed from the raw data: steward-only, never part of a download",
        "numeric": numeric,
        "one_way": one_way,
    }
    for side, f in sides.items():
        res[side] = {
            "foreign_labels": _foreign_share(cols, f, labels),
            "special_share_error": _mean_of([n[f"special_share_error_{side}"] for n in numeric]),
            "mean_error_worst": _worst(numeric, f"mean_error_{side}"),
            "tvd_1way": float(np.mean(list(one_way[side].values()))) if one_way[side] else 0.0,
            "tvd_2way": _pair_tvds(cols, f, pairs, "pair"),
            "tvd_2way_equal_width": _pair_tvds(cols, f, pairs, "equal"),
            "unseen_pair_rows": _unseen_pair_rows(cols, f),
            "rule_violation_rows": rule_violation_share(schema, f),
        }
    res["worst_column"] = worst_column(one_way)
    return res


def rule_violation_share(schema: Schema, frame: pd.DataFrame) -> float | None:
    """Share of rows of a CSV string frame that break a declared rule (None without rules, or when
    the frame does not fit the schema)."""
    if not schema.rules:
        return None
    try:
        prepared = schema.prepare(frame)
    except ValueError:
        return None
    return float(violations(schema, prepared).mean()) if len(prepared) else 0.0


def _codes_pair(cols: _Columns, c, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    ref, k = cols.codes(cols.ref, c, bins="fine")
    mine, _ = cols.codes(frame, c, bins="fine")
    return ref, mine, k


def _mean_of(values) -> float:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else 0.0


def _worst(numeric: list[dict], key: str) -> dict | None:
    items = [(n[key], n["name"]) for n in numeric if n[key] is not None]
    if not items:
        return None
    value, name = max(items)
    return {"column": name, "value": float(value)}


def worst_column(one_way: dict) -> dict | None:
    """The column furthest from the real one at full resolution, relative to its floor, and whether it
    is far off (FAR_OFF_FACTOR x the floor and above FAR_OFF_TVD)."""
    syn, flo = one_way["synthetic"], one_way["floor"]
    if not syn:
        return None
    name = max(syn, key=lambda n: (syn[n] - flo[n], syn[n]))
    far = syn[name] >= FAR_OFF_FACTOR * flo[name] and syn[name] > FAR_OFF_TVD
    return {"column": name, "tvd": syn[name], "floor": flo[name], "far_off": bool(far)}


def quality(rep: dict) -> dict:
    """The headline quality score of the downloaded file, as SDMetrics' quality report reads it: the mean
    of "column shapes" (1 - full-resolution 1-way TVD) and "column pair trends" (1 - 2-way TVD with numeric
    columns in quantile bins), beside the same score for the floor, naming the worst column (``far_off``
    when it is FAR_OFF_FACTOR x its floor: shown red)."""

    def score(side: str) -> tuple[float, float, float]:
        shapes, trends = 1.0 - rep[side]["tvd_1way"], 1.0 - rep[side]["tvd_2way"]
        return (shapes + trends) / 2, shapes, trends

    s, shapes, trends = score("synthetic")
    worst = rep.get("worst_column") or {}
    return {
        "score": s,
        "column_shapes": shapes,
        "column_pair_trends": trends,
        "floor_score": score("floor")[0],
        "worst_column": worst.get("column"),
        "worst_tvd": worst.get("tvd"),
        "worst_floor": worst.get("floor"),
        "far_off": bool(worst.get("far_off")),
        "basis": "the downloaded file at full resolution",
    }


def _times(value: float, floor: float) -> str:
    return f"{value / floor:.1f}x the sampling floor" if floor > 1e-9 else f"floor {floor:.3f}"


def readings(rep: dict, q: dict) -> list[dict]:
    """Plain-language readings of the file checks, each against the floor (for the dashboard)."""
    syn, flo = rep["synthetic"], rep["floor"]
    out = [
        {
            "metric": "Quality score",
            "value": q["score"],
            "reading": f"Quality {100 * q['score']:.1f}% on the downloaded file (a same-size real sample: "
            f"{100 * q['floor_score']:.1f}%); worst column {q['worst_column']}"
            f"{' (far off)' if q['far_off'] else ''}.",
        },
        {
            "metric": "Full-resolution 1-way TVD",
            "value": syn["tvd_1way"],
            "reading": f"Single columns at full resolution within {100 * syn['tvd_1way']:.1f}% on average, "
            f"{_times(syn['tvd_1way'], flo['tvd_1way'])}.",
        },
        {
            "metric": "Full-resolution 2-way TVD",
            "value": syn["tvd_2way"],
            "reading": f"Column pairs within {100 * syn['tvd_2way']:.1f}% on average, "
            f"{_times(syn['tvd_2way'], flo['tvd_2way'])}.",
        },
        {
            "metric": "Foreign labels",
            "value": syn["foreign_labels"]["share"],
            "reading": f"{100 * syn['foreign_labels']['share']:.2f}% of cells hold a label the real data never has.",
        },
        {
            "metric": "Never-seen pair rows",
            "value": syn["unseen_pair_rows"],
            "reading": f"{100 * syn['unseen_pair_rows']:.1f}% of rows hold two categories never seen together "
            f"(a real sample: {100 * flo['unseen_pair_rows']:.1f}%).",
        },
    ]
    if syn["mean_error_worst"]:
        w = syn["mean_error_worst"]
        out.append(
            {
                "metric": "Worst mean error",
                "value": w["value"],
                "reading": f"The mean of {w['column']} is off by {w['value']:.2f} on the scale |mean| + sd/10 "
                f"(a real sample: {flo['mean_error_worst']['value']:.2f} at worst).",
            }
        )
    return out
