"""The release manifest: what was released and how, as plain JSON (no seeds, no raw data)."""

from __future__ import annotations

from mechanisms.io import SPREADSHEET_NOTE
from mechanisms.schema import Schema

from .models import Release
from .tables import add_to_manifest


def manifest(release: Release, *, for_owner: bool) -> dict:
    origin = release.origin()
    report = origin.report or {}
    data = {
        "manifest_version": 1,
        "release": release.pk,
        "title": release.title,
        "dataset": {"id": release.dataset_id, "name": release.dataset.name},
        "schema_sha256": release.schema_fingerprint,
        "schema": release.schema,
        "mechanism": release.mechanism,
        "parameters": report.get("parameters", release.params),
        "epsilon": origin.epsilon,
        "delta": origin.delta,
        "guarantee": report.get("guarantee"),
        "caveats": report.get("caveats", []),
        "neighbouring": report.get("neighbouring"),
        "privacy_details": report.get("details", {}),
        "privacy_events": report.get("events", []),  # typed: mechanisms.accounting.event_from_dict
        "noise_backend": report.get("noise_backend"),
        "rows": release.rows,
        "files": {
            "synthetic.csv": "exact values: category labels as confirmed, missing values written as "
            f"{Schema.from_stored(release.schema).missing_text!r}, numbers as declared",
            "synthetic-spreadsheet.csv": SPREADSHEET_NOTE,
        },
        "drawn_from_release": release.parent_id,
        "software_version": release.software_version,
    }
    add_to_manifest(data, release)  # the tables with error bars and their noise, when it has them
    if release.parent_id:
        data["note"] = (
            "more rows drawn from release %d's private summary: post-processing, no additional "
            "privacy cost" % release.parent_id
        )
    if for_owner:
        data["timestamps"] = {
            "requested": _iso(release.created_at),
            "started": _iso(release.started_at),
            "finished": _iso(release.finished_at),
        }
    else:  # analysts: day only, so no job duration can be read from it (timing side channel)
        data["timestamps"] = {"released_on": release.finished_at.date().isoformat() if release.finished_at else None}
        data = untimed(data)
    return data


def _iso(t):
    return t.isoformat() if t else None


# Keys that carry a duration (job or solver timings, e.g. "seconds_fit", "solve_seconds"): steward-only,
# at any depth of the report, so analysts cannot read a data-dependent running time.
TIMING_MARKERS = ("seconds", "duration", "elapsed")


def untimed(value):
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not any(m in str(k).lower() for m in TIMING_MARKERS)}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def public_report(release: Release, *, for_owner: bool) -> dict | None:
    report = release.origin().report or None
    if report is None or for_owner:
        return report
    return untimed(report)
