"""The tables of a release with error bars: ``tables.json`` beside the synthetic CSV.

The worker writes it when a release whose mechanism measured noisy marginals finishes (baseline, MST and AIM:
:func:`mechanisms.tables.measured_tables`, read from the fitted object, since the stored summaries do not
keep every noisy count; the ``crosstabs`` release: its published tables). It is post-processing of what the
release already paid for: no ledger entry. A failure to build it is logged and the release finishes without
it. A draw of more rows has no tables of its own: its original release's are the ones shown and served.

The file follows the tables' JSON contract (``mechanisms/tables/cells.py``); this module reads it back for the
pages, the API and the manifest, and writes a table as CSV.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path, PurePosixPath
from typing import Iterator

from mechanisms.io import neutralize_cell

from ..models import Release

log = logging.getLogger(__name__)

TABLES_FILE = "tables.json"
PAGE_CELLS = 100  # cells per page of a table's page (the chart and the table); the downloads hold them all
CELL_FIELDS = ("noisy", "estimate", "se", "lo", "hi")
NOISE_NAMES = {
    "discrete_gaussian": "discrete Gaussian",
    "discrete_laplace": "discrete Laplace",
    "gaussian": "Gaussian",
}
COST = "none: post-processing of the release's own noisy measurements"


# -- the worker side ------------------------------------------------------------------------------


def build(mech) -> dict | None:
    """The tables of a fitted mechanism in the contract's form, or None when it measured no marginals."""
    from mechanisms.tables import TablesRelease, measured_tables, tables_json

    if isinstance(mech, TablesRelease):
        return tables_json(mech)
    try:
        return measured_tables(mech)
    except ValueError:  # a mechanism that keeps no noisy marginal measurements
        return None


def write(mech, directory: Path) -> bool:
    """Write ``tables.json`` into a release's output folder (before it is published). Never raises: a
    failure is logged and the release goes on without tables."""
    path = Path(directory) / TABLES_FILE
    try:
        data = build(mech)
        if data is None:
            return False
        data.setdefault("cost", COST)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, allow_nan=False, separators=(",", ":"))
        return True
    except Exception:  # noqa: BLE001 - tables are an extra: the release itself must finish
        log.exception("tables of mechanism %s not written", getattr(mech, "name", "?"))
        path.unlink(missing_ok=True)
        return False


# -- reading them back ----------------------------------------------------------------------------


def key(release: Release) -> str | None:
    """The storage key of the tables a release shows (a draw: its original release's), or None."""
    origin = release.origin()
    if origin.status != Release.DONE or not origin.output_file:
        return None
    return (PurePosixPath(origin.output_file).parent / TABLES_FILE).as_posix()


def path(release: Release) -> Path | None:
    """The tables file on this machine (fetched from the object store when missing), or None."""
    from dpportal import storage

    k = key(release)
    if k is None:
        return None
    try:
        p = storage.local_path(k)
    except FileNotFoundError:
        return None
    return p if p.is_file() else None


def load(release: Release) -> dict | None:
    """The release's tables (the contract's JSON), or None when it has none. Read once per object."""
    cached = getattr(release, "_tables_data", False)
    if cached is not False:
        return cached
    p = path(release)
    data = None
    if p is not None:
        try:
            with open(p, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):  # an unreadable file: the release is shown without its tables
            log.exception("tables of release %s unreadable", release.pk)
    release._tables_data = data
    return data


def noise_text(noise: dict) -> str:
    """'discrete Gaussian noise, sigma 3.2' or 'discrete Laplace noise, scale 2'."""
    name = NOISE_NAMES.get(noise.get("distribution"), str(noise.get("distribution", "unknown")))
    if "sigma" in noise:
        return f"{name} noise, σ = {_short_number(noise['sigma'])}"
    if "scale" in noise:
        return f"{name} noise, scale {_short_number(noise['scale'])}"
    return f"{name} noise"


def _short_number(x) -> str:
    try:
        return f"{float(x):.4g}"
    except (TypeError, ValueError):
        return str(x)


def summaries(data: dict | None) -> list[dict]:
    """One line per table: index, columns, number of cells, noise (and its words)."""
    return [
        {
            "index": k,
            "columns": t["columns"],
            "cells": len(t["cells"]),
            "noise": t["noise"],
            "noise_text": noise_text(t["noise"]),
            "interval": t["interval"],
        }
        for k, t in enumerate((data or {}).get("tables", []))
    ]


def table(data: dict | None, index: int) -> dict | None:
    """The table at ``index`` with the release's facts beside it, or None."""
    tables = (data or {}).get("tables", [])
    if not 0 <= index < len(tables):
        return None
    facts = {k: v for k, v in data.items() if k != "tables"}
    return {"index": index, **tables[index], **{k: v for k, v in facts.items() if k not in tables[index]}}


def csv_pieces(t: dict) -> Iterator[str]:
    """The table as CSV, one piece per block of rows: a column per table column (cell labels starting like a
    formula get a leading ', as in the spreadsheet-safe CSV), then noisy, estimate, se, lo and hi."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([neutralize_cell(c) for c in t["columns"]] + list(CELL_FIELDS))
    for i, cell in enumerate(t["cells"], 1):
        writer.writerow(
            [neutralize_cell(str(v)) for v in cell["values"]]
            + ["" if cell.get(f) is None else repr(float(cell[f])) for f in CELL_FIELDS]
        )
        if i % 1000 == 0:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def file_name(release: Release, index: int, ext: str) -> str:
    origin = release.origin()
    return f"dpportal-release-{origin.pk}-table-{index}.{ext}"


def add_to_manifest(manifest: dict, release: Release) -> None:
    """The manifest's lines about the tables: each table's columns, cells and noise (nothing when none)."""
    data = load(release)
    if data is None:
        return
    keys = ("index", "columns", "cells", "noise", "interval")
    manifest["tables"] = [{k: s[k] for k in keys} for s in summaries(data)]
    manifest["tables_cost"] = data.get("cost", COST)
    manifest.setdefault("files", {})[TABLES_FILE] = (
        "the tables with error bars: every cell's noisy count, estimate, standard error and 95% interval, and the "
        "noise of each table (docs/mechanisms/tables.md)"
    )
    if release.is_draw:
        manifest["tables_from_release"] = release.parent_id
