"""Run-time estimates from PUBLIC inputs only: the row count n (public under replace-one), the
confirmed schema and the mechanism's parameters. Nothing here reads data, so an estimate is free to
show before a release is submitted (and to route short jobs to the fast queue).

Each mechanism has a work measure ``w`` (what its cost grows with, read from its algorithm) and a
line ``seconds = a + b * w`` per job thread, fitted by ``benchmarks/calibration/runtime_calibration.py`` on the
shared datasets (predicted vs measured: docs/operations.md). The coefficients are for one thread of
the 2-core development machine; the estimate is a guide (the goal is within a factor of 2), never a
limit.

Each mechanism declares its line, its work measure and (where its time follows a data-dependent path)
its measured range as ``runtime_model`` in its package's ``guide.py`` (a :class:`RuntimeModel`). The
default work measure is one pass over the table per column, ``n d``; a mechanism not calibrated yet
declares :data:`UNCALIBRATED`, a generous line whose 60 s floor keeps it on the synthesis queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..schema import Schema

# Not calibrated yet (anything new): a floor of 60 s keeps them off the fast queue, where a
# fit that runs for minutes would hold up draws; the estimate says it is not calibrated.
FALLBACK = (60.0, 5.0e-5)
DRAW = (0.5, 1.0e-6)  # a draw of more rows: sampling only (post-processing), ``rows d``
# Tables wider than any release a ranged mechanism was calibrated on: an extrapolation in the columns.
WIDE_RANGE = (0.1, 10.0)
# The low end of a Private-PGM mechanism's range (its RuntimeModel.range_reason says why).
WARM_WORKER = (
    "a worker that has run it before reuses its compiled Private-PGM programs and takes a fraction of "
    "a fresh worker's time"
)


def param_or_default(params: dict, name: str, default):
    value = params.get(name)
    return default if value in (None, "") else value


def rows_times_columns(
    *, n: int, schema: Schema, params: dict, epsilon: float | None = None, delta: float | None = None
) -> float:
    """One pass over the table per column: ``n d``."""
    return float(n * max(1, len(schema.kept)))


@dataclass(frozen=True)
class RuntimeModel:
    """A mechanism's run time per job thread: ``seconds = a + b * work(n=, schema=, params=, epsilon=,
    delta=)``, fitted by ``benchmarks/calibration/runtime_calibration.py``. ``range``: the measured / predicted factors
    on its calibration releases where the time follows a data-dependent path, with why and the widest
    table calibrated (``calibrated_columns``); ``threads``: the fit uses the job's threads (the slope is
    divided by sqrt(min(threads, 2)))."""

    a: float
    b: float
    work: Callable[..., float] = rows_times_columns
    calibrated: bool = True
    range: tuple[float, float] | None = None
    range_reason: str = ""
    calibrated_columns: int = 0
    threads: bool = False


UNCALIBRATED = RuntimeModel(*FALLBACK, calibrated=False)


def model_of(mechanism: str) -> RuntimeModel:
    """The registered mechanism's run-time model; :data:`UNCALIBRATED` for any other name."""
    from .. import registry  # the registry imports the mechanisms, which import this module

    return registry.get(mechanism).runtime_model if mechanism in registry.names() else UNCALIBRATED


def coefficients() -> dict[str, tuple[float, float]]:
    """(a, b) of every calibrated mechanism (what ``benchmarks/calibration/runtime_calibration.py`` refits)."""
    from .. import registry

    models = {name: registry.get(name).runtime_model for name in registry.names()}
    return {name: (m.a, m.b) for name, m in models.items() if m.calibrated}


