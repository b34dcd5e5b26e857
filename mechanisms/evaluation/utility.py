"""The utility report: :func:`evaluate` runs every section on the public scale and returns plain JSON
(NOT PRIVATE: computed from the raw data, steward-only)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd

# sections and tstr import scikit-learn at module level, not lazily: threadpool_limits only reaches
# thread pools (OpenMP, BLAS) of libraries already loaded when it is entered.
from threadpoolctl import threadpool_limits

from ..schema import Schema
from .encoding import Encoder
from .readings import table_readings, quality_score
from .sections import (
    columns_section,
    correlation_section,
    mmd_section,
    pairs_section,
    pmse_section,
    privacy_section,
)
from .tstr import TSTR_MIN_ROWS, ProgressFn, ml_section


def evaluate(
    schema: Schema,
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    target: str | None = None,
    test: pd.DataFrame | None = None,
    seed: int = 0,
    fast: bool = False,
    progress: ProgressFn | None = None,
) -> dict:
    """Compare PREPARED real and synthetic frames (:meth:`Schema.prepare` output) on the public scale.

    Returns plain JSON-ready data (see the module docstring). ``test`` (prepared) is a real held-out
    table for TSTR; without it, a share of the real rows is held out. ``fast`` trains the TSTR models
    on fewer rows with fewer trees (web worker). NOT PRIVATE: steward-only output.
    """
    # One thread for BLAS / OpenMP: workers run one job per core, and on a loaded machine threaded
    # kernels spin-wait (measured: 3-4x wall time over CPU time with two threads at load 10).
    with threadpool_limits(limits=1):
        return _evaluate(
            schema,
            real,
            synthetic,
            target=target,
            test=test,
            seed=seed,
            fast=fast,
            progress=progress or (lambda f, s: None),
        )


def _evaluate(
    schema: Schema,
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    target: str | None,
    test: pd.DataFrame | None,
    seed: int,
    fast: bool,
    progress: ProgressFn,
) -> dict:
    if len(real) < 2 or len(synthetic) < 2:
        raise ValueError(f"need at least 2 real and 2 synthetic rows, got {len(real)} and {len(synthetic)}")
    for label, frame in (("real", real), ("synthetic", synthetic)):
        missing = [n for n in schema.names if n not in frame.columns]
        if missing:
            raise ValueError(f"the {label} table lacks column(s) {missing}")
    if target is not None and target not in schema.names:
        raise ValueError(f"target must be a kept column of the schema, got target={target!r}")
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}

    def stage(name: str, frac: float, fn):
        progress(frac, name)
        t = time.perf_counter()
        value = fn()
        timings[name] = round(time.perf_counter() - t, 3)
        return value

    real, synthetic = _normalise(schema, real), _normalise(schema, synthetic)
    rc, sc = schema.to_cells(real), schema.to_cells(synthetic)
    res: dict[str, Any] = {
        "version": 1,
        "n_real": len(real),
        "n_synthetic": len(synthetic),
        "seed": seed,
        "not_private": "computed from the raw data: steward-only, never part of a download",
    }
    res["columns"] = stage("columns", 0.0, lambda: columns_section(schema, real, synthetic, rc, sc))
    res["pairs"] = stage("pairs", 0.1, lambda: pairs_section(schema, rc, sc, rng))
    res["correlation"] = stage("correlation", 0.2, lambda: correlation_section(schema, real, synthetic, rc, sc))
    enc = Encoder(schema, real)  # rows are encoded only where a (subsampled) section needs them
    res["pmse"] = stage("pmse", 0.3, lambda: pmse_section(enc, real, synthetic, rng))
    res["mmd"] = stage("mmd", 0.4, lambda: mmd_section(enc, real, synthetic, rng))
    res["privacy"] = stage("privacy", 0.45, lambda: privacy_section(enc, real, synthetic, rng))
    res["ml"] = None
    if target is not None and len(real) < TSTR_MIN_ROWS:
        res["ml_skipped"] = f"TSTR needs at least {TSTR_MIN_ROWS} real rows, got {len(real)}"
    elif target is not None:
        tst = _normalise(schema, test) if test is not None else None
        sub = lambda f, s: progress(0.5 + 0.5 * f, s)  # noqa: E731
        res["ml"] = stage(
            "ml", 0.5, lambda: ml_section(schema, real, synthetic, tst, target, fast=fast, rng=rng, progress=sub)
        )
    ml = res["ml"]
    res["quality"] = quality_score(res["columns"], res["pairs"]["items"])
    res["summary"] = {
        "quality": res["quality"]["score"],
        "tvd_1way_mean": float(np.mean([c["tvd"] for c in res["columns"]])),
        "tvd_2way_mean": res["pairs"]["mean_tvd"],
        "wasserstein_normalized_mean": (
            float(np.mean([c["wasserstein_normalized"] for c in res["columns"] if "wasserstein" in c]))
            if any("wasserstein" in c for c in res["columns"])
            else None
        ),
        "association_diff_mean": res["correlation"]["mean_abs_difference"],
        "pmse_cart": res["pmse"]["cart"]["pmse"],
        "pmse_logistic": res["pmse"]["logistic"]["pmse"],
        "mmd2": res["mmd"]["mmd2"],
        "tstr": ml["mean"][ml["primary_metric"]]["synthetic"] if ml else None,
        "trtr": ml["mean"][ml["primary_metric"]]["real"] if ml else None,
        "exact_match_rate": res["privacy"]["exact_match_rate"],
    }
    res["readings"] = table_readings(res)
    res["timings"] = timings
    res["seconds"] = round(time.perf_counter() - t0, 3)
    progress(1.0, "evaluation done")
    return to_jsonable(res)


def _normalise(schema: Schema, frame: pd.DataFrame) -> pd.DataFrame:
    """Kept columns only, numeric as float, categorical as str (synthetic integers may be int64)."""
    return pd.DataFrame(
        {
            c.name: (
                frame[c.name].to_numpy(dtype=float)
                if c.is_numeric
                else frame[c.name].astype(str).to_numpy(dtype=object)
            )
            for c in schema.kept
        }
    )


def to_jsonable(obj: Any) -> Any:
    """numpy scalars to Python, NaN / inf to None (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj
