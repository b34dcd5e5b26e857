"""Rejection generation is bounded: seven categorical columns equal in every row, six hierarchy rules
tying them together, and a mechanism that draws the columns independently (baseline) put about one
candidate in a million inside the rules. Generation measures the acceptance rate on a pilot round and
stops at once with a message naming it (instead of 30 rounds of 20 x rows candidates), hears a cancel
between rounds, and the estimate and the memory plan count the rejection's draws from the schema and
the rules alone, so the release is routed to the synthesis queue (or refused before any reservation)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from dpportal.ledger import services as ledger
from dpportal.releases import services
from dpportal.releases.models import Release
from dpportal.releases.services import estimates
from mechanisms import rules
from mechanisms.noise import Noise
from mechanisms.rules import RejectionError, draw_plan, sample_conforming
from mechanisms.runner import build, run
from mechanisms.schema import Schema
from mechanisms.source import TableSource
from tests.personas import make_dataset

LEVELS = [f"v{k}" for k in range(10)]
NAMES = [f"c{i}" for i in range(7)]


def equal_columns_schema() -> dict:
    return {
        "columns": [{"name": n, "kind": "categorical", "categories": LEVELS} for n in NAMES],
        "rules": [
            {"hierarchy": {"child": a, "parent": b, "map": {v: v for v in LEVELS}}} for a, b in zip(NAMES, NAMES[1:])
        ],
    }


def equal_columns_csv(n: int = 300) -> str:
    rng = np.random.default_rng(0)
    values = rng.choice(LEVELS, n)
    return ",".join(NAMES) + "\n" + "".join(",".join([v] * len(NAMES)) + "\n" for v in values)


class Independent:
    """A sampler that draws every column independently and uniformly, counting what it drew."""

    def __init__(self, schema: Schema, seed: int = 0):
        self.schema, self.rng, self.calls, self.drawn = schema, np.random.default_rng(seed), 0, 0

    def __call__(self, k: int) -> pd.DataFrame:
        self.calls += 1
        self.drawn += k
        cats = np.asarray(LEVELS, dtype=object)
        return pd.DataFrame({c.name: cats[self.rng.integers(0, len(cats), k)] for c in self.schema.kept})


def test_a_hopeless_acceptance_rate_stops_after_the_pilot_round_naming_it():
    schema = Schema.from_dict(equal_columns_schema())
    draw = Independent(schema)
    t0 = time.perf_counter()
    with pytest.raises(RejectionError, match=r"almost no probability.*0 of 20,000 drawn rows.*stopped early"):
        sample_conforming(draw, schema, 1_000_000)
    assert draw.calls == 1 and draw.drawn == rules.PILOT_ROWS
    assert time.perf_counter() - t0 < 5


def test_rejection_stops_between_rounds_when_the_caller_cancels():
    schema = Schema.from_dict(
        {"columns": equal_columns_schema()["columns"], "rules": [{"forbid": {"c0": LEVELS[:7]}}]}
    )  # accepts 30% of independent draws: several rounds for 100,000 rows

    class Cancel(Exception):
        pass

    def progress(fraction, stage):
        assert "drawing rows that satisfy the rules" in stage
        raise Cancel

    draw = Independent(schema)
    with pytest.raises(Cancel):
        sample_conforming(draw, schema, 100_000, progress=progress)
    assert draw.calls == 1  # the pilot round ran, the next did not


def test_a_feasible_rate_finishes_within_the_draw_limit():
    schema = Schema.from_dict({"columns": equal_columns_schema()["columns"], "rules": [{"forbid": {"c0": LEVELS[:7]}}]})
    draw = Independent(schema)
    out = sample_conforming(draw, schema, 50_000)
    assert len(out) == 50_000 and not rules.violations(schema, out).any()
    assert draw.drawn <= rules.draw_limit(50_000) and draw.drawn < 4 * 50_000


def test_the_baseline_release_fails_in_seconds_with_the_message():
    schema = Schema.from_dict(equal_columns_schema())
    raw = pd.read_csv(pd.io.common.StringIO(equal_columns_csv()), dtype=str)
    mech = build("baseline", schema, epsilon=1.0, noise=Noise.seeded(1), n=len(raw))
    t0 = time.perf_counter()
    with pytest.raises(RejectionError, match="stopped early"):
        run(mech, TableSource.from_frame(schema, raw), 1_000_000)
    assert time.perf_counter() - t0 < 10


def test_the_draw_plan_counts_the_rejection_from_the_schema_alone():
    schema = Schema.from_dict(equal_columns_schema())
    plan = draw_plan(schema, 1_000_000)
    assert plan.public_acceptance < 1e-4  # uniform independent records: about 1e-6
    assert plan.expected_draws == plan.max_draws == rules.draw_limit(1_000_000)
    assert plan.extra_seconds > 100 and plan.batch_bytes > 0
    assert draw_plan(schema, 1_000_000, rules_in_model=True).extra_draws == 0
    free = Schema.from_dict({**equal_columns_schema(), "rules": []})
    assert draw_plan(free, 1_000_000).extra_seconds == 0 and draw_plan(free, 1_000_000).batch_bytes == 0


def test_the_release_is_routed_to_the_synthesis_queue(personas, settings, django_capture_on_commit_callbacks):
    ds = make_dataset(personas.owner, text=equal_columns_csv(), schema=equal_columns_schema())
    req = services.ReleaseRequest("baseline", "0.5", "0", {}, 1_000_000)
    with django_capture_on_commit_callbacks(execute=False):
        release = services.plan_release(ds, personas.owner, req)
    assert release.queue == Release.QUEUE_SYNTHESIS
    assert release.estimate_seconds > settings.DPPORTAL_FAST_JOB_SECONDS
    small = estimates.run_seconds("baseline", ds.n_rows, ds.confirmed_schema(), {}, rows=10)
    assert small is not None and small <= settings.DPPORTAL_FAST_JOB_SECONDS


def test_the_memory_plan_refuses_rounds_over_the_limit_before_reserving(personas, settings):
    ds = make_dataset(personas.owner, text=equal_columns_csv(), schema=equal_columns_schema())
    settings.DPPORTAL_MAX_JOB_MEMORY_MB = 256  # one round of 1.1M candidates x 7 columns needs ~440 MiB
    before = ledger.remaining(ds)
    with pytest.raises(services.ReleaseRequestError, match="satisfy the rules takes rounds of up to"):
        services.plan_release(ds, personas.owner, services.ReleaseRequest("baseline", "0.5", "0", {}, 1_000_000))
    assert ledger.remaining(ds) == before and not Release.objects.filter(dataset=ds).exists()


def test_a_release_hears_its_cancel_between_rejection_rounds():
    schema = Schema.from_dict({"columns": equal_columns_schema()["columns"], "rules": [{"forbid": {"c0": LEVELS[:7]}}]})
    raw = pd.read_csv(pd.io.common.StringIO(equal_columns_csv()), dtype=str)
    stages = []

    class Cancelled(Exception):
        pass

    def progress(fraction, stage):
        stages.append(stage)
        if stage.startswith("drawing rows that satisfy the rules"):
            raise Cancelled

    mech = build("baseline", schema, epsilon=1.0, noise=Noise.seeded(1), n=len(raw), progress=progress)
    with pytest.raises(Cancelled):
        run(mech, TableSource.from_frame(schema, raw), 100_000)
    assert stages[-1] == "drawing rows that satisfy the rules: " + stages[-1].split(": ")[1]
