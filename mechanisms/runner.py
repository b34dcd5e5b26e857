"""One release, start to finish, for the CLI, the web worker and benchmarks."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from . import derive, registry
from .base import Mechanism, ProgressFn, format_bytes
from .noise import Noise
from .rules import draw_plan, sample_conforming
from .schema import Schema
from .source import TableSource


@dataclass
class Release:
    mechanism: Mechanism
    synthetic: pd.DataFrame
    seconds_fit: float
    seconds_sample: float

    def report(self) -> dict:
        cost = self.mechanism.privacy_cost()
        out = {
            "mechanism": self.mechanism.name,
            "parameters": self.mechanism.params,
            **cost.to_dict(),
            "noise_backend": self.mechanism.noise.backend,
            "mechanism_report": self.mechanism.report(),
        }
        schema = self.mechanism.release_schema
        computed = [
            f"{derive.solve(r.spec, schema).column} is computed on every row from the others by the public rule "
            f"{r.label}, not modelled (post-processing)"
            for r in schema.rules
            if r.kind == "derive"
        ]
        if computed:
            out["caveats"] = [*out.get("caveats", []), *computed]
        return out if self.mechanism.noise.secure else seeded_report(out)


SEEDED_GUARANTEE = "none (seeded: tests only)"


def seeded_report(out: dict) -> dict:
    """A release made with seeded noise carries no DP label: anyone with the seed can recompute the
    noise and subtract it. The guarantee the secure noise would give is kept under its own name."""
    return {
        **out,
        "guarantee": SEEDED_GUARANTEE,
        "differentially_private": False,
        "guarantee_meaning": "NOT differentially private: the noise was drawn from a seeded generator and "
        "can be reproduced from the seed; for tests only",
        "guarantee_with_secure_noise": out["guarantee"],
    }


def build(
    name: str,
    schema: Schema,
    *,
    epsilon,
    delta=0.0,
    params: dict | None = None,
    noise: Noise | None = None,
    progress: ProgressFn | None = None,
    n: int | None = None,
    memory_limit: int | None = None,
    rows: int | None = None,
) -> Mechanism:
    """Validate everything that can be validated WITHOUT reading data (for early 4xx answers).

    With the public row count ``n``, also the plan that depends on it (``Mechanism.check_plan``) and
    its memory estimate against ``memory_limit`` bytes (``Mechanism.check_memory``), so that neither a
    parameter error nor an allocation failure surfaces inside fit, after the budget is spent. With the
    requested synthetic ``rows`` too, the memory of one rejection round (:func:`mechanisms.rules.draw_plan`)
    is added to the fit's."""
    cls = registry.get(name)
    mech = cls(schema, epsilon=epsilon, delta=delta or 0.0, noise=noise, progress=progress, **(params or {}))
    if n is not None:
        mech.check_plan(int(n))
        mech.check_memory(int(n), memory_limit)
        if rows is not None and memory_limit is not None:
            check_draw_memory(mech, int(n), int(rows), memory_limit)
    return mech


def check_draw_memory(mech: Mechanism, n: int, rows: int, limit_bytes: int) -> None:
    """Refuse, before any budget is reserved, a request whose rejection rounds would not fit in memory
    beside the fitted model (the plan's largest round of candidate rows)."""
    plan = draw_plan(mech.release_schema, rows, rules_in_model=mech.rules_in_model)
    need = int(mech.planned_memory_bytes(n)) + plan.batch_bytes
    if plan.batch_bytes and need > limit_bytes:
        raise ValueError(
            f"drawing {rows:,} rows that satisfy the rules takes rounds of up to {plan.max_batch:,} candidate "
            f"rows ({format_bytes(plan.batch_bytes)}); with the fit that is about {format_bytes(need)}, more than "
            f"the memory limit per job of {format_bytes(limit_bytes)}: ask for fewer rows"
        )


def run(mech: Mechanism, source: TableSource, rows: int, *, on_data_access=None) -> Release:
    """fit (reads private data) then sample (post-processing).

    ``on_data_access`` is called just BEFORE fit: from that point on the job has touched private
    data, so its budget is spent whatever happens next (even a data-dependent failure reveals
    something); only a job that fails before this point may be refunded.
    """
    if on_data_access is not None:
        on_data_access()
    t0 = time.perf_counter()
    mech.fit(source)
    t1 = time.perf_counter()
    synthetic = sample_conforming(  # derived columns computed, rules hold; a cancel is heard between rounds
        mech.sample, mech.release_schema, rows, progress=lambda fraction, stage: mech.progress(1.0, stage)
    )
    t2 = time.perf_counter()
    return Release(mech, synthetic, t1 - t0, t2 - t1)
