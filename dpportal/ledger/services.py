"""Ledger operations: reserve -> settle | refund, caps, verification, exports.

The only ways budget moves. Each operation runs in one transaction that FIRST writes the
dataset's ``Budget`` row (the conditional UPDATE of ``reserve``, or a no-op UPDATE elsewhere).
That write is the lock: on PostgreSQL it takes the row lock, on SQLite the database write lock
(SQLite has no SELECT ... FOR UPDATE), so appends to one dataset's hash chain are serialized on
both, and ``seq`` is unique per dataset as a backstop. Admission is a single statement:

    UPDATE budget SET eps_reserved = eps_reserved + :cost, ...
    WHERE dataset_id = :id AND eps_cap >= eps_spent + eps_reserved + :cost AND (same for delta)

and a request is admitted iff that statement changed one row (no read-check-write race).

Rules: a reservation is spent when the job finishes or fails AFTER it touched private
data (``release.data_touched``); it is refunded only if the job never touched data. Deleting a
release or a raw file changes nothing here. Caps change only by the dataset's steward, are never
set below what is spent + reserved, and every change is a logged entry (raising one warns).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
from dataclasses import dataclass, field
from fractions import Fraction

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from mechanisms.accounting import canonical

from . import anchor
from .models import Budget, LedgerEntry
from .units import (DELTA_UNIT, EPS_UNIT, GENESIS_HASH, canonical_json, chain_hash, delta_cap_units,
                    delta_cost_units, epsilon_cap_units, epsilon_cost_units, format_units, units_to_float)

log = logging.getLogger(__name__)

HASH_VERSION = 2  # see LedgerEntry.hash_version

# Informational PLD accounting composes at most this many releases (dp-accounting's PLD
# composition costs ~10-50 ms per release; the page must stay fast).
MAX_INFORMATIONAL_RELEASES = 200
# Characters that make a spreadsheet treat a cell as a formula (OWASP CSV injection).
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0")


class LedgerError(Exception):
    """Any refusal by the ledger; the message is meant for the user."""


class BudgetExceeded(LedgerError):
    """The request would exceed the dataset's cap; nothing was reserved."""


class BudgetNotSet(BudgetExceeded):
    """The dataset has no caps yet (no budget means nothing may be released)."""


class InvalidAmount(LedgerError, ValueError):
    """An epsilon/delta that cannot be parsed or is out of range."""


class CapTooLow(LedgerError, ValueError):
    """A cap below what is already spent + reserved."""


class RefundRefused(LedgerError):
    """The job touched private data: its budget is spent, whatever happened next."""


# ----------------------------------------------------------------------------------------------
# internals


def _lock_budget(dataset_id: int) -> None:
    """Take the dataset's budget lock for the current transaction (a no-op UPDATE)."""
    if Budget.objects.filter(dataset_id=dataset_id).update(head_seq=F("head_seq")) != 1:
        raise BudgetNotSet(f"dataset {dataset_id} has no privacy budget yet: its steward must set the caps first")


def _append(dataset_id: int, **fields) -> LedgerEntry:
    """Append one chained entry; the caller holds the budget lock in the current transaction."""
    head = Budget.objects.filter(dataset_id=dataset_id).values("head_seq", "head_hash").get()
    user = fields.pop("user", None)
    release = fields.pop("release", None)
    entry = LedgerEntry(
        dataset_id=dataset_id,
        seq=head["head_seq"] + 1,
        prev_hash=head["head_hash"] or GENESIS_HASH,
        created_at=timezone.now(),
        user=user if getattr(user, "pk", None) else None,
        username=getattr(user, "username", "") or "",
        user_pk=getattr(user, "pk", None),
        hash_version=HASH_VERSION,
        release=release,
        release_pk=getattr(release, "pk", None),
        **fields,
    )
    entry.hash = chain_hash(entry.chain_fields(), entry.prev_hash)
    entry.save(force_insert=True)
    Budget.objects.filter(dataset_id=dataset_id).update(head_seq=entry.seq, head_hash=entry.hash)
    anchor.on_commit(dataset_id, entry.seq, entry.hash)  # the head, outside the database
    return entry


def _release_params_json(release) -> str:
    params = getattr(release, "params", None) or {}
    rows = getattr(release, "rows", None)
    payload = {"params": params}
    if rows is not None:
        payload["rows"] = rows
    return canonical_json(json.loads(json.dumps(payload, default=str)))


