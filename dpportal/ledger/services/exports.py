"""Reading the ledger: what remains, the entries as JSON and CSV, the timeline."""

from __future__ import annotations

import csv
import io

from ..models import Budget, LedgerEntry
from ..units import DELTA_UNIT, EPS_UNIT, canonical_json, format_units, units_to_float
from .verification import snapshot, verify_dataset

# Characters that make a spreadsheet treat a cell as a formula (OWASP CSV injection).
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0")


def _side(cap: int, spent: int, reserved: int, unit: int) -> dict:
    remaining = max(cap - spent - reserved, 0)
    pct = lambda x: round(100.0 * x / cap, 2) if cap else 0.0
    return {
        "cap": format_units(cap, unit),
        "spent": format_units(spent, unit),
        "reserved": format_units(reserved, unit),
        "remaining": format_units(remaining, unit),
        "cap_float": units_to_float(cap, unit),
        "spent_float": units_to_float(spent, unit),
        "reserved_float": units_to_float(reserved, unit),
        "remaining_float": units_to_float(remaining, unit),
        "spent_percent": pct(spent),
        "reserved_percent": pct(reserved),
        "remaining_percent": pct(remaining),
    }


def remaining(dataset) -> dict:
    """Caps, spent, reserved and remaining for epsilon and delta (exact strings and floats)."""
    try:
        b = dataset.budget
    except Budget.DoesNotExist:
        b = None
    if b is None:
        zero = _side(0, 0, 0, EPS_UNIT)
        return {"set": False, "epsilon": zero, "delta": _side(0, 0, 0, DELTA_UNIT), "summary": "no privacy budget set"}
    eps = _side(b.eps_cap, b.eps_spent, b.eps_reserved, EPS_UNIT)
    dlt = _side(b.delta_cap, b.delta_spent, b.delta_reserved, DELTA_UNIT)
    summary = f"epsilon {eps['remaining']} of {eps['cap']} left"
    if b.delta_cap:
        summary += f"; delta {dlt['remaining']} of {dlt['cap']} left"
    return {"set": True, "epsilon": eps, "delta": dlt, "summary": summary}


def remaining_text(dataset) -> str:
    """One line for the dataset list, e.g. 'epsilon 0.6 of 1 left'."""
    return remaining(dataset)["summary"]


def entries(dataset):
    return (
        LedgerEntry.objects.filter(dataset_id=dataset.pk)
        .select_related("resolution", "resolves", "release")
        .order_by("seq")
    )


def entries_json(dataset) -> dict:
    """The whole ledger of a dataset as plain data (the API's GET /api/datasets/{id}/ledger/)."""
    with snapshot():  # entries, counters and the chain check from the same commit
        chain = verify_dataset(dataset.pk)
        rows = list(entries(dataset))
        budget = remaining(type(dataset).objects.get(pk=dataset.pk))
    seqs = {e.pk: e.seq for e in rows}
    out = [_entry_dict(e, seqs) for e in rows]
    return {
        "dataset": dataset.pk,
        "name": getattr(dataset, "name", ""),
        "units": {"epsilon_per_1": EPS_UNIT, "delta_per_1": DELTA_UNIT},
        "budget": budget,
        "chain": chain.to_dict(),
        "entries": out,
    }


def _entry_dict(e: LedgerEntry, seqs: dict) -> dict:
    return {
        "seq": e.seq,
        "kind": e.kind,
        "state": e.state,
        "created_at": e.created_at.isoformat(),
        "user": e.username,
        "release": e.release_pk,
        "release_exists": e.release_id is not None,
        "mechanism": e.mechanism,
        "params": e.params,
        "epsilon_requested": e.epsilon,
        "delta_requested": e.delta,
        "epsilon": e.epsilon_display,
        "delta": e.delta_display,
        "epsilon_float": units_to_float(e.eps_units, EPS_UNIT),
        "delta_float": units_to_float(e.delta_units, DELTA_UNIT),
        "guarantee": e.guarantee,
        "resolves_seq": seqs.get(e.resolves_id),
        "note": e.note,
        "prev_hash": e.prev_hash,
        "hash": e.hash,
    }


CSV_COLUMNS = [
    "seq",
    "created_at",
    "kind",
    "state",
    "user",
    "release",
    "mechanism",
    "params",
    "epsilon_requested",
    "delta_requested",
    "epsilon",
    "delta",
    "guarantee",
    "resolves_seq",
    "note",
    "prev_hash",
    "hash",
]


def _cell(value) -> str:
    if isinstance(value, (dict, list)):
        value = canonical_json(value)
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_PREFIXES) and not _is_number(text):
        text = "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def entries_csv(dataset) -> str:
    """CSV export (string cells neutralized against spreadsheet formula injection)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    for row in entries_json(dataset)["entries"]:
        writer.writerow([_cell(row[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


def timeline(dataset) -> dict:
    """Cumulative spent epsilon/delta over time, for the plotly chart on the dataset page."""
    rows = (
        LedgerEntry.objects.filter(dataset_id=dataset.pk, kind__in=[LedgerEntry.SPEND, LedgerEntry.CAP])
        .order_by("seq")
        .values("seq", "kind", "created_at", "eps_units", "delta_units", "release_pk", "mechanism")
    )
    t, eps, dlt, labels, cap_t, cap_eps, cap_dlt = [], [], [], [], [], [], []
    total_e = total_d = 0
    for r in rows:
        if r["kind"] == LedgerEntry.CAP:
            cap_t.append(r["created_at"].isoformat())
            cap_eps.append(units_to_float(r["eps_units"], EPS_UNIT))
            cap_dlt.append(units_to_float(r["delta_units"], DELTA_UNIT))
            continue
        total_e += r["eps_units"]
        total_d += r["delta_units"]
        t.append(r["created_at"].isoformat())
        eps.append(units_to_float(total_e, EPS_UNIT))
        dlt.append(units_to_float(total_d, DELTA_UNIT))
        labels.append(f"release {r['release_pk']} ({r['mechanism']}): +{format_units(r['eps_units'], EPS_UNIT)}")
    return {
        "time": t,
        "epsilon": eps,
        "delta": dlt,
        "labels": labels,
        "cap_time": cap_t,
        "cap_epsilon": cap_eps,
        "cap_delta": cap_dlt,
    }
