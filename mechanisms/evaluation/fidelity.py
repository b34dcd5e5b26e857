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
  the ``WORST_PAIRS`` pairs furthest from the real ones relative to their floor;
* **label relation gap** (with a target): per other column, the mean over its common values of
  |P(target class | value) real - synthetic|, and its worst column;
* **never-seen pairs**: the share of rows holding a pair of categorical values that never occur
  together in the real data;
* **rules**: the share of rows breaking a declared consistency rule (:mod:`mechanisms.rules`).

Every figure is reported beside the **floor**: the same figure for a same-size sample of real rows
that the reference did not contain (sampling error only, no privacy), so that "3x the floor" reads as
what it is. :func:`split_reference` makes the two real parts from one table. :func:`quality` turns the
checks (and the accuracy of models trained on the file) into the headline score, red with a plain
sentence when a column, a pair or the label relation gap is far off or the models are near chance.
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
# A pair far off: its 2-way TVD FAR_OFF_FACTOR x the floor (or x what sampling alone gives, when larger:
# :func:`_far`) and above FAR_OFF_PAIR_TVD. A binary label's relationship with a column lost outright (both
# shares kept) moves sum_v P(v) |P(y | v) - P(y)| of the rows, at most 2 P(y) (1 - P(y)): at most 0.11 for
# a label held by 6% of rows (the census income label), so a threshold much above 0.05 would miss the lost
# relationships of rare labels.
FAR_OFF_PAIR_TVD = 0.05
WORST_PAIRS = 5  # pairs named in the report, the worst first
# The label relation gap: per column, the mean over its common values of |P(target class | value) real -
# synthetic|. A value is common when the reference holds LABEL_GAP_MIN_ROWS rows of it (its share then has
# a standard error of at most 0.05); a reference under 2,000 rows needs LABEL_GAP_MIN_SHARE of its rows
# (up to 20 values a column), never fewer than LABEL_GAP_MIN_ROWS_SMALL (a standard error of at most 0.09).
LABEL_GAP_MIN_ROWS = 100
LABEL_GAP_MIN_SHARE = 0.05
LABEL_GAP_MIN_ROWS_SMALL = 30
# A column's label gap far off: FAR_OFF_FACTOR x the floor (as for pairs) and above 0.05 (5 points of the
# class's share, on average over the column's values). For a binary target and a column whose shares are
# kept, the pair's 2-way TVD is the row-weighted mean of the same gaps, so it reads as FAR_OFF_PAIR_TVD does.
FAR_OFF_LABEL_GAP = 0.05
# Models trained on the file are near chance when their primary TSTR score (ROC AUC; macro F1 beyond two
# classes) is within this of chance (ROC AUC <= 0.55) while models trained on real rows score above it.
NEAR_CHANCE_MARGIN = 0.05


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
        self._cuts: dict[tuple[str, str], tuple[str, Any]] = {}

    def numbers(self, frame: pd.DataFrame, name: str) -> np.ndarray:
        s = frame[name].astype(str).str.strip()
        return self.schema.column(name).parse_numbers(s.where(~s.isin(self.markers))).to_numpy(dtype=float)

    def _cut(self, col, bins: str) -> tuple[str, Any]:
        """How a column is cut into cells, learnt from the reference once: ("labels", its labels),
        ("values", its distinct values) or ("edges", bin edges)."""
        key = (col.name, bins)
        if key not in self._cuts:
            if col.kind == "categorical":
                self._cuts[key] = ("labels", pd.Index(pd.unique(self.ref[col.name].astype(str))))
            else:
                xr = self.numbers(self.ref, col.name)
                finite = xr[np.isfinite(xr)]
                if bins == "equal":
                    self._cuts[key] = ("edges", np.linspace(col.lower, col.upper, EQUAL_WIDTH_BINS + 1)[1:-1])
                elif bins == "fine" and len(np.unique(finite)) <= MAX_VALUE_CELLS:
                    self._cuts[key] = ("values", np.unique(finite))
                else:
                    k = QUANTILE_BINS_1WAY if bins == "fine" else QUANTILE_BINS_2WAY
                    q = np.quantile(finite, np.linspace(0, 1, k + 1)[1:-1]) if len(finite) else np.array([])
                    self._cuts[key] = ("edges", np.unique(q))
        return self._cuts[key]

    def codes(self, frame: pd.DataFrame, col, *, bins: str) -> tuple[np.ndarray, int]:
        """Cell codes of one column of ``frame`` (labels; numbers per value or in bins of the reference;
        ``bins`` is "fine", "pair" or "equal"), and the number of codes."""
        how, cut = self._cut(col, bins)
        if how == "labels":
            codes = cut.get_indexer(frame[col.name].astype(str))
            return np.where(codes < 0, len(cut), codes), len(cut) + 1
        x = self.numbers(frame, col.name)
        if how == "values":
            pos = np.clip(np.searchsorted(cut, x), 0, max(len(cut) - 1, 0))
            exact = len(cut) > 0
            code = np.where(exact & (cut[pos] == x), pos, len(cut))  # another value: a cell of its own
            return np.where(np.isnan(x), len(cut) + 1, code), len(cut) + 2
        code = np.searchsorted(cut, x, side="right")
        return np.where(np.isnan(x), len(cut) + 1, code), len(cut) + 2

    def label(self, col, code: int, *, bins: str) -> str:
        """What a cell code of :meth:`codes` stands for, in words."""
        how, cut = self._cut(col, bins)
        if how == "labels":
            return str(cut[code]) if code < len(cut) else "another label"
        if code == len(cut) + 1:
            return "missing"
        if how == "values":
            return _label(cut[code]) if code < len(cut) else "another value"
        if len(cut) == 0:
            return "any value"
        if code == 0:
            return f"below {_label(cut[0])}"
        if code == len(cut):
            return f"{_label(cut[-1])} or more"
        return f"{_label(cut[code - 1])} to under {_label(cut[code])}"


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


