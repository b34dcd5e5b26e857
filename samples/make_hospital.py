"""Write samples/hospital.csv: 3,000 made-up hospital stays where discharged = admitted + stay_days.

Deterministic (fixed seed): ``.venv/bin/python samples/make_hospital.py`` rewrites the file byte for byte.
Admissions are spread over 2019-2023 with half as many on weekends; each ward has its own stay length
(a gamma-Poisson mixture, 0 to 15 days, mean about 4); the discharge date is the admission date plus the
stay, in every row. Dates are written ``%d/%m/%Y``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 3000
SEED = 20190101
WARDS = {  # ward: (share of admissions, mean stay in days)
    "General medicine": (0.35, 4.5),
    "Surgery": (0.2, 5.0),
    "Maternity": (0.15, 2.0),
    "Orthopaedics": (0.15, 4.0),
    "Cardiology": (0.15, 5.0),
}
FIRST, LAST = np.datetime64("2019-01-01"), np.datetime64("2023-12-31")
MAX_STAY = 15
OUT = Path(__file__).resolve().parent / "hospital.csv"


def make(rows: int = ROWS, seed: int = SEED) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = list(WARDS)
    ward = rng.choice(len(names), rows, p=[WARDS[w][0] for w in names])
    mean = np.array([WARDS[w][1] for w in names])[ward]
    stay = np.minimum(rng.poisson(rng.gamma(2.0, mean / 2.0)), MAX_STAY)
    days = int((LAST - FIRST).astype(int)) + 1
    pool = FIRST + rng.integers(0, days, 3 * rows)
    weekend = np.isin(pool.astype("datetime64[D]").view("int64") % 7, (2, 3))  # 1970-01-01 was a Thursday
    keep = ~weekend | (rng.random(pool.size) < 0.5)
    admitted = pool[keep][:rows]
    discharged = admitted + stay.astype("timedelta64[D]")
    fmt = lambda d: pd.DatetimeIndex(d.astype("datetime64[ns]")).strftime("%d/%m/%Y")  # noqa: E731
    return pd.DataFrame(
        {
            "admitted": fmt(admitted),
            "discharged": fmt(discharged),
            "ward": np.asarray(names, dtype=object)[ward],
            "stay_days": stay,
        }
    )


if __name__ == "__main__":
    make().to_csv(OUT, index=False)
    print(f"wrote {OUT} ({ROWS:,} rows)")