def _refusal(dataset_id: int, eps_units: int, delta_units: int, epsilon, delta) -> BudgetExceeded:
    b = Budget.objects.filter(dataset_id=dataset_id).first()
    if b is None:
        return BudgetNotSet("this dataset has no privacy budget yet: its steward must set the epsilon "
                            "(and delta) caps before anything can be released")
    eps_left = b.eps_cap - b.eps_spent - b.eps_reserved
    delta_left = b.delta_cap - b.delta_spent - b.delta_reserved
    parts = []
    if eps_units > eps_left:
        parts.append(f"epsilon {epsilon} requested, {format_units(max(eps_left, 0), EPS_UNIT)} remaining "
                     f"of cap {format_units(b.eps_cap, EPS_UNIT)}")
    if delta_units > delta_left:
        parts.append(f"delta {delta} requested, {format_units(max(delta_left, 0), DELTA_UNIT)} remaining "
                     f"of cap {format_units(b.delta_cap, DELTA_UNIT)}")
    if not parts:  # the budget moved between the refused UPDATE and this read
        parts.append("the budget changed concurrently; "
                     f"epsilon {format_units(max(eps_left, 0), EPS_UNIT)} and "
                     f"delta {format_units(max(delta_left, 0), DELTA_UNIT)} remain")
    return BudgetExceeded("over budget: " + "; ".join(parts) + ". Nothing was charged.")


def _reservation(release) -> LedgerEntry:
    entry = LedgerEntry.objects.filter(kind=LedgerEntry.RESERVE, release_pk=release.pk).first()
    if entry is None:
        raise LedgerError(f"release {release.pk} has no reservation in the ledger")
    return entry


def _data_touched(release) -> bool:
    """Read the flag from the database (the caller's object may be stale); a release that is gone
    counts as touched: its history cannot prove otherwise, so nothing is refunded."""
    flags = list(type(release).objects.select_for_update().filter(pk=release.pk)
                 .values_list("data_touched", flat=True))
    return True if not flags else bool(flags[0])


def _report_guarantee(release) -> tuple[str, str]:
    report = getattr(release, "report", None) or {}
    guarantee = str(report.get("guarantee") or "")
    caveats = report.get("caveats") or []
    note = "; ".join(str(c) for c in caveats) if isinstance(caveats, (list, tuple)) else str(caveats)
    return guarantee, note


def _resolve(release, kind: str, note: str = "") -> LedgerEntry:
    # lock FIRST, read after: a SQLite transaction that reads before its first write cannot wait
    # for the write lock (it fails at once with "database is locked")
    if getattr(release, "dataset_id", None):
        _lock_budget(release.dataset_id)
        res = _reservation(release)
    else:
        res = _reservation(release)
        _lock_budget(res.dataset_id)
    existing = LedgerEntry.objects.filter(resolves_id=res.pk).first()
    if existing is not None:
        if existing.kind == kind:
            return existing  # idempotent: a redelivered job settles once
        raise LedgerError(f"release {release.pk} was already {existing.get_kind_display()}; "
                          f"it cannot also be {dict(LedgerEntry.KINDS)[kind]}")
    if kind == LedgerEntry.REFUND and _data_touched(release):
        raise RefundRefused(f"release {release.pk} touched private data: its budget is spent, not refunded")
    if kind == LedgerEntry.SPEND:
        Budget.objects.filter(dataset_id=res.dataset_id).update(
            eps_reserved=F("eps_reserved") - res.eps_units, eps_spent=F("eps_spent") + res.eps_units,
            delta_reserved=F("delta_reserved") - res.delta_units, delta_spent=F("delta_spent") + res.delta_units)
        guarantee, caveats = _report_guarantee(release)
        guarantee = guarantee or res.guarantee
        note = "; ".join(x for x in (note, caveats) if x)
    else:
        Budget.objects.filter(dataset_id=res.dataset_id).update(
            eps_reserved=F("eps_reserved") - res.eps_units, delta_reserved=F("delta_reserved") - res.delta_units)
        guarantee = res.guarantee
    return _append(res.dataset_id, kind=kind, user=None, release=release if _exists(release) else None,
                   mechanism=res.mechanism, params_json=res.params_json, epsilon=res.epsilon,
                   delta=res.delta, eps_units=res.eps_units, delta_units=res.delta_units,
                   guarantee=guarantee, resolves=res, note=note[:2000])