def _sampling_tvd(ref_counts: np.ndarray, n_side: int) -> float:
    """The TVD that sampling alone puts between the reference and ``n_side`` rows of its distribution:
    per cell of share p, E|p_ref - p_side| is sqrt(2 / pi) times the standard deviation (normal), and at
    most 2 p (a cell too rare for the normal)."""
    n_ref = max(int(ref_counts.sum()), 1)
    p = ref_counts / n_ref
    sd = np.sqrt(p * (1 - p) * (1 / n_ref + 1 / max(n_side, 1)))
    return float(0.5 * np.minimum(np.sqrt(2 / np.pi) * sd, 2 * p).sum())


def _pair_tvds(
    cols: _Columns, frame: pd.DataFrame, pairs: list[tuple[str, str]], bins: str
) -> tuple[np.ndarray, np.ndarray]:
    """The 2-way TVD of each pair, ``frame`` against the reference, and the TVD sampling alone would
    give (:func:`_sampling_tvd`)."""
    names = {n for p in pairs for n in p}
    codes = {c.name: cols.codes(frame, c, bins=bins) for c in cols.kept if c.name in names}
    ref = {c.name: cols.codes(cols.ref, c, bins=bins) for c in cols.kept if c.name in names}
    tvd, sampling = np.zeros(len(pairs)), np.zeros(len(pairs))
    for i, (a, b) in enumerate(pairs):
        kb, k = codes[b][1], codes[a][1] * codes[b][1]
        ref_counts = np.bincount(ref[a][0] * kb + ref[b][0], minlength=k)
        mine = np.bincount(codes[a][0] * kb + codes[b][0], minlength=k) / max(len(frame), 1)
        tvd[i] = 0.5 * np.abs(ref_counts / max(len(cols.ref), 1) - mine).sum()
        sampling[i] = _sampling_tvd(ref_counts, len(frame))
    return tvd, sampling


