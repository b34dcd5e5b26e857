"""The audit table of docs/privacy-model.md: ``DPPORTAL_AUDIT=full python -m tests.privacy.table``
(``make audit`` runs it after the tests). One row per mechanism: the claim, the 99% lower bound on D/D',
the mutant's lower bound, whether the mutant is caught, and the time both audits took."""

from __future__ import annotations

import time

import pytest

from tests.privacy.cases import CASES
from tests.privacy.harness import DRAWS, PILOT


def rows() -> list[str]:
    out = []
    for name in sorted(CASES):
        case = CASES[name]
        t0 = time.perf_counter()
        lb, claim = case.run(seed=0)
        with pytest.MonkeyPatch.context() as mp:
            case.mutant(mp)
            lb_mutant, _ = case.run(seed=1)
        caught = "yes" if lb_mutant > claim.value else "NO"
        out.append(
            f"| {name} | {claim.kind} ≤ {claim.value:.3f} | {lb:.3f} | {lb_mutant:.3f} | {caught} | "
            f"{time.perf_counter() - t0:.1f} s |"
        )
    return out


if __name__ == "__main__":
    print(f"pilot {PILOT:,} and {DRAWS:,} fresh draws per side, 99% Clopper-Pearson bounds")
    print("| mechanism | claim | lower bound | mutant's lower bound | mutant caught | time |")
    print("|---|---|---|---|---|---|")
    for row in rows():
        print(row, flush=True)
