"""Small tables and helpers shared by the web tests."""

from __future__ import annotations

import io


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