def _exists(release) -> bool:
    return type(release).objects.filter(pk=release.pk).exists()


# ----------------------------------------------------------------------------------------------
# the interface the web app calls


def reserve(*, dataset, release, user, epsilon: str, delta: str, note: str = "") -> LedgerEntry:
    """Admit a release and reserve its cost, atomically, before it is queued.

    Call inside the transaction that creates the Release. Raises ``BudgetExceeded`` (with what
    remains) or ``InvalidAmount``; then nothing was reserved. ``note``: what the steward confirmed (a
    mechanism predicted to fail, a high predicted error), hashed with the entry.
    """
    try:
        eps_units = epsilon_cost_units(epsilon)
        delta_units = delta_cost_units(delta)
    except ValueError as exc:
        raise InvalidAmount(str(exc)) from None
    with transaction.atomic():
        admitted = Budget.objects.filter(
            dataset_id=dataset.pk,
            eps_cap__gte=F("eps_spent") + F("eps_reserved") + eps_units,
            delta_cap__gte=F("delta_spent") + F("delta_reserved") + delta_units,
        ).update(eps_reserved=F("eps_reserved") + eps_units, delta_reserved=F("delta_reserved") + delta_units)
        if admitted != 1:
            raise _refusal(dataset.pk, eps_units, delta_units, epsilon, delta)
        return _append(
            dataset.pk, kind=LedgerEntry.RESERVE, user=user, release=release,
            mechanism=str(getattr(release, "mechanism", "") or ""), params_json=_release_params_json(release),
            epsilon=canonical(epsilon), delta=canonical(delta if delta not in (None, "") else "0"),
            eps_units=eps_units, delta_units=delta_units,
            guarantee="approximate" if delta_units else "pure", note=note[:2000],
        )


def record_draw(draw, *, user) -> LedgerEntry:
    """A zero-cost note row for a draw of more rows from a finished release (post-processing): the ledger
    lists every output made from the data, charged or not. Call inside the transaction creating the draw."""
    _lock_budget(draw.dataset_id)
    note = (f"draw of {draw.rows:,} more rows from release {draw.parent_id}: post-processing of its "
            "private summary, no privacy cost")
    return _append(draw.dataset_id, kind=LedgerEntry.NOTE, user=user, release=draw,
                   mechanism=str(draw.mechanism), params_json=canonical_json({"parent": draw.parent_id,
                                                                               "rows": draw.rows}),
                   epsilon="0", delta="0", eps_units=0, delta_units=0, guarantee="", note=note)


def settle(release, *, note: str = "") -> LedgerEntry:
    """reserved -> spent: the job finished, or failed after touching data. Idempotent."""
    with transaction.atomic():
        return _resolve(release, LedgerEntry.SPEND, note)


def refund(release, *, reason: str = "") -> LedgerEntry:
    """reserved -> refunded, only if the job never touched private data (else ``RefundRefused``).
    Idempotent."""
    with transaction.atomic():
        return _resolve(release, LedgerEntry.REFUND, reason)


def close_failed(release, *, reason: str = "") -> LedgerEntry:
    """For a failed or cancelled job: refund if it never touched private data, otherwise settle as spent.
    The note says what happened and what was spent or refunded."""
    what = reason or "job failed"
    cost = f"ε {getattr(release, 'epsilon', '?')} and δ {getattr(release, 'delta', '?')}"
    with transaction.atomic():
        if getattr(release, "dataset_id", None):
            _lock_budget(release.dataset_id)  # lock before the first read (see _resolve)
        if _data_touched(release):
            return _resolve(release, LedgerEntry.SPEND, f"{what} after reading the data: {cost} spent")
        return _resolve(release, LedgerEntry.REFUND, f"{what} before reading the data: {cost} refunded")