def _sample_pairs(names: list[str], target: str | None, seed: int) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The pairs whose 2-way TVD is computed, and each one's weight in the mean over all pairs: every pair
    when there are at most MAX_PAIRS; else every pair with the target and a seeded sample of the others,
    each sampled pair standing for its share of the pairs left out (so the mean still estimates the mean
    over all pairs)."""
    pairs = list(combinations(names, 2))
    if len(pairs) <= MAX_PAIRS:
        return pairs, np.ones(len(pairs))
    fixed = [p for p in pairs if target in p]
    others = [p for p in pairs if target not in p]
    k = min(len(others), max(MAX_PAIRS - len(fixed), 1))
    pick = np.sort(np.random.default_rng(seed).choice(len(others), k, replace=False))
    weights = np.r_[np.ones(len(fixed)), np.full(k, len(others) / k)]
    return fixed + [others[i] for i in pick], weights


def _far(value: float, floor: float, absolute: float, sampling: float = 0.0) -> bool:
    """At least FAR_OFF_FACTOR x the floor, and x what sampling alone gives (a floor that came out low
    by chance does not make an ordinary value look far off), and above ``absolute``."""
    return bool(value >= FAR_OFF_FACTOR * max(floor, sampling) and value > absolute)


def _ratio(value: float, floor: float) -> float | None:
    return float(value / floor) if floor > 1e-12 else None


def worst_pairs(
    pairs: list[tuple[str, str]], synthetic: np.ndarray, floor: np.ndarray, sampling: np.ndarray
) -> list[dict]:
    """The WORST_PAIRS pairs furthest from the real ones relative to their floor: the far-off ones
    (:func:`_far` with FAR_OFF_PAIR_TVD; ``sampling``: the TVD sampling alone gives the synthetic rows)
    first, then by excess over the floor."""
    far = np.array([_far(s, f, FAR_OFF_PAIR_TVD, e) for s, f, e in zip(synthetic, floor, sampling)], bool)
    order = np.lexsort((-synthetic, -(synthetic - floor), ~far))[:WORST_PAIRS]
    return [
        {
            "columns": list(pairs[i]),
            "tvd": float(synthetic[i]),
            "floor": float(floor[i]),
            "ratio": _ratio(synthetic[i], floor[i]),
            "sampling": float(sampling[i]),
            "far_off": bool(far[i]),
        }
        for i in order
    ]


def label_gap_min_rows(reference_rows: int) -> int:
    """The rows of one value a reference must hold for the label gap to count that value."""
    return int(max(LABEL_GAP_MIN_ROWS_SMALL, min(LABEL_GAP_MIN_ROWS, LABEL_GAP_MIN_SHARE * reference_rows)))


def _label_class(cols: _Columns, col, ref_codes: np.ndarray, k: int) -> int:
    """The code of the class whose share the label gap follows: of a binary target the positive class
    (the later of the two in the schema's order, as TSTR's ROC AUC takes it); else the majority class."""
    counts = np.bincount(ref_codes, minlength=k)
    present = np.flatnonzero(counts)
    if len(present) != 2:
        return int(np.argmax(counts))
    if col.kind != "categorical":
        return int(present[-1])  # per-value codes follow the values' order
    order = [cols.label(col, int(i), bins="fine") for i in present]
    rank = [col.categories.index(v) if v in col.categories else len(col.categories) for v in order]
    return int(present[int(np.argmax(rank))])


def _label_gap(cols: _Columns, target: str, sides: dict[str, pd.DataFrame]) -> dict | None:
    """How the share of the target's class given each value of each other column moves, real against
    each side: per column, the mean over its common values of |P(class | value) real - the side's|."""
    tcol = cols.schema.column(target)
    if tcol.kind not in ("categorical", "integer"):
        return None
    ref_y, ky = cols.codes(cols.ref, tcol, bins="fine")
    cls = _label_class(cols, tcol, ref_y, ky)
    ys = {side: (cols.codes(f, tcol, bins="fine")[0] == cls).astype(float) for side, f in sides.items()}
    min_rows = label_gap_min_rows(len(cols.ref))
    columns = []
    for c in cols.kept:
        if c.name == target:
            continue
        xr, k = cols.codes(cols.ref, c, bins="pair")
        n_ref = np.bincount(xr, minlength=k)
        common = n_ref >= min_rows
        if common.sum() < 2:  # one common value says nothing about how the label depends on the column
            continue
        rate_ref = np.bincount(xr, weights=(ref_y == cls).astype(float), minlength=k) / np.maximum(n_ref, 1)
        item: dict[str, Any] = {"column": c.name, "values": int(common.sum())}
        for side, f in sides.items():
            x, _ = cols.codes(f, c, bins="pair")
            n = np.bincount(x, minlength=k)
            rate = np.bincount(x, weights=ys[side], minlength=k) / np.maximum(n, 1)
            counted = common & (n > 0)  # a value the side lacks is the 1-way check's business
            if not counted.any():
                break
            gap = np.abs(rate - rate_ref)
            item[side] = float(gap[counted].mean())
            if side == "synthetic":
                v = int(np.flatnonzero(counted)[np.argmax(gap[counted])])
                item["value"] = cols.label(c, v, bins="pair")
                item["real_rate"], item["synthetic_rate"] = float(rate_ref[v]), float(rate[v])
                # what sampling alone gives: E|rate_ref - rate| = sqrt(2 / pi) sd per value (normal)
                var = rate_ref * (1 - rate_ref) * (1 / np.maximum(n_ref, 1) + 1 / np.maximum(n, 1))
                item["sampling"] = float(np.sqrt(2 / np.pi * var[counted]).mean())
        else:
            item["ratio"] = _ratio(item["synthetic"], item["floor"])
            item["far_off"] = _far(item["synthetic"], item["floor"], FAR_OFF_LABEL_GAP, item["sampling"])
            columns.append(item)
    if not columns:
        return None
    columns.sort(key=lambda i: (not i["far_off"], -(i["synthetic"] - i["floor"]), -i["synthetic"]))
    return {
        "target": target,
        "class": cols.label(tcol, cls, bins="fine"),
        "min_rows": min_rows,
        "synthetic": float(np.mean([i["synthetic"] for i in columns])),
        "floor": float(np.mean([i["floor"] for i in columns])),
        "columns": columns,
        "worst": {"target": target, "class": cols.label(tcol, cls, bins="fine"), **columns[0]},
    }


