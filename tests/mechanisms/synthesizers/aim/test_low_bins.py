"""AIM's low bins (mechanisms/synthesizers/aim/): rows drawn in a numeric column's noise-level bins are spread among
them by the bins' estimates fitted rising then falling, so an empty far tail gets (next to) no rows; drawing the
model's bins as estimated (the broken variant) is caught putting rows there. The shares survive the summary."""

from __future__ import annotations


from mechanisms.noise import Noise
from mechanisms.runner import build
from tests.mechanisms.npz import through_npz
from tests.mechanisms.synthesizers.mst.test_merged_values import N, SCHEMA, _raw
from mechanisms.source import TableSource

PARAMS = {"max_rounds": 6, "iters": 300, "final_iters": 300}


def test_low_bins_keep_the_empty_tail_empty_and_the_model_as_estimated_is_caught():
    real = _raw()["amount"].astype(float)
    mech = build("aim", SCHEMA, epsilon=1.0, delta=1e-6, params=PARAMS, noise=Noise(secure=False, seed=1), n=N)
    mech.fit(TableSource.from_frame(SCHEMA, _raw()))
    assert 0 in mech.low_bins  # the amount column has noise-level bins
    out = mech.sample(N)["amount"].astype(float)
    assert (out > 10_000).mean() < 0.002 and abs(out.mean() / real.mean() - 1) < 0.5
    loaded = type(mech).from_summary(
        SCHEMA, through_npz(mech.summary()), epsilon=1.0, delta=1e-6, params=PARAMS, noise=Noise(secure=False, seed=2)
    )
    assert sorted(loaded.low_bins) == sorted(mech.low_bins)
    assert (loaded.sample(N)["amount"].astype(float) > 10_000).mean() < 0.002

    mech.low_bins = {}  # broken variant: the model's noise-level tail bins drawn as estimated
    assert (mech.sample(N)["amount"].astype(float) > 10_000).mean() > 0.005