def set_caps(dataset, *, epsilon, delta, user) -> LedgerEntry | None:
    """Set (first time) or change the caps; only the dataset's steward may. Never below what is
    spent + reserved. Returns the logged entry (``entry.warning`` set when a cap was raised), or
    None when nothing changed."""
    if user is None or getattr(user, "pk", None) != dataset.owner_id:
        raise LedgerError("only the dataset's steward can change its privacy budget")
    try:
        eps_cap, delta_cap = epsilon_cap_units(epsilon), delta_cap_units(delta)
    except ValueError as exc:
        raise InvalidAmount(str(exc)) from None
    with transaction.atomic():
        if Budget.objects.filter(dataset_id=dataset.pk).update(head_seq=F("head_seq")) == 0:  # the lock
            try:
                with transaction.atomic():
                    Budget.objects.create(dataset_id=dataset.pk)
            except IntegrityError:
                pass  # created concurrently
            _lock_budget(dataset.pk)
        b = Budget.objects.get(dataset_id=dataset.pk)
        eps_used, delta_used = b.eps_spent + b.eps_reserved, b.delta_spent + b.delta_reserved
        if eps_cap < eps_used:
            raise CapTooLow(f"epsilon cap {epsilon} is below the {format_units(eps_used, EPS_UNIT)} already "
                            "spent or reserved; a cap can never be lowered below that")
        if delta_cap < delta_used:
            raise CapTooLow(f"delta cap {delta} is below the {format_units(delta_used, DELTA_UNIT)} already "
                            "spent or reserved; a cap can never be lowered below that")
        first = b.head_seq == 0
        if not first and (eps_cap, delta_cap) == (b.eps_cap, b.delta_cap):
            return None
        warning = ""
        unused = not LedgerEntry.objects.filter(dataset_id=dataset.pk, kind=LedgerEntry.RESERVE).exists()
        if not first and unused:
            pass  # no release was ever requested: correcting the cap changes nobody's privacy loss
        elif not first and (eps_cap > b.eps_cap or delta_cap > b.delta_cap):
            warning = ("cap raised from epsilon {} / delta {} to epsilon {} / delta {}: every release already made "
                       "keeps its privacy loss, and the total loss the data subjects may suffer grows".format(
                           format_units(b.eps_cap, EPS_UNIT), format_units(b.delta_cap, DELTA_UNIT),
                           format_units(eps_cap, EPS_UNIT), format_units(delta_cap, DELTA_UNIT)))
        note = warning or ("cap set" if first else "cap corrected before any release" if unused else "cap lowered")
        Budget.objects.filter(dataset_id=dataset.pk).update(eps_cap=eps_cap, delta_cap=delta_cap)
        entry = _append(dataset.pk, kind=LedgerEntry.CAP, user=user, release=None,
                        epsilon=canonical(epsilon), delta=canonical(delta if delta not in (None, "") else "0"),
                        eps_units=eps_cap, delta_units=delta_cap, note=note)
    if warning:
        log.warning("dataset %s: %s (by %s)", dataset.pk, warning, entry.username)
    entry.warning = warning
    return entry


# ----------------------------------------------------------------------------------------------
# reading


def _side(cap: int, spent: int, reserved: int, unit: int) -> dict:
    remaining = max(cap - spent - reserved, 0)
    pct = (lambda x: round(100.0 * x / cap, 2) if cap else 0.0)
    return {
        "cap": format_units(cap, unit), "spent": format_units(spent, unit),
        "reserved": format_units(reserved, unit), "remaining": format_units(remaining, unit),
        "cap_float": units_to_float(cap, unit), "spent_float": units_to_float(spent, unit),
        "reserved_float": units_to_float(reserved, unit), "remaining_float": units_to_float(remaining, unit),
        "spent_percent": pct(spent), "reserved_percent": pct(reserved), "remaining_percent": pct(remaining),
    }


def remaining(dataset) -> dict:
    """Caps, spent, reserved and remaining for epsilon and delta (exact strings and floats)."""
    try:
        b = dataset.budget
    except Budget.DoesNotExist:
        b = None
    if b is None:
        zero = _side(0, 0, 0, EPS_UNIT)
        return {"set": False, "epsilon": zero, "delta": _side(0, 0, 0, DELTA_UNIT),
                "summary": "no privacy budget set"}
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
    return (LedgerEntry.objects.filter(dataset_id=dataset.pk)
            .select_related("resolution", "resolves", "release").order_by("seq"))


def entries_json(dataset) -> dict:
    """The whole ledger of a dataset as plain data (the API's GET /api/datasets/{id}/ledger/)."""
    with snapshot():  # entries, counters and the chain check from the same commit
        chain = verify_dataset(dataset.pk)
        rows = list(entries(dataset))
        budget = remaining(type(dataset).objects.get(pk=dataset.pk))
    seqs = {e.pk: e.seq for e in rows}
    out = [_entry_dict(e, seqs) for e in rows]
    return {
        "dataset": dataset.pk, "name": getattr(dataset, "name", ""),
        "units": {"epsilon_per_1": EPS_UNIT, "delta_per_1": DELTA_UNIT},
        "budget": budget, "chain": chain.to_dict(), "entries": out,
    }