@dataclass(frozen=True)
class Estimate:
    """Predicted seconds of one release (fit + sample) and the work measure it came from; ``low`` and
    ``high`` bound it where the time follows a data-dependent path (:func:`time_range`)."""

    mechanism: str
    seconds: float
    work: float
    calibrated: bool = True
    low: float | None = None
    high: float | None = None
    range_reason: str = ""

    def to_dict(self) -> dict:
        text = describe_range(self.low, self.high) if self.low is not None else describe_seconds(self.seconds)
        text += "" if self.calibrated else " (rough: not calibrated for this mechanism)"
        out = {
            "seconds": round(self.seconds, 1),
            "text": text,
            "calibrated": self.calibrated,
            "basis": "public inputs only (n, columns, parameters); see docs/operations.md",
        }
        if self.low is not None:
            out.update(low_seconds=round(self.low, 1), high_seconds=round(self.high, 1), range_reason=self.range_reason)
        return out


def time_range(mechanism: str, seconds: float, columns: int) -> tuple[float, float, str] | None:
    """(low, high, why) for a mechanism whose time cannot be bounded from public inputs, else None: the
    central estimate times the factors measured on its calibration releases, wider for a table with more
    columns than any of them."""
    model = model_of(mechanism)
    if model.range is None:
        return None
    lo, hi = model.range
    why = model.range_reason
    widest = model.calibrated_columns
    if columns > widest:
        lo, hi = WIDE_RANGE
        why += f"; this table has {columns} columns, more than any release it was measured on ({widest})"
    else:
        why += f"; the measured releases took {lo:g}x to {hi:g}x of the central estimate"
    return seconds * lo, seconds * hi, why


def work(
    mechanism: str, *, n: int, schema: Schema, params: dict, epsilon: float | None = None, delta: float | None = None
) -> float:
    """The mechanism's work measure (its RuntimeModel) for a table of ``n`` rows."""
    if n < 0:
        raise ValueError(f"n must be a non-negative row count, got n={n!r}")
    return model_of(mechanism).work(n=n, schema=schema, params=params, epsilon=epsilon, delta=delta)


def estimate(
    mechanism: str,
    *,
    n: int,
    schema: Schema,
    params: dict | None = None,
    threads: int = 1,
    epsilon: float | None = None,
    delta: float | None = None,
) -> Estimate:
    """Predicted wall seconds of one release on ``threads`` job threads (only a model with ``threads`` set
    has its slope divided: the others run on one thread). ``epsilon`` and ``delta`` matter to a work
    measure that grows with the budget; without them it assumes epsilon 1."""
    params = params or {}
    w = work(mechanism, n=n, schema=schema, params=params, epsilon=epsilon, delta=delta)
    model = model_of(mechanism)
    speedup = min(max(int(threads), 1), 2) ** 0.5 if model.threads else 1.0
    seconds = model.a + model.b * w / speedup
    span = time_range(mechanism, seconds, len(schema.kept))
    low, high, why = span if span else (None, None, "")
    return Estimate(mechanism, seconds, w, calibrated=model.calibrated, low=low, high=high, range_reason=why)


def estimate_draw(rows: int, d: int) -> Estimate:
    """A draw of ``rows`` more rows over ``d`` kept columns from a stored summary (no fit)."""
    a, b = DRAW
    w = float(max(rows, 0) * max(d, 1))
    return Estimate("draw", a + b * w, w)


def describe_seconds(seconds: float) -> str:
    """'about 40 s', 'about 3 min', 'about 1.5 h' (rounded: an estimate, not a promise)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be finite and non-negative, got seconds={seconds!r}")
    if seconds < 5:
        return "a few seconds"
    if seconds < 90:
        return f"about {round(seconds, -1 if seconds >= 20 else 0):.0f} s"
    if seconds < 5400:
        return f"about {round(seconds / 60):.0f} min"
    return f"about {seconds / 3600:.1f} h"


def describe_range(low: float, high: float) -> str:
    """'between 3 min and 30 min' (each end rounded like :func:`describe_seconds`)."""

    def short(seconds: float) -> str:
        return describe_seconds(seconds).replace("about ", "")

    low_text, high_text = short(low), short(high)
    return describe_seconds(high) if low_text == high_text else f"between {low_text} and {high_text}"
