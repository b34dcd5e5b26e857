"""API tokens: only a sha256 of the key is stored; the key is shown once, at creation. A user holds at
most ``MAX_TOKENS_PER_USER`` named tokens (issuing a name again replaces that token), and every token of
a user is revoked when the user's password changes (``dpportal/api/signals.py``)."""

from __future__ import annotations

import hashlib
import secrets
import unicodedata

from django.conf import settings
from django.db import models, transaction

MAX_TOKENS_PER_USER = 10
MAX_NAME_LENGTH = 64
DEFAULT_NAME = "api"


class TokenRefused(ValueError):
    """A token request that cannot be granted (message names why; ``status`` for the API)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def check_name(name) -> str:
    """A token name: 1-64 printable characters (no control, format or bidi characters)."""
    if not isinstance(name, str) or not name.strip():
        raise TokenRefused("a token name must be a non-empty string")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise TokenRefused(f"a token name may be at most {MAX_NAME_LENGTH} characters, got {len(name)}")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise TokenRefused("a token name may not contain control, format or invisible characters")
    return name


class Token(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=MAX_NAME_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    @classmethod
    def issue(cls, user, name: str = "") -> str:
        """A new key for ``user``. A named token replaces the user's token of that name; a new name
        beyond ``MAX_TOKENS_PER_USER`` tokens is refused (``TokenRefused``)."""
        key = secrets.token_urlsafe(32)
        with transaction.atomic():
            if name:
                name = check_name(name)
                cls.objects.filter(user=user, name=name).delete()
                if cls.objects.filter(user=user).count() >= MAX_TOKENS_PER_USER:
                    raise TokenRefused(
                        f"you already hold {MAX_TOKENS_PER_USER} API tokens: revoke one "
                        "(DELETE /api/auth/tokens/{id}/) or reuse a name to replace its token",
                        409,
                    )
            cls.objects.create(user=user, key_hash=hash_key(key), name=name)
        return key

    @classmethod
    def for_key(cls, key: str):
        """The token of an active user with this key, or None."""
        token = cls.objects.select_related("user").filter(key_hash=hash_key(key)).first()
        if token is None or not token.user.is_active:
            return None
        return token

    @classmethod
    def user_for(cls, key: str):
        token = cls.for_key(key)
        return token.user if token else None

    def as_dict(self, current=None) -> dict:
        return {
            "id": self.pk,
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "current": current is not None and current.pk == self.pk,
        }