def _entry_dict(e: LedgerEntry, seqs: dict) -> dict:
    return {
        "seq": e.seq, "kind": e.kind, "state": e.state,
        "created_at": e.created_at.isoformat(), "user": e.username, "release": e.release_pk,
        "release_exists": e.release_id is not None, "mechanism": e.mechanism, "params": e.params,
        "epsilon_requested": e.epsilon, "delta_requested": e.delta,
        "epsilon": e.epsilon_display, "delta": e.delta_display,
        "epsilon_float": units_to_float(e.eps_units, EPS_UNIT),
        "delta_float": units_to_float(e.delta_units, DELTA_UNIT),
        "guarantee": e.guarantee, "resolves_seq": seqs.get(e.resolves_id), "note": e.note,
        "prev_hash": e.prev_hash, "hash": e.hash,
    }


CSV_COLUMNS = ["seq", "created_at", "kind", "state", "user", "release", "mechanism", "params",
               "epsilon_requested", "delta_requested", "epsilon", "delta", "guarantee", "resolves_seq",
               "note", "prev_hash", "hash"]


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
    rows = (LedgerEntry.objects.filter(dataset_id=dataset.pk, kind__in=[LedgerEntry.SPEND, LedgerEntry.CAP])
            .order_by("seq").values("seq", "kind", "created_at", "eps_units", "delta_units", "release_pk",
                                    "mechanism"))
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
    return {"time": t, "epsilon": eps, "delta": dlt, "labels": labels, "cap_time": cap_t, "cap_epsilon": cap_eps,
            "cap_delta": cap_dlt}


# ----------------------------------------------------------------------------------------------
# verification


@dataclass
class ChainReport:
    dataset: int
    entries: int = 0
    head: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "ok": self.ok, "entries": self.entries, "head": self.head,
                "problems": list(self.problems)}


