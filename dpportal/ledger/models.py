"""The privacy ledger: per-dataset caps (``Budget``) and append-only, hash-chained entries.

Amounts are integers in the units of :mod:`dpportal.ledger.units` (exact: 9 x 1/9 == 1).
``Budget`` holds the running counters the admission check needs in ONE conditional UPDATE;
``LedgerEntry`` rows are the reviewable history. Every state change is a NEW row, never an edit:

    cap      the steward set or changed the caps (eps_units/delta_units = the new caps)
    reserve  a release was admitted: its cost is reserved before the job is queued
    spend    the job finished, or failed after it touched private data: the reservation is spent
    refund   the job failed BEFORE touching private data: the reservation is returned

A ``spend`` or ``refund`` row points at the reservation it resolves (unique: a reservation is
resolved once). Each row carries ``seq`` (1, 2, ... per dataset) and
``hash = sha256(canonical JSON of its immutable fields + previous row's hash)``; ``Budget``
keeps the head (last seq and hash) so truncating the chain is detected too.

Deleting never frees budget: a release's rows survive its deletion (``release`` is SET_NULL, the
release id is kept in ``release_pk``), and a dataset with ledger rows cannot be deleted at all
(PROTECT; stewards delete the raw FILE instead, which leaves the ledger as it is).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.db.models import Q

from .units import DELTA_UNIT, EPS_UNIT, canonical_time, format_units


class Budget(models.Model):
    """Caps and running totals of one dataset, in exact integer units.

    Invariant (enforced by the conditional UPDATE in ``services.reserve``):
    eps_spent + eps_reserved <= eps_cap, and the same for delta.
    """

    dataset = models.OneToOneField("datasets.Dataset", on_delete=models.CASCADE, related_name="budget")
    eps_cap = models.BigIntegerField(default=0)
    eps_spent = models.BigIntegerField(default=0)
    eps_reserved = models.BigIntegerField(default=0)
    delta_cap = models.BigIntegerField(default=0)
    delta_spent = models.BigIntegerField(default=0)
    delta_reserved = models.BigIntegerField(default=0)
    head_seq = models.PositiveIntegerField(default=0)
    head_hash = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return (
            f"budget of dataset {self.dataset_id}: epsilon {format_units(self.eps_cap, EPS_UNIT)}, "
            f"delta {format_units(self.delta_cap, DELTA_UNIT)}"
        )


class LedgerEntry(models.Model):
    CAP, RESERVE, SPEND, REFUND, NOTE = "cap", "reserve", "spend", "refund", "note"
    # NOTE: an informational row at zero cost (a free draw of more rows), chained and hashed like the others
    KINDS = [(CAP, "cap set"), (RESERVE, "reserved"), (SPEND, "spent"), (REFUND, "refunded"), (NOTE, "note, no cost")]

    dataset = models.ForeignKey("datasets.Dataset", on_delete=models.PROTECT, related_name="ledger_entries")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=8, choices=KINDS)
    created_at = models.DateTimeField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150, blank=True)  # kept if the account goes
    user_pk = models.BigIntegerField(null=True, blank=True)  # kept if the account goes (hashed from v2)
    release = models.ForeignKey(
        "releases.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger_entries"
    )
    release_pk = models.BigIntegerField(null=True, blank=True)  # kept if the release goes
    mechanism = models.CharField(max_length=64, blank=True)
    params_json = models.TextField(default="{}")  # canonical JSON, hashed as text
    epsilon = models.CharField(max_length=64, blank=True)  # as requested ("1/9", "0.1") or the new cap
    delta = models.CharField(max_length=64, blank=True)
    eps_units = models.BigIntegerField(default=0)
    delta_units = models.BigIntegerField(default=0)
    guarantee = models.CharField(max_length=16, blank=True)  # pure | approximate
    resolves = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT, related_name="resolution")
    note = models.TextField(blank=True)  # warnings, caveats, failure reason
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # 1: entries without the user id in the hash; 2: user_pk hashed too. New entries
    # are v2; a chain never goes back from 2 to 1 (verify_dataset checks), so old chains still verify.
    hash_version = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["dataset_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "seq"], name="ledger_unique_seq_per_dataset"),
            models.UniqueConstraint(
                fields=["release_pk"], condition=Q(kind="reserve"), name="ledger_one_reservation_per_release"
            ),
        ]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"#{self.seq} {self.kind} dataset {self.dataset_id}"

    # The immutable content that the hash covers. The FK columns that SET_NULL may clear (user,
    # release) are covered through their kept copies (user_pk, release_pk): verify_dataset checks
    # that each FK is either NULL (its row was deleted) or equal to the hashed copy.
    def chain_fields(self) -> dict:
        fields = self._chain_fields_v1()
        if self.hash_version >= 2:
            fields.update(version=int(self.hash_version), user_id=self.user_pk)
        return fields

    def _chain_fields_v1(self) -> dict:
        return {
            "dataset": int(self.dataset_id),
            "seq": int(self.seq),
            "kind": self.kind,
            "created_at": canonical_time(self.created_at),
            "user": self.username,
            "release": self.release_pk,
            "mechanism": self.mechanism,
            "params": self.params_json,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "eps_units": str(self.eps_units),
            "delta_units": str(self.delta_units),
            "guarantee": self.guarantee,
            "resolves": self.resolves_id,
            "note": self.note,
        }

    @property
    def params(self) -> dict:
        return json.loads(self.params_json or "{}")

    @property
    def epsilon_display(self) -> str:
        return format_units(self.eps_units, EPS_UNIT)

    @property
    def delta_display(self) -> str:
        return format_units(self.delta_units, DELTA_UNIT)

    @property
    def state(self) -> str:
        """For a reservation: reserved / spent / refunded. Other rows: their kind."""
        if self.kind != self.RESERVE:
            return self.get_kind_display()
        res = getattr(self, "resolution", None) if self.pk else None
        if res is None:
            return "reserved"
        return "spent" if res.kind == self.SPEND else "refunded"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError(f"ledger entries are append-only; refusing to modify entry {self.pk}")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError(f"ledger entries are append-only; refusing to delete entry {self.pk}")
