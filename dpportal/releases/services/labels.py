"""The steward's labels: name, note, withdraw from analysts, hide. No privacy effect: the cost stays
spent and the ledger keeps the release whatever is done here."""

from __future__ import annotations

from django.utils import timezone

from ..models import Release
from .parsing import ReleaseRequestError

TITLE_MAX = 120
NOTE_MAX = 2000


def _label_text(value, name: str, limit: int, *, multiline: bool) -> str:
    text = "" if value is None else str(value).strip()
    if len(text) > limit:
        raise ReleaseRequestError(f"{name} must be at most {limit} characters, got {len(text)}")
    allowed = "\n\r\t" if multiline else ""
    bad = next((ch for ch in text if (ord(ch) < 32 and ch not in allowed) or ord(ch) == 127), None)
    if bad is not None:
        raise ReleaseRequestError(f"{name} must not contain control characters, got {bad!r}")
    return text


def label_release(release: Release, *, title, note) -> Release:
    release.title = _label_text(title, "name", TITLE_MAX, multiline=False)
    release.note = _label_text(note, "note", NOTE_MAX, multiline=True)
    release.save(update_fields=["title", "note"])
    return release


def set_withdrawn(release: Release, withdrawn: bool) -> Release:
    """Withdraw a release from analysts (or give it back). Copies already downloaded are not recalled."""
    release.withdrawn_at = timezone.now() if withdrawn else None
    release.save(update_fields=["withdrawn_at"])
    return release


def set_hidden(release: Release, hidden: bool) -> Release:
    release.hidden = bool(hidden)
    release.save(update_fields=["hidden"])
    return release
