"""Private category discovery: frequent labels are released, rare ones are not, and a label held by one
record is released with probability at most delta / 2 (the threshold's claim), a broken threshold caught."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms import categories
from mechanisms.noise import Noise


def frame(n_rare: int = 1) -> pd.DataFrame:
    return pd.DataFrame({"job": ["clerk"] * 600 + ["nurse"] * 300 + ["astronaut"] * n_rare + ["?"] * 50})


def test_frequent_labels_are_released_a_unique_one_and_missing_markers_are_not():
    out = categories.discover_categories(
        [frame()], ["job"], epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), markers=["?"]
    )
    assert out["columns"]["job"]["categories"] == ["clerk", "nurse"]
    assert out["threshold"] == 1 + int(np.ceil(2 * np.log(2e6)))  # 31 at epsilon 1 per column
    assert set(out["columns"]["job"]["noisy_counts"]) == {"clerk", "nurse"}


def test_codes_come_back_in_numeric_order_and_epsilon_and_delta_split_over_columns():
    codes = pd.DataFrame({"c": [str(v) for v in [10, 2, 33] * 200], "d": ["x"] * 600})
    out = categories.discover_categories(
        [codes], ["c", "d"], epsilon=2.0, delta=1e-6, noise=Noise.seeded(1), markers=[]
    )
    assert out["columns"]["c"]["categories"] == ["2", "10", "33"]
    assert out["epsilon_per_column"] == 1.0 and out["delta_per_column"] == 5e-7


def singleton_release_rate(threshold_fn, draws: int = 3000) -> float:
    """How often the one 'astronaut' is released at epsilon 1 and delta 0.2 (claim: at most 0.1)."""
    hits = 0
    real = categories.threshold
    categories.threshold = threshold_fn
    try:
        for seed in range(draws):
            out = categories.discover_categories(
                [frame()], ["job"], epsilon=1.0, delta=0.2, noise=Noise.seeded(seed), markers=["?"]
            )
            hits += "astronaut" in out["columns"]["job"]["categories"]
    finally:
        categories.threshold = real
    return hits / draws


@pytest.mark.slow
def test_a_singleton_label_is_released_at_most_delta_over_two_and_a_broken_threshold_is_caught():
    # discrete Laplace of scale 2 above 5: about 0.05; the claim is delta / 2 = 0.1. 3,000 draws: sd 0.004.
    assert singleton_release_rate(categories.threshold) <= 0.1
    broken = lambda *, scale, delta: 2  # noqa: E731  (a threshold that ignores delta)
    assert singleton_release_rate(broken, draws=1000) > 0.2


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="0 < delta < 1"):
        categories.discover_categories([frame()], ["job"], epsilon=1.0, delta=0.0, noise=Noise.seeded(0), markers=[])


def test_one_record_cannot_trip_the_label_cap_and_the_cap_applies_to_the_released_labels(monkeypatch):
    # a free-text column: every label once; counted and noised, none released, no error (the job's outcome
    # does not depend on one record), in chunks so the counts are merged on the way
    many = pd.DataFrame({"note": [str(i) for i in range(3000)] + ["x"] * 200})
    monkeypatch.setattr(categories, "MAX_LABELS", 3000)
    monkeypatch.setattr(categories, "MERGE_ENTRIES", 500)
    chunks = [many.iloc[i : i + 400] for i in range(0, len(many), 400)]
    out = categories.discover_categories(chunks, ["note"], epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), markers=[])
    assert out["columns"]["note"]["categories"] == ["x"] and out["columns"]["note"]["noisy_counts"]["x"] > 150
    monkeypatch.setattr(categories, "MAX_LABELS", 1)  # more released labels than the cap: reported, not refused
    out = categories.discover_categories([frame()], ["job"], epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), markers=[])
    assert out["columns"]["job"]["too_many"] and out["columns"]["job"]["categories"] == []
    assert categories.column_from_discovery("job", out["columns"]["job"]) is None


def test_missing_cells_are_one_more_count_of_the_histogram_reported_when_they_clear_the_threshold():
    out = categories.discover_categories(
        [frame()], ["job"], epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), markers=["?"]
    )
    job = out["columns"]["job"]
    assert job["missing"] and abs(job["missing_noisy_count"] - 50) < 20  # 50 "?" cells, scale 2
    col = categories.column_from_discovery("job", job)
    assert col.categories == ("clerk", "nurse", "(missing)", "(other)") and col.other == "(other)"
    few = pd.DataFrame({"job": ["clerk"] * 600 + ["?"]})
    job = categories.discover_categories([few], ["job"], epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), markers=["?"])
    col = categories.column_from_discovery("job", job["columns"]["job"])
    assert col.categories == ("clerk", "(other)")  # one missing cell is not released


def test_a_marker_named_as_a_label_of_a_column_is_counted_as_a_label_there():
    codes = pd.DataFrame({"origin": ["NA"] * 300 + ["Cuban"] * 300 + ["?"] * 5})
    kw = dict(epsilon=1.0, delta=1e-6, markers=["?", "NA"])
    named = categories.discover_categories([codes], ["origin"], noise=Noise.seeded(0), labels={"origin": ["NA"]}, **kw)
    assert named["columns"]["origin"]["categories"] == ["Cuban", "NA"] and not named["columns"]["origin"]["missing"]
    plain = categories.discover_categories([codes], ["origin"], noise=Noise.seeded(0), **kw)
    assert plain["columns"]["origin"]["categories"] == ["Cuban"] and plain["columns"]["origin"]["missing"]


def census_markers() -> pd.DataFrame:
    """'?' writes missing values across the file; 'NA' is a code of hispanic origin (76 rows), and a column
    with no 'NA' at all."""
    n = 2000
    state = np.array(["CA", "NY", "TX", "?"])[np.arange(n) % 4]
    origin = np.array(["Mexican"] * 1200 + ["NA"] * 76 + ["None"] * 664 + ["?"] * 60)
    job = np.array(["clerk", "nurse", "?", ""])[np.arange(n) % 4]
    return pd.DataFrame({"state": state, "origin": origin, "job": job})


def test_auto_marker_labels_come_from_the_noisy_counts_alone():
    out = categories.discover_categories(
        [census_markers()],
        ["state", "origin", "job"],
        epsilon=3.0,
        delta=1e-6,
        noise=Noise.seeded(0),
        markers=["", "?", "NA"],
        labels="auto",
    )
    cols = out["columns"]
    assert out["missing_marker"] == "?"  # the marker with the largest noisy count over the columns
    assert "NA" in cols["origin"]["categories"] and cols["origin"]["marker_labels"] == ["NA"]
    assert "?" not in cols["origin"]["categories"] and cols["origin"]["missing"]
    assert cols["state"]["marker_labels"] == [] and cols["state"]["missing"]
    assert cols["job"]["missing"] and cols["job"]["categories"] == ["clerk", "nurse"]  # "?" and "" both missing
    col = categories.column_from_discovery("origin", cols["origin"])
    assert "NA" in col.categories
    # a function of the noisy counts only: the same noise on a file whose "NA" rows were "?" keeps no label
    swapped = census_markers().replace({"origin": {"NA": "?"}})
    again = categories.discover_categories(
        [swapped],
        ["state", "origin", "job"],
        epsilon=3.0,
        delta=1e-6,
        noise=Noise.seeded(0),
        markers=["", "?", "NA"],
        labels="auto",
    )
    assert again["columns"]["origin"]["marker_labels"] == []
    with pytest.raises(ValueError, match="labels must be"):
        categories.discover_categories(
            [census_markers()], ["state"], epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), markers=["?"], labels="x"
        )
