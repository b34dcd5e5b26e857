"""Ledger operations, one module per concern: ``admission`` (reserve -> settle | refund, draws, caps),
``exports`` (remaining, entries as JSON and CSV, timeline), ``verification`` (the hash chain) and
``informational`` (PLD accounting beside the basic sum, never used to admit).

Admission is the only way budget moves. Each operation runs in one transaction that FIRST writes the
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

The names below are the API the web app calls. A test that swaps a function swaps it in its own
module (``services.verification._read_chain``), where the callers look it up.
"""

from .admission import (
    HASH_VERSION,
    BudgetExceeded,
    BudgetNotSet,
    CapTooLow,
    InvalidAmount,
    LedgerError,
    RefundRefused,
    close_failed,
    record_draw,
    refund,
    reserve,
    set_caps,
    settle,
)
from .exports import CSV_COLUMNS, entries, entries_csv, entries_json, remaining, remaining_text, timeline
from .informational import MAX_INFORMATIONAL_RELEASES, tighter_accounting
from .verification import ChainReport, snapshot, verify_all, verify_dataset

__all__ = [
    "HASH_VERSION",
    "BudgetExceeded",
    "BudgetNotSet",
    "CapTooLow",
    "InvalidAmount",
    "LedgerError",
    "RefundRefused",
    "close_failed",
    "record_draw",
    "refund",
    "reserve",
    "set_caps",
    "settle",
    "CSV_COLUMNS",
    "entries",
    "entries_csv",
    "entries_json",
    "remaining",
    "remaining_text",
    "timeline",
    "MAX_INFORMATIONAL_RELEASES",
    "tighter_accounting",
    "ChainReport",
    "snapshot",
    "verify_all",
    "verify_dataset",
]