def report(
    schema: Schema,
    reference: pd.DataFrame,
    synthetic: pd.DataFrame,
    floor: pd.DataFrame,
    *,
    real_labels: pd.DataFrame | None = None,
    seed: int = 0,
    target: str | None = None,
) -> dict:
    """Full-resolution checks of ``synthetic`` against ``reference`` (real rows), each beside the floor:
    the same check for ``floor`` (real rows not in the reference, as many as the synthetic ones where
    possible). All three are raw CSV string frames. ``real_labels`` (default: reference and floor) is
    the real data whose labels count as known. ``target`` (the column models are trained to predict)
    adds every pair with it to the 2-way checks and the label relation gap. NOT PRIVATE: steward-only."""
    for what, frame in (("synthetic", synthetic), ("reference", reference), ("floor", floor)):
        missing = [c.name for c in schema.kept if c.name not in frame.columns]
        if missing:
            raise ValueError(f"the {what} table lacks column(s) {missing[:10]}")
    cols = _Columns(schema, reference)
    names = [c.name for c in cols.kept]
    if target is not None and target not in names:
        raise ValueError(f"target must be a kept column of the schema, got target={target!r}")
    known = pd.concat([reference, floor]) if real_labels is None else real_labels
    labels = {c.name: set(known[c.name].astype(str)) for c in cols.kept if c.kind == "categorical"}
    pairs, weights = _sample_pairs(names, target, seed)
    sides = {"synthetic": synthetic, "floor": floor}
    one_way = {side: {c.name: _tvd_codes(*_codes_pair(cols, c, f)) for c in cols.kept} for side, f in sides.items()}
    two_way, sampling = {}, {}
    for side, f in sides.items():
        two_way[side], sampling[side] = _pair_tvds(cols, f, pairs, "pair")
    numeric = _numeric_section(cols, {"real": reference, **sides})
    res = {
        "rows": {"reference": len(reference), "synthetic": len(synthetic), "floor": len(floor)},
        "not_private": "computed from the raw data: steward-only, never part of a download",
        "numeric": numeric,
        "one_way": one_way,
        "two_way": {"pairs": [list(p) for p in pairs], **{side: t.tolist() for side, t in two_way.items()}},
    }
    for side, f in sides.items():
        res[side] = {
            "foreign_labels": _foreign_share(cols, f, labels),
            "special_share_error": _mean_of([n[f"special_share_error_{side}"] for n in numeric]),
            "mean_error_worst": _worst(numeric, f"mean_error_{side}"),
            "tvd_1way": float(np.mean(list(one_way[side].values()))) if one_way[side] else 0.0,
            "tvd_2way": _weighted_mean(two_way[side], weights),
            "tvd_2way_equal_width": _weighted_mean(_pair_tvds(cols, f, pairs, "equal")[0], weights),
            "unseen_pair_rows": _unseen_pair_rows(cols, f),
            "rule_violation_rows": rule_violation_share(schema, f),
        }
    res["worst_column"] = worst_column(one_way)
    res["worst_pairs"] = worst_pairs(pairs, two_way["synthetic"], two_way["floor"], sampling["synthetic"])
    res["label_gap"] = _label_gap(cols, target, sides) if target is not None else None
    return res


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> float:
    return float(np.average(values, weights=weights)) if len(values) else 0.0


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


