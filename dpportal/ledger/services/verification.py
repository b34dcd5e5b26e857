"""Verification: the hash chain of each dataset's entries re-computed and checked against its Budget
row (and, given its heads, the external anchor) on one consistent snapshot."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from django.db import connection, transaction

from .. import anchor
from ..models import Budget, LedgerEntry
from ..units import GENESIS_HASH, chain_hash
from .admission import HASH_VERSION


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
        return {
            "dataset": self.dataset,
            "ok": self.ok,
            "entries": self.entries,
            "head": self.head,
            "problems": list(self.problems),
        }


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


_BUDGET_FIELDS = (
    "eps_cap",
    "eps_spent",
    "eps_reserved",
    "delta_cap",
    "delta_spent",
    "delta_reserved",
    "head_seq",
    "head_hash",
)
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
            report.problems.append(
                f"{where}: hash version {e.hash_version} after version {version} "
                "(a chain never goes back to an older hash)"
            )
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
        report.problems.append(
            f"budget head (#{b['head_seq']}) does not match the last entry (#{len(rows)}): "
            "entries were removed or added outside the ledger"
        )
    expect = {
        "eps_cap": cap_e,
        "delta_cap": cap_d,
        "eps_spent": spent_e,
        "delta_spent": spent_d,
        "eps_reserved": res_e,
        "delta_reserved": res_d,
    }
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

    users = set(
        get_user_model().objects.filter(pk__in={e.user_pk for e in rows if e.user_pk}).values_list("pk", flat=True)
    )
    releases = set(
        Release.objects.filter(pk__in={e.release_pk for e in rows if e.release_pk}).values_list("pk", flat=True)
    )
    problems = []
    for e in rows:
        for name, fk, kept, alive in (
            ("user", e.user_id, e.user_pk, users),
            ("release", e.release_id, e.release_pk, releases),
        ):
            if fk is not None and fk != kept:
                problems.append(
                    f"entry #{e.seq}: its {name} link points at {name} {fk}, but the hashed "
                    f"{name} id is {kept} (foreign key modified in the database)"
                )
            elif fk is None and kept is not None and kept in alive:
                problems.append(f"entry #{e.seq}: its {name} link was cleared although {name} {kept} exists")
    return problems


def verify_all(anchor_heads: list | None = None) -> list[ChainReport]:
    ids = set(Budget.objects.values_list("dataset_id", flat=True))
    ids |= set(LedgerEntry.objects.values_list("dataset_id", flat=True).distinct())
    ids |= {a.dataset for a in anchor_heads or []}  # an anchored dataset whose chain vanished
    return [verify_dataset(i, anchor_heads) for i in sorted(ids)]
