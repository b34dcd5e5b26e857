"""Private discovery of a categorical column's categories, for stewards with no public code list.

Publishing the category list a draft suggests from the data publishes every label that occurs, rare
ones included (a unique occupation names a person). This module releases instead the labels whose count
clears a noisy threshold: the stability-based histogram over an unknown domain (Korolova et al. 2009;
Bun, Nissim & Stemmer 2016; as Google's and Tumult's "thresholded partition selection").

Algorithm (per column)
    1. Counts: each present label is counted, and the missing cells (those equal to a missing marker)
       are counted as one more entry of the same histogram, the public key "missing".
    2. Noise: discrete Laplace noise of scale b = 2 / epsilon_column on each count
       (``Noise.laplace_int``, OpenDP's exact sampler in production).
    3. Threshold: t = 1 + ceil(b ln(2 / delta_column)); a label is released when its noisy count is at
       least t, with its noisy count; "missing" is reported as found when its noisy count is at least t
       (post-processing), with its noisy count. Nothing else about the column is released.
    4. Cap (post-processing): a column with more than ``MAX_LABELS`` released labels is reported as too
       many (no categories) rather than refused while counting: whether a job fails never depends on one
       record.

Missing markers chosen privately (``labels="auto"``)
    A file spells "missing" one way; a second marker among a text column's values (a census code "NA" beside
    the file's "?") is a category. With ``labels="auto"`` each non-empty missing marker is a public key of its
    own in every column's histogram (the empty cell stays the key "missing"), noised like the labels; then,
    as post-processing: the marker with the largest noisy count summed over the columns is the file's
    missing marker, and any other marker whose noisy count in a column clears the threshold is released as a
    label of that column. The choice reads the DP counts only, never a schema drafted from the data.

Privacy (replace-one neighbours, n public)
    Replacing one record changes one label per column (a missing cell counts under the key "missing", or
    under its marker's key with ``labels="auto"``: public keys present in both tables): one count goes
    down by 1 and one up by 1. For the labels present in both tables the count vector moves by at most 2
    in L1, and discrete Laplace noise of
    scale 2 / epsilon_column makes it epsilon_column-DP. A label present in only one of the two tables has
    count 1 there; there are at most two such labels (the replaced record's old label and its new one), and
    each is released with probability P[1 + Z >= t] <= exp(-(t - 1) / b) <= delta_column / 2, so their
    release adds at most delta_column: (epsilon_column, delta_column)-DP per column. Columns get
    epsilon / k and delta / k each: (epsilon, delta)-DP by basic composition.

Accuracy (stated)
    A label needs about t records to be seen (t ~ 2 ln(2 / delta) / epsilon_column: about 55 at
    epsilon_column 0.5 and delta_column 1e-6). Rarer labels are not discovered: their records fall to the
    column's "other" category when the schema is used, which is the point.

Cost of counting
    Every distinct label is counted and noised: at most n entries per column (n public). The per-chunk
    counts are merged by a vectorized group-by whenever they pile up past ``MERGE_ENTRIES``.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .accounting import EpsilonDeltaEvent, PrivacyCost
from .noise import Noise, laplace_scale
from .schema import MISSING_CATEGORY, Column, ordered_labels

SENSITIVITY = 2  # L1 change of one column's label counts under replace-one (one -1, one +1)
MAX_LABELS = 100_000  # released labels per column; more: reported as too many (a cap on the DP output)
MERGE_ENTRIES = 2_000_000  # per-chunk counts held before they are merged
MISSING_KEY = "missing"  # the public key of the missing cells' count in the report


def threshold(*, scale: float, delta: float) -> int:
    """The smallest count t with a one-record label released with probability at most delta / 2."""
    return 1 + int(math.ceil(scale * math.log(2.0 / delta)))


def label_counts(
    chunks: Iterable[pd.DataFrame],
    columns: Sequence[str],
    markers: Sequence[str],
    labels: dict[str, Sequence[str]] | None = None,
) -> dict[str, tuple[pd.Series, int]]:
    """Exact label counts and missing-cell counts per column (private: used only inside
    :func:`discover_categories`). Any number of distinct labels is counted (at most one per row); the
    markers in ``labels[column]`` are counted as labels of that column, not as missing."""
    parts: dict[str, list[pd.Series]] = {c: [] for c in columns}
    missing_n = dict.fromkeys(columns, 0)
    missing = {c: set(markers) - set((labels or {}).get(c, ())) for c in columns}
    for chunk in chunks:
        for c in columns:
            text = chunk[c].astype(str).str.strip().where(chunk[c].notna(), "")
            is_missing = text.isin(missing[c])
            missing_n[c] += int(is_missing.sum())
            parts[c].append(text[~is_missing].value_counts())
            if sum(len(p) for p in parts[c]) > MERGE_ENTRIES:
                parts[c] = [_merge(parts[c])]
    return {c: (_merge(parts[c]), missing_n[c]) for c in columns}


def _merge(parts: list[pd.Series]) -> pd.Series:
    if not parts:
        return pd.Series(dtype=np.int64)
    return pd.concat(parts).groupby(level=0, sort=False).sum().astype(np.int64)


AUTO = "auto"  # labels=AUTO: the missing markers kept as labels are chosen from the noisy counts


def _calibration(columns: Sequence[str], epsilon: float, delta: float) -> tuple[float, float, float, float]:
    """Each column's share of (epsilon, delta), its Laplace scale and its release threshold (public inputs)."""
    if not columns:
        raise ValueError("choose at least one column")
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"discovery needs epsilon > 0 and 0 < delta < 1, got epsilon={epsilon!r}, delta={delta!r}")
    eps_col, delta_col = epsilon / len(columns), delta / len(columns)
    scale = laplace_scale(sensitivity=SENSITIVITY, epsilon=eps_col)
    return eps_col, delta_col, scale, threshold(scale=scale, delta=delta_col)


