"""Accounts a steward may create from the web pages: analyst accounts only."""

from __future__ import annotations

import logging
import re
import secrets

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from .models import Profile, make_user

log = logging.getLogger(__name__)

USERNAME_RE = re.compile(r"^[A-Za-z0-9_.@+-]{2,150}$")  # Django's username characters
PASSWORD_BYTES = 12  # 16 URL-safe characters: the one-time password shown to the steward


class AccountRefused(ValueError):
    """The account cannot be created; the message names why."""


def create_analyst(username: str, *, created_by) -> tuple[object, str]:
    """Create an analyst with a random one-time password; returns (user, password). The steward passes
    the password on; the analyst must change it at the first sign-in (``FirstPasswordMiddleware``)."""
    name = (username or "").strip()
    if not USERNAME_RE.match(name):
        raise AccountRefused(f"a username has 2-150 letters, digits or _ . @ + -, got {name[:40]!r}")
    if get_user_model().objects.filter(username__iexact=name).exists():
        raise AccountRefused(f"an account named {name!r} already exists")
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    try:
        with transaction.atomic():
            user = make_user(name, password, role=Profile.ANALYST)
            Profile.objects.filter(user=user).update(must_change_password=True)
    except IntegrityError:
        raise AccountRefused(f"an account named {name!r} already exists") from None
    log.info("analyst %s created by steward %s", name, getattr(created_by, "username", "?"))
    return user, password
