"""Login throttle: failed logins (web form and ``POST /api/auth/token/``) are counted per client address
and username, and per client address, over a sliding window; past the limit, a login is refused before
the password is checked (no hashing: a guessing client cannot load the server). Counts live in the
database, so every web process shares them; no external service."""

from __future__ import annotations

import hashlib
import math
import re
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.utils import timezone

from .models import LoginFailure

PER_ADDRESS_FACTOR = 5  # one address may fail this many times the per-username limit (several users behind it)


def client_address(request) -> str:
    """REMOTE_ADDR; the last X-Forwarded-For entry (appended by the proxy) behind a proxy
    (DJANGO_BEHIND_PROXY) or on a Unix socket (no REMOTE_ADDR: only the proxy in front can connect)."""
    remote = str(request.META.get("REMOTE_ADDR", ""))
    if settings.DPPORTAL_BEHIND_PROXY or not remote:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded.strip():
            return forwarded.split(",")[-1].strip()[:100]
    return remote[:100]


def _scopes(request, username) -> tuple[str, str]:
    """The address (printable characters only) and the address with a hash of the username (any text,
    NUL included, which PostgreSQL cannot store)."""
    address = re.sub(r"[^0-9A-Za-z.:\-\[\]]", "?", client_address(request))
    name = hashlib.sha256(str(username or "").strip().lower().encode("utf-8", "replace")).hexdigest()
    return f"addr:{address}", f"user:{address}:{name}"


def retry_after(request, username) -> int:
    """Seconds until a login may be tried again from this address for this username (0: now)."""
    window = timedelta(seconds=settings.DPPORTAL_LOGIN_WINDOW_SECONDS)
    since = timezone.now() - window
    limit = settings.DPPORTAL_LOGIN_MAX_FAILURES
    wait = 0.0
    for scope, most in zip(_scopes(request, username), (limit * PER_ADDRESS_FACTOR, limit)):
        times = list(
            LoginFailure.objects.filter(scope=scope, at__gte=since).order_by("-at").values_list("at", flat=True)[:most]
        )
        if len(times) >= most:  # the oldest of the last `most` failures must leave the window first
            wait = max(wait, (times[-1] + window - timezone.now()).total_seconds())
    return math.ceil(wait) if wait > 0 else 0


def refusal(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (
        f"too many failed logins from this address: try again in {minutes} minute{'s' if minutes > 1 else ''} "
        "(nothing was checked)"
    )


def _record_failure(sender, credentials, request=None, **kwargs):
    if request is None:
        return
    now = timezone.now()
    scopes = _scopes(request, credentials.get("username"))
    LoginFailure.objects.filter(
        scope__in=scopes, at__lt=now - timedelta(seconds=settings.DPPORTAL_LOGIN_WINDOW_SECONDS)
    ).delete()
    LoginFailure.objects.bulk_create([LoginFailure(scope=s, at=now) for s in scopes])


def forget_old(now=None) -> int:
    """Delete failures past the window (the sweep calls this: addresses that never fail again)."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.DPPORTAL_LOGIN_WINDOW_SECONDS)
    return LoginFailure.objects.filter(at__lt=cutoff).delete()[0]


def _clear_on_success(sender, request, user, **kwargs):
    if request is not None:
        LoginFailure.objects.filter(scope=_scopes(request, user.get_username())[1]).delete()


def connect():
    user_login_failed.connect(_record_failure, dispatch_uid="dpportal-login-throttle-failure")
    user_logged_in.connect(_clear_on_success, dispatch_uid="dpportal-login-throttle-success")