def _released(found: list, values, missing: int, t: float) -> dict:
    """One column's release: the labels whose noisy count cleared ``t`` (none past ``MAX_LABELS``: too_many)
    and whether its missing cells did."""
    out = {MISSING_KEY: missing >= t, "missing_noisy_count": missing}
    if len(found) > MAX_LABELS:
        return {"categories": [], "noisy_counts": {}, **out, "too_many": True}
    return {"categories": ordered_labels(found), "noisy_counts": {lab: int(v) for lab, v in zip(found, values)}, **out}


def _result(out: dict, eps_col: float, delta_col: float, scale: float, t: float) -> dict:
    return {
        "columns": out,
        "epsilon_per_column": eps_col,
        "delta_per_column": delta_col,
        "scale": scale,
        "threshold": t,
    }


def discover_categories(
    chunks: Iterable[pd.DataFrame],
    columns: Sequence[str],
    *,
    epsilon: float,
    delta: float,
    noise: Noise,
    markers: Sequence[str],
    labels: dict[str, Sequence[str]] | str | None = None,
) -> dict:
    """The released labels of each column (see the module docstring) and the public parameters.
    ``labels``: per column, the missing markers that are labels there (the steward's choice when asking,
    e.g. a census code "NA" beside the file's "?"): counted and released like any label; or ``"auto"``: the
    choice made from the noisy counts (module docstring), reported as ``missing_marker`` and per column
    ``marker_labels``."""
    if labels == AUTO:
        return _discover_auto(chunks, columns, epsilon=epsilon, delta=delta, noise=noise, markers=markers)
    if isinstance(labels, str):
        raise ValueError(f"labels must be a mapping of column to markers or {AUTO!r}, got {labels!r}")
    eps_col, delta_col, scale, t = _calibration(columns, epsilon, delta)
    out = {}
    for c, (counts, n_missing) in label_counts(chunks, columns, markers, labels).items():
        # one histogram: the labels' counts and, last, the missing cells' count
        noisy = noise.laplace_int(np.append(counts.to_numpy(dtype=np.int64), n_missing), scale=scale)
        noisy_missing, noisy = int(noisy[-1]), noisy[:-1]
        keep = noisy >= t
        found = counts.index[keep]
        out[c] = _released(found.tolist(), noisy[keep], noisy_missing, t)
    return _result(out, eps_col, delta_col, scale, t)


