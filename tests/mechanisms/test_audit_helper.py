"""The audit helper itself: quiet on a correct Laplace count, loud on a mutant with a smaller scale."""

from __future__ import annotations

import numpy as np

from mechanisms.noise import Noise
from tests.audit import audit_scalar, clopper_pearson


def test_clopper_pearson_brackets_the_proportion():
    lo, hi = clopper_pearson(50, 100, 0.025)
    assert 0.38 < lo < 0.5 < hi < 0.62


def _count_release(scale_factor: float, seed: int):
    noise = Noise.seeded(seed)
    eps = 1.0

    # one count, replace-one sensitivity 1 for a single cell count (the record moves in or out)
    def draw(true_count):
        return lambda k: noise.laplace_int(np.full(k, true_count), scale=scale_factor / eps)

    return draw(10), draw(11)


def test_audit_passes_a_correct_mechanism_and_catches_a_mutant():
    d, d2 = _count_release(1.0, seed=1)
    assert audit_scalar(d, d2) <= 1.0
    d, d2 = _count_release(0.5, seed=2)  # mutant: half the noise, really 2-DP
    assert audit_scalar(d, d2) > 1.0