@contextlib.contextmanager
def snapshot():
    """One consistent view of the ledger for reading: a REPEATABLE READ, read-only transaction on
    PostgreSQL, one read transaction on SQLite (its shared lock / WAL snapshot holds for the whole
    block). Inside a caller's transaction the isolation cannot change; ``_read_chain`` then re-reads
    the budget head and retries, so entries and counters still come from the same commit."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


_BUDGET_FIELDS = ("eps_cap", "eps_spent", "eps_reserved", "delta_cap", "delta_spent", "delta_reserved",
                  "head_seq", "head_hash")
READ_RETRIES = 20


def _read_chain(dataset_id: int) -> tuple[list[LedgerEntry], dict | None]:
    """Entries and budget row of one commit: every ledger transaction moves the budget head, so an
    unchanged budget row before and after reading the entries proves no commit came between."""
    for _ in range(READ_RETRIES):
        before = Budget.objects.filter(dataset_id=dataset_id).values(*_BUDGET_FIELDS).first()
        rows = list(LedgerEntry.objects.filter(dataset_id=dataset_id).order_by("seq"))
        after = Budget.objects.filter(dataset_id=dataset_id).values(*_BUDGET_FIELDS).first()
        if before == after:
            return rows, after
    return rows, after  # a ledger that never stops moving: report what was read (may flag a race)


def verify_dataset(dataset_id: int, anchor_heads: list | None = None) -> ChainReport:
    """Recompute the chain of one dataset and cross-check the budget counters against it, from one
    consistent snapshot; with ``anchor_heads`` (``anchor.read``), also against the external anchor."""
    with snapshot():
        rows, budget = _read_chain(int(dataset_id))
        report = _check_chain(int(dataset_id), rows, budget)
        report.problems += _check_links(rows)
    if anchor_heads is not None:
        report.problems += anchor.check(anchor_heads, int(dataset_id), {e.seq: e.hash for e in rows})
    return report


def _check_chain(dataset_id: int, rows: list[LedgerEntry], b: dict | None) -> ChainReport:
    report = ChainReport(dataset=dataset_id)
    report.entries = len(rows)
    by_pk = {e.pk: e for e in rows}
    prev = GENESIS_HASH
    version = 1
    cap_e = cap_d = spent_e = spent_d = res_e = res_d = 0
    resolved: set[int] = set()
    for i, e in enumerate(rows, start=1):
        where = f"entry #{e.seq}"
        if e.seq != i:
            report.problems.append(f"{where}: expected sequence number {i} (an entry is missing or inserted)")
        if e.prev_hash != prev:
            report.problems.append(f"{where}: previous-hash link broken")
        if e.hash_version not in (1, HASH_VERSION) or e.hash_version < version:
            report.problems.append(f"{where}: hash version {e.hash_version} after version {version} "
                                   "(a chain never goes back to an older hash)")
        version = max(version, e.hash_version)
        try:
            expected = chain_hash(e.chain_fields(), e.prev_hash)
        except Exception as exc:  # unparseable tampered content still has to be reported
            expected = f"<{exc}>"
        if expected != e.hash:
            report.problems.append(f"{where}: content does not match its hash (modified in the database)")
        prev = e.hash
        if e.kind == LedgerEntry.CAP:
            cap_e, cap_d = e.eps_units, e.delta_units
        elif e.kind == LedgerEntry.RESERVE:
            res_e += e.eps_units
            res_d += e.delta_units
        elif e.kind in (LedgerEntry.SPEND, LedgerEntry.REFUND):
            target = by_pk.get(e.resolves_id)
            if target is None or target.kind != LedgerEntry.RESERVE or target.seq >= e.seq:
                report.problems.append(f"{where}: does not resolve an earlier reservation of this dataset")
                continue
            if target.pk in resolved:
                report.problems.append(f"{where}: reservation #{target.seq} resolved twice")
            resolved.add(target.pk)
            if (e.eps_units, e.delta_units) != (target.eps_units, target.delta_units):
                report.problems.append(f"{where}: amount differs from reservation #{target.seq}")
            res_e -= target.eps_units
            res_d -= target.delta_units
            if e.kind == LedgerEntry.SPEND:
                spent_e += target.eps_units
                spent_d += target.delta_units
        elif e.kind == LedgerEntry.NOTE:
            if e.eps_units or e.delta_units or e.resolves_id is not None:
                report.problems.append(f"{where}: a note carries no cost and resolves nothing")
        else:
            report.problems.append(f"{where}: unknown kind {e.kind!r}")
    report.head = prev if rows else ""
    if b is None:
        if rows:
            report.problems.append("entries exist but the budget row is missing")
        return report
    if (b["head_seq"], b["head_hash"] or "") != (len(rows), report.head):
        report.problems.append(f"budget head (#{b['head_seq']}) does not match the last entry (#{len(rows)}): "
                               "entries were removed or added outside the ledger")
    expect = {"eps_cap": cap_e, "delta_cap": cap_d, "eps_spent": spent_e, "delta_spent": spent_d,
              "eps_reserved": res_e, "delta_reserved": res_d}
    for name, value in expect.items():
        if b[name] != value:
            report.problems.append(f"budget {name} is {b[name]} units but the entries give {value}")
    if b["eps_spent"] + b["eps_reserved"] > b["eps_cap"] or b["delta_spent"] + b["delta_reserved"] > b["delta_cap"]:
        report.problems.append("spent + reserved exceeds the cap")
    return report


def _check_links(rows: list[LedgerEntry]) -> list[str]:
    """The foreign keys (user, release) are not in the hash themselves (SET_NULL clears them when the
    account or release is deleted); their kept copies are. Each FK must be NULL or equal its copy,
    and NULL only if the row it named is really gone."""
    from django.contrib.auth import get_user_model

    from dpportal.releases.models import Release

    users = set(get_user_model().objects.filter(pk__in={e.user_pk for e in rows if e.user_pk})
                .values_list("pk", flat=True))
    releases = set(Release.objects.filter(pk__in={e.release_pk for e in rows if e.release_pk})
                   .values_list("pk", flat=True))
    problems = []
    for e in rows:
        for name, fk, kept, alive in (("user", e.user_id, e.user_pk, users),
                                      ("release", e.release_id, e.release_pk, releases)):
            if fk is not None and fk != kept:
                problems.append(f"entry #{e.seq}: its {name} link points at {name} {fk}, but the hashed "
                                f"{name} id is {kept} (foreign key modified in the database)")
            elif fk is None and kept is not None and kept in alive:
                problems.append(f"entry #{e.seq}: its {name} link was cleared although {name} {kept} exists")
    return problems


def verify_all(anchor_heads: list | None = None) -> list[ChainReport]:
    ids = set(Budget.objects.values_list("dataset_id", flat=True))
    ids |= set(LedgerEntry.objects.values_list("dataset_id", flat=True).distinct())
    ids |= {a.dataset for a in anchor_heads or []}  # an anchored dataset whose chain vanished
    return [verify_dataset(i, anchor_heads) for i in sorted(ids)]


# ----------------------------------------------------------------------------------------------
# informational tighter accounting (never used to admit)


def _gaussian_multipliers(report: dict) -> list[float]:
    """Noise multipliers (sigma / L2 sensitivity) of the Gaussian mechanisms a release declares in
    its privacy report ``details``: ``gaussian_noise_multipliers`` (a list), or
    ``noise_multiplier`` / ``noise_multiplier_sigma`` (DP-MERF) with an optional count
    ``gaussian_count`` / ``gaussian_releases`` (DP-MERF)."""
    details = (report or {}).get("details") or {}
    listed = details.get("gaussian_noise_multipliers")
    if isinstance(listed, list):
        return [float(x) for x in listed if isinstance(x, (int, float)) and x > 0]
    nm = details.get("noise_multiplier", details.get("noise_multiplier_sigma"))
    if isinstance(nm, (int, float)) and not isinstance(nm, bool) and nm > 0:
        count = details.get("gaussian_count", details.get("gaussian_releases", 1))
        count = count if isinstance(count, int) and count > 0 else 1
        return [float(nm)] * count
    return []


def tighter_accounting(dataset) -> dict:
    """PLD composition (dp-accounting) of the spent releases, shown BESIDE the basic sum.

    Gaussian-based releases that declare their noise multiplier enter as Gaussian PLDs (the
    continuous Gaussian, as in ``mechanisms.accounting.gaussian_pld_epsilon``); every other
    release enters with its (epsilon, delta) worst-case PLD. Informational only.
    """
    spends = list(LedgerEntry.objects.filter(dataset_id=dataset.pk, kind=LedgerEntry.SPEND)
                  .select_related("release").order_by("seq")[:MAX_INFORMATIONAL_RELEASES + 1])
    base = {"informational": True, "available": False,
            "label": "informational only: admission always uses the basic sum"}
    if len(spends) > MAX_INFORMATIONAL_RELEASES:
        return {**base, "reason": f"more than {MAX_INFORMATIONAL_RELEASES} releases"}
    gaussian = [(e, _gaussian_multipliers(getattr(e.release, "report", None) or {})) for e in spends]
    if not any(m for _, m in gaussian):
        return {**base, "reason": "no Gaussian-based release declares its noise multiplier"}
    total_delta = sum(Fraction(e.delta_units, DELTA_UNIT) for e in spends)
    if total_delta <= 0:
        return {**base, "reason": "no delta spent"}
    try:
        from dp_accounting.pld import common, privacy_loss_distribution as pld_lib

        pld = None
        for e, multipliers in gaussian:
            if multipliers:
                parts = [pld_lib.from_gaussian_mechanism(m, sensitivity=1.0) for m in multipliers]
            else:
                parts = [pld_lib.from_privacy_parameters(common.DifferentialPrivacyParameters(
                    units_to_float(e.eps_units, EPS_UNIT), units_to_float(e.delta_units, DELTA_UNIT)))]
            for p in parts:
                pld = p if pld is None else pld.compose(p)
        eps = float(pld.get_epsilon_for_delta(float(total_delta)))
    except Exception as exc:  # informational: never break the page
        log.warning("informational PLD accounting failed for dataset %s: %s", dataset.pk, exc)
        return {**base, "reason": f"accountant failed: {exc}"}
    basic_units = sum(e.eps_units for e in spends)
    basic = units_to_float(basic_units, EPS_UNIT)
    delta_units = sum(e.delta_units for e in spends)
    return {**base, "available": True, "method": "PLD (dp-accounting)", "epsilon": round(eps, 6),
            "delta": float(total_delta), "delta_display": format_units(delta_units, DELTA_UNIT),
            "basic_epsilon": basic, "basic_epsilon_display": format_units(basic_units, EPS_UNIT),
            "tighter": eps < basic, "releases": len(spends)}