def _discover_auto(
    chunks: Iterable[pd.DataFrame],
    columns: Sequence[str],
    *,
    epsilon: float,
    delta: float,
    noise: Noise,
    markers: Sequence[str],
) -> dict:
    """:func:`discover_categories` with every non-empty marker a key of its own (``labels="auto"``)."""
    keys = [m for m in dict.fromkeys(markers) if m]
    eps_col, delta_col, scale, t = _calibration(columns, epsilon, delta)
    counted = label_counts(chunks, columns, markers, dict.fromkeys(columns, keys))
    noisy: dict[str, tuple[pd.Index, np.ndarray, dict[str, int], int]] = {}
    for c, (counts, n_empty) in counted.items():
        marker_n = [int(counts.get(m, 0)) for m in keys]
        rest = counts[~counts.index.isin(keys)]
        # one histogram: the labels', each marker's and, last, the empty cells' count
        z = noise.laplace_int(np.concatenate([rest.to_numpy(dtype=np.int64), marker_n, [n_empty]]), scale=scale)
        noisy[c] = (rest.index, z[: len(rest)], dict(zip(keys, map(int, z[len(rest) : -1]))), int(z[-1]))
    # post-processing: the file's marker has the largest noisy count over the columns; others clearing t are labels
    totals = {m: sum(v[2][m] for v in noisy.values()) for m in keys}
    main = max(keys, key=lambda m: totals[m]) if keys else None
    out = {}
    for c, (index, z, marker_z, empty_z) in noisy.items():
        as_label = [m for m in keys if m != main and marker_z[m] >= t]
        keep = z >= t
        found = list(index[keep]) + as_label
        values = list(z[keep]) + [marker_z[m] for m in as_label]
        missing_z = empty_z + sum(v for m, v in marker_z.items() if m not in as_label)
        out[c] = _released(found, values, missing_z, t)
        out[c]["marker_labels"] = [] if out[c].get("too_many") else as_label
    return {**_result(out, eps_col, delta_col, scale, t), "missing_marker": main, "marker_noisy_totals": totals}


def privacy_cost(epsilon: float, delta: float, result: dict) -> PrivacyCost:
    return PrivacyCost(
        epsilon=float(epsilon),
        delta=float(delta),
        guarantee="approximate",
        caveats=(
            "labels seen in fewer records than the threshold are not discovered: their records become the "
            "column's 'other' category when the schema is used",
        ),
        details={
            "method": "thresholded noisy label counts (stability-based histogram)",
            "epsilon_per_column": result["epsilon_per_column"],
            "delta_per_column": result["delta_per_column"],
            "discrete_laplace_scale": result["scale"],
            "threshold": result["threshold"],
            "categories": result["columns"],
        },
        events=(EpsilonDeltaEvent(float(epsilon), float(delta), label="thresholded noisy label counts"),),
    )


OTHER_CATEGORY = "(other)"  # the category of every label not discovered: a fixed name, not read from data


def column_from_discovery(name: str, found: dict) -> Column | None:
    """The categorical column a steward gets from "use the private estimates": the discovered labels,
    ``MISSING_CATEGORY`` when the missing cells' noisy count cleared the threshold, and ``OTHER_CATEGORY``
    (the fixed "other" category) for every label not discovered. Every value is the discovery's DP output
    or a constant (post-processing). None when nothing usable was discovered (no label, or too many)."""
    labels = list(found.get("categories") or ())
    if not labels or found.get("too_many"):
        return None
    extra = [MISSING_CATEGORY] if found.get(MISSING_KEY) else []
    cats = labels + [c for c in (*extra, OTHER_CATEGORY) if c not in labels]
    return Column(name=name, kind="categorical", categories=tuple(cats), other=OTHER_CATEGORY)
