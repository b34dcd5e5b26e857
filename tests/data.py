"""Small tables and helpers shared by the web tests."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

SMALL_CSV = (
    "age,city,income,note\n"
    "34,Paris,52000.5,ok\n"
    '51,Lyon,61000,=HYPERLINK("x")\n'
    "29,Paris,38000,fine\n"
    "42,Nice,45000.25,?\n"
    "67,Lyon,30500,good\n"
    "38,Paris,,ok\n"
)

SMALL_SCHEMA = {
    "missing_markers": ["", "?", "NA"],
    "columns": [
        {"name": "age", "kind": "integer", "lower": 18, "upper": 90, "bins": 8},
        {"name": "city", "kind": "categorical", "categories": ["Paris", "Lyon", "Nice", "other"], "other": "other"},
        {"name": "income", "kind": "continuous", "lower": 0, "upper": 100000, "bins": 10, "fill": 0},
        {"name": "note", "kind": "excluded"},
    ],
}


def csv_file(text: str | bytes, name: str = "data.csv") -> io.BytesIO:
    f = io.BytesIO(text.encode() if isinstance(text, str) else text)
    f.name = name
    return f


def stored_files(root) -> list[str]:
    """Every file under private storage except the scratch folder's directory itself."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


EDUCATION = ["school", "college", "degree", "doctorate"]


def labelled_people(n: int, seed: int) -> pd.DataFrame:
    """A table whose label (income) depends strongly on two columns (education, hours) and not on the
    others (region, age); CSV strings, as uploaded."""
    rng = np.random.default_rng(seed)
    education = rng.choice(EDUCATION, n, p=[0.4, 0.3, 0.2, 0.1])
    hours = rng.integers(10, 70, n)
    logit = -3 + 2 * pd.Index(EDUCATION).get_indexer(education) + 0.08 * (hours - 40)
    income = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "high", "low")
    return pd.DataFrame(
        {
            "education": education,
            "hours": hours.astype(str),
            "region": rng.choice(["north", "south", "east", "west"], n),
            "age": rng.integers(18, 90, n).astype(str),
            "income": income,
        }
    )


LABELLED_SCHEMA = {
    "missing_markers": [""],
    "columns": [
        {"name": "education", "kind": "categorical", "categories": EDUCATION},
        {"name": "hours", "kind": "integer", "lower": 10, "upper": 69, "bins": 60},
        {"name": "region", "kind": "categorical", "categories": ["north", "south", "east", "west"]},
        {"name": "age", "kind": "integer", "lower": 18, "upper": 89, "bins": 72},
        {"name": "income", "kind": "categorical", "categories": ["high", "low"]},
    ],
}
