"""Summary round trip shared by the mechanism tests."""

from __future__ import annotations

import io

from mechanisms.base import load_summary, save_summary


def through_npz(summary: dict) -> dict:
    """``summary`` as it comes back from an in-memory .npz file (save_summary, then load_summary):
    what a release stores and a later draw reloads."""
    buf = io.BytesIO()
    save_summary(summary, buf)
    buf.seek(0)
    return load_summary(buf)
