"""Admission and settlement: reserve -> settle | refund, draws, caps. The only ways budget moves; each
appends one entry to the dataset's hash chain in the transaction that writes its ``Budget`` row."""

from __future__ import annotations

import json
import logging

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from mechanisms.accounting import canonical

from .. import anchor
from ..models import Budget, LedgerEntry
from ..units import (
    DELTA_UNIT,
    EPS_UNIT,
    GENESIS_HASH,
    canonical_json,
    chain_hash,
    delta_cap_units,
    delta_cost_units,
    epsilon_cap_units,
    epsilon_cost_units,
    format_units,
)

log = logging.getLogger(__name__)

HASH_VERSION = 2  # see LedgerEntry.hash_version


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
        return BudgetNotSet(
            "this dataset has no privacy budget yet: its steward must set the epsilon "
            "(and delta) caps before anything can be released"
        )
    eps_left = b.eps_cap - b.eps_spent - b.eps_reserved
    delta_left = b.delta_cap - b.delta_spent - b.delta_reserved
    parts = []
    if eps_units > eps_left:
        parts.append(
            f"epsilon {epsilon} requested, {format_units(max(eps_left, 0), EPS_UNIT)} remaining "
            f"of cap {format_units(b.eps_cap, EPS_UNIT)}"
        )
    if delta_units > delta_left:
        parts.append(
            f"delta {delta} requested, {format_units(max(delta_left, 0), DELTA_UNIT)} remaining "
            f"of cap {format_units(b.delta_cap, DELTA_UNIT)}"
        )
    if not parts:  # the budget moved between the refused UPDATE and this read
        parts.append(
            "the budget changed concurrently; "
            f"epsilon {format_units(max(eps_left, 0), EPS_UNIT)} and "
            f"delta {format_units(max(delta_left, 0), DELTA_UNIT)} remain"
        )
    return BudgetExceeded("over budget: " + "; ".join(parts) + ". Nothing was charged.")


def _reservation(release) -> LedgerEntry:
    entry = LedgerEntry.objects.filter(kind=LedgerEntry.RESERVE, release_pk=release.pk).first()
    if entry is None:
        raise LedgerError(f"release {release.pk} has no reservation in the ledger")
    return entry


def _data_touched(release) -> bool:
    """Read the flag from the database (the caller's object may be stale); a release that is gone
    counts as touched: its history cannot prove otherwise, so nothing is refunded."""
    flags = list(type(release).objects.select_for_update().filter(pk=release.pk).values_list("data_touched", flat=True))
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
        raise LedgerError(
            f"release {release.pk} was already {existing.get_kind_display()}; "
            f"it cannot also be {dict(LedgerEntry.KINDS)[kind]}"
        )
    if kind == LedgerEntry.REFUND and _data_touched(release):
        raise RefundRefused(f"release {release.pk} touched private data: its budget is spent, not refunded")
    if kind == LedgerEntry.SPEND:
        Budget.objects.filter(dataset_id=res.dataset_id).update(
            eps_reserved=F("eps_reserved") - res.eps_units,
            eps_spent=F("eps_spent") + res.eps_units,
            delta_reserved=F("delta_reserved") - res.delta_units,
            delta_spent=F("delta_spent") + res.delta_units,
        )
        guarantee, caveats = _report_guarantee(release)
        guarantee = guarantee or res.guarantee
        note = "; ".join(x for x in (note, caveats) if x)
    else:
        Budget.objects.filter(dataset_id=res.dataset_id).update(
            eps_reserved=F("eps_reserved") - res.eps_units, delta_reserved=F("delta_reserved") - res.delta_units
        )
        guarantee = res.guarantee
    return _append(
        res.dataset_id,
        kind=kind,
        user=None,
        release=release if _exists(release) else None,
        mechanism=res.mechanism,
        params_json=res.params_json,
        epsilon=res.epsilon,
        delta=res.delta,
        eps_units=res.eps_units,
        delta_units=res.delta_units,
        guarantee=guarantee,
        resolves=res,
        note=note[:2000],
    )


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
            dataset.pk,
            kind=LedgerEntry.RESERVE,
            user=user,
            release=release,
            mechanism=str(getattr(release, "mechanism", "") or ""),
            params_json=_release_params_json(release),
            epsilon=canonical(epsilon),
            delta=canonical(delta if delta not in (None, "") else "0"),
            eps_units=eps_units,
            delta_units=delta_units,
            guarantee="approximate" if delta_units else "pure",
            note=note[:2000],
        )


def record_draw(draw, *, user) -> LedgerEntry:
    """A zero-cost note row for a draw of more rows from a finished release (post-processing): the ledger
    lists every output made from the data, charged or not. Call inside the transaction creating the draw."""
    _lock_budget(draw.dataset_id)
    note = (
        f"draw of {draw.rows:,} more rows from release {draw.parent_id}: post-processing of its "
        "private summary, no privacy cost"
    )
    return _append(
        draw.dataset_id,
        kind=LedgerEntry.NOTE,
        user=user,
        release=draw,
        mechanism=str(draw.mechanism),
        params_json=canonical_json({"parent": draw.parent_id, "rows": draw.rows}),
        epsilon="0",
        delta="0",
        eps_units=0,
        delta_units=0,
        guarantee="",
        note=note,
    )


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
            raise CapTooLow(
                f"epsilon cap {epsilon} is below the {format_units(eps_used, EPS_UNIT)} already "
                "spent or reserved; a cap can never be lowered below that"
            )
        if delta_cap < delta_used:
            raise CapTooLow(
                f"delta cap {delta} is below the {format_units(delta_used, DELTA_UNIT)} already "
                "spent or reserved; a cap can never be lowered below that"
            )
        first = b.head_seq == 0
        if not first and (eps_cap, delta_cap) == (b.eps_cap, b.delta_cap):
            return None
        warning = ""
        unused = not LedgerEntry.objects.filter(dataset_id=dataset.pk, kind=LedgerEntry.RESERVE).exists()
        if not first and unused:
            pass  # no release was ever requested: correcting the cap changes nobody's privacy loss
        elif not first and (eps_cap > b.eps_cap or delta_cap > b.delta_cap):
            warning = (
                "cap raised from epsilon {} / delta {} to epsilon {} / delta {}: every release already made "
                "keeps its privacy loss, and the total loss the data subjects may suffer grows".format(
                    format_units(b.eps_cap, EPS_UNIT),
                    format_units(b.delta_cap, DELTA_UNIT),
                    format_units(eps_cap, EPS_UNIT),
                    format_units(delta_cap, DELTA_UNIT),
                )
            )
        note = warning or ("cap set" if first else "cap corrected before any release" if unused else "cap lowered")
        Budget.objects.filter(dataset_id=dataset.pk).update(eps_cap=eps_cap, delta_cap=delta_cap)
        entry = _append(
            dataset.pk,
            kind=LedgerEntry.CAP,
            user=user,
            release=None,
            epsilon=canonical(epsilon),
            delta=canonical(delta if delta not in (None, "") else "0"),
            eps_units=eps_cap,
            delta_units=delta_cap,
            note=note,
        )
    if warning:
        log.warning("dataset %s: %s (by %s)", dataset.pk, warning, entry.username)
    entry.warning = warning
    return entry
