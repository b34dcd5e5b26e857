"""Login throttle: failed logins (web form and ``POST /api/auth/token/``) are counted per client address
and username, and per client address, over a sliding window; past the limit, a login is refused before
the password is checked (no hashing: a guessing client cannot load the server). Counts live in the
database, so every web process shares them; no external service.

The count is taken atomically: :func:`admit` first records the attempt (one committed row per scope,
as if it had failed) and only then counts the rows in the window, its own included. Of attempts racing
each other, the k-th to record its row counts at least k rows, so at most the limit are admitted to a
password check however many arrive at once (counting first and recording after the check let 17 of 28
concurrent guesses through a limit of 10). A refused attempt removes its rows; an admitted one keeps
them as its failure, and a success removes them."""

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


ATTEMPT = "_dpportal_login_attempt"  # request attribute: the rows an admitted attempt recorded


def admit(request, username) -> int:
    """Record this login attempt and count it: 0 if it may check a password (its rows stay, counted as a
    failure until a success removes them), else the seconds to wait (nothing recorded, nothing checked)."""
    now = timezone.now()
    window = timedelta(seconds=settings.DPPORTAL_LOGIN_WINDOW_SECONDS)
    limit = settings.DPPORTAL_LOGIN_MAX_FAILURES
    scopes = _scopes(request, username)
    LoginFailure.objects.filter(scope__in=scopes, at__lt=now - window).delete()
    mine = [LoginFailure.objects.create(scope=s, at=now).pk for s in scopes]  # each committed on its own
    for scope, most in zip(scopes, (limit * PER_ADDRESS_FACTOR, limit)):
        if LoginFailure.objects.filter(scope=scope, at__gte=now - window).count() > most:
            LoginFailure.objects.filter(pk__in=mine).delete()
            return max(retry_after(request, username), 1)
    setattr(request, ATTEMPT, mine)
    return 0


def refusal(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (
        f"too many failed logins from this address: try again in {minutes} minute{'s' if minutes > 1 else ''} "
        "(nothing was checked)"
    )


def _record_failure(sender, credentials, request=None, **kwargs):
    if request is None or getattr(request, ATTEMPT, None):
        return  # admitted by admit(): its rows already count as this failure
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


def succeeded(request, user) -> None:
    """The password was right: the attempt's rows and the failures for this address and username go."""
    LoginFailure.objects.filter(pk__in=getattr(request, ATTEMPT, None) or []).delete()
    LoginFailure.objects.filter(scope=_scopes(request, user.get_username())[1]).delete()
    setattr(request, ATTEMPT, None)


def _clear_on_success(sender, request, user, **kwargs):
    if request is not None:
        succeeded(request, user)


def connect():
    user_login_failed.connect(_record_failure, dispatch_uid="dpportal-login-throttle-failure")
    user_logged_in.connect(_clear_on_success, dispatch_uid="dpportal-login-throttle-success")