def quality(rep: dict, ml: dict | None = None) -> dict:
    """The headline quality score of the downloaded file, as SDMetrics' quality report reads it: the mean
    of "column shapes" (1 - full-resolution 1-way TVD) and "column pair trends" (1 - 2-way TVD with numeric
    columns in quantile bins), beside the same score for the floor, naming the worst column, the worst pair,
    the label relation gap and, with ``ml`` (the utility report's TSTR section), the accuracy of models
    trained on the file. ``far_off`` (shown red) when any of them is far off, each with a plain sentence
    in ``warnings``."""

    def score(side: str) -> tuple[float, float, float]:
        shapes, trends = 1.0 - rep[side]["tvd_1way"], 1.0 - rep[side]["tvd_2way"]
        return (shapes + trends) / 2, shapes, trends

    s, shapes, trends = score("synthetic")
    worst = rep.get("worst_column") or {}
    pair = (rep.get("worst_pairs") or [None])[0]
    gap = (rep.get("label_gap") or {}).get("worst")
    models = model_accuracy(ml)
    return {
        "score": s,
        "column_shapes": shapes,
        "column_pair_trends": trends,
        "floor_score": score("floor")[0],
        "worst_column": worst.get("column"),
        "worst_tvd": worst.get("tvd"),
        "worst_floor": worst.get("floor"),
        "worst_column_far_off": bool(worst.get("far_off")),
        "worst_pair": pair,
        "label_gap": gap,
        "models": models,
        "models_near_chance": bool(models and models["near_chance"]),
        "warnings": _warnings(worst, pair, gap, models),
        "far_off": bool(worst.get("far_off"))
        or bool(pair and pair["far_off"])
        or bool(gap and gap["far_off"])
        or bool(models and models["near_chance"]),
        "basis": "the downloaded file at full resolution",
    }


METRIC_NAMES = {"roc_auc": "ROC AUC", "macro_f1": "macro F1"}


