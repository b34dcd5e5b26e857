"""The ledger's external anchor: every new chain head, appended to a file outside the database.

The hash chain detects an edit of one entry, but whoever can write the database can also rewrite
the WHOLE chain (raise the cap to 100, recompute every hash and the budget head): it then verifies.
The anchor is a second, append-only witness kept elsewhere: after each ledger transaction commits,
one line ``<dataset> <seq> <hash>`` is appended to ``DPPORTAL_LEDGER_ANCHOR`` (default:
``<DATA_DIR>/ledger-anchor.log``; "off" disables). ``verify_ledger --anchor FILE`` then requires every
anchored (dataset, seq) to still carry the anchored hash. Keep the file where the database's users
cannot rewrite it (another machine, a write-once log, a copy shipped by syslog): an anchor on the
same disk, writable by the same account, only raises the bar.

Lines are written with one ``write`` of an O_APPEND file (atomic for lines this short on a local
file system), after the commit (``transaction.on_commit``), so a rolled-back transaction never
leaves a line. A crash between commit and write leaves the anchor one head behind: verification
accepts an anchor that lags (every anchored line must match; newer entries need no line).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)
FILE_NAME = "ledger-anchor.log"


def anchor_path() -> Path | None:
    configured = (getattr(settings, "DPPORTAL_LEDGER_ANCHOR", "") or "").strip()
    if configured.lower() == "off":
        return None
    return Path(configured) if configured else Path(settings.DATA_DIR) / FILE_NAME


def on_commit(dataset_id: int, seq: int, head: str) -> None:
    transaction.on_commit(lambda: record(dataset_id, seq, head))


def record(dataset_id: int, seq: int, head: str) -> None:
    path = anchor_path()
    if path is None:
        return
    line = f"{int(dataset_id)} {int(seq)} {head}\n".encode("ascii")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:  # the ledger itself is committed; verification will report the missing line
        log.exception("could not append the ledger head of dataset %s (#%s) to the anchor %s", dataset_id, seq, path)


@dataclass(frozen=True)
class Anchored:
    dataset: int
    seq: int
    hash: str
    line: int


def read(path: Path) -> tuple[list[Anchored], list[str]]:
    """The anchored heads and the problems with the file itself (unreadable or malformed lines)."""
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        return [], [f"anchor {path}: cannot be read ({exc.strerror})"]
    heads, problems = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        parts = raw.split()
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or len(parts[2]) != 64:
            problems.append(f"anchor {path} line {number}: malformed {raw[:80]!r}")
            continue
        heads.append(Anchored(int(parts[0]), int(parts[1]), parts[2], number))
    return heads, problems


def check(heads: list[Anchored], dataset_id: int, hashes: dict[int, str]) -> list[str]:
    """Problems of one dataset's chain (``{seq: hash}``) against the anchored heads."""
    problems = []
    for a in heads:
        if a.dataset != dataset_id:
            continue
        found = hashes.get(a.seq)
        if found is None:
            problems.append(
                f"anchor line {a.line}: entry #{a.seq} (hash {a.hash[:12]}...) is missing from the "
                "database: the chain was truncated or rewritten"
            )
        elif found != a.hash:
            problems.append(
                f"anchor line {a.line}: entry #{a.seq} has hash {found[:12]}... but the anchor recorded "
                f"{a.hash[:12]}...: the chain was rewritten"
            )
    return problems