def model_accuracy(ml: dict | None) -> dict | None:
    """The primary TSTR score of models trained on the file and of the same models trained on real rows,
    both tested on real rows, and whether the file's models are near chance: within NEAR_CHANCE_MARGIN of
    it while the real rows' models beat that margin (else the columns do not predict the target, and the
    file is not to blame)."""
    if not ml or not ml.get("primary_metric"):
        return None
    metric = ml["primary_metric"]
    mean = (ml.get("mean") or {}).get(metric) or {}
    synthetic, real, chance = mean.get("synthetic"), mean.get("real"), ml.get("chance")
    if synthetic is None:
        return None
    near = chance is not None and synthetic <= chance + NEAR_CHANCE_MARGIN
    if near and real is not None:
        near = real > chance + NEAR_CHANCE_MARGIN
    return {
        "target": ml.get("target"),
        "metric": metric,
        "metric_name": METRIC_NAMES.get(metric, metric),
        "synthetic": synthetic,
        "real": real,
        "chance": chance,
        "near_chance": bool(near),
    }


def _warnings(worst: dict, pair: dict | None, gap: dict | None, models: dict | None) -> list[str]:
    out = []
    if models and models["near_chance"]:
        real = f"; trained on real rows: {models['real']:.2f}" if models["real"] is not None else ""
        out.append(
            f"Models trained on this file predict {models['target']} no better than chance "
            f"({models['metric_name']} {models['synthetic']:.2f}, chance {models['chance']:.2f}{real}): "
            "do not use it to train models."
        )
    if gap and gap["far_off"]:
        out.append(
            f"The file loses how {gap['target']} depends on {gap['column']}: the share of {gap['target']} = "
            f"{gap['class']} among rows with {gap['column']} = {gap['value']} is {100 * gap['real_rate']:.0f}% "
            f"in the real data and {100 * gap['synthetic_rate']:.0f}% in the file; over the values of "
            f"{gap['column']} it is off by {100 * gap['synthetic']:.1f} points on average "
            f"({_times(gap['synthetic'], gap['floor'])})."
        )
    if pair and pair["far_off"]:
        a, b = pair["columns"]
        out.append(
            f"The file does not keep how {a} and {b} go together: 2-way TVD {pair['tvd']:.3f}, "
            f"{_times(pair['tvd'], pair['floor'])} ({pair['floor']:.3f})."
        )
    if worst.get("far_off"):
        out.append(
            f"Column {worst['column']} is far off: TVD {worst['tvd']:.3f} against {worst['floor']:.3f} "
            "for a same-size real sample."
        )
    return out


def _times(value: float, floor: float) -> str:
    return f"{value / floor:.1f}x the sampling floor" if floor > 1e-9 else f"floor {floor:.3f}"


def readings(rep: dict, q: dict) -> list[dict]:
    """Plain-language readings of the file checks, each against the floor (for the dashboard)."""
    syn, flo = rep["synthetic"], rep["floor"]
    far = q.get("worst_column_far_off", q["far_off"])
    out = [
        {
            "metric": "Quality score",
            "value": q["score"],
            "reading": f"Quality {100 * q['score']:.1f}% on the downloaded file (a same-size real sample: "
            f"{100 * q['floor_score']:.1f}%); worst column {q['worst_column']}"
            f"{' (far off)' if far else ''}.",
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
    ]
    pair = (rep.get("worst_pairs") or [None])[0]
    if pair:
        out.append(
            {
                "metric": "Worst pair 2-way TVD",
                "value": pair["tvd"],
                "reading": f"The pair furthest from the real one: {pair['columns'][0]} with {pair['columns'][1]}, "
                f"2-way TVD {pair['tvd']:.3f}, {_times(pair['tvd'], pair['floor'])}"
                f"{' (far off)' if pair['far_off'] else ''}.",
            }
        )
    gap = rep.get("label_gap")
    if gap:
        w = gap["worst"]
        out.append(
            {
                "metric": "Label relation gap",
                "value": w["synthetic"],
                "reading": f"The share of {gap['target']} = {gap['class']} given one column's value is off by "
                f"{100 * gap['synthetic']:.1f} points on average (a real sample: {100 * gap['floor']:.1f}); "
                f"worst {w['column']}, {100 * w['synthetic']:.1f} points, {_times(w['synthetic'], w['floor'])}"
                f"{' (far off)' if w['far_off'] else ''}.",
            }
        )
    out += [
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
