"""API tokens: only a sha256 of the key is stored; the key is shown once, at creation."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Token(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    @classmethod
    def issue(cls, user) -> str:
        key = secrets.token_urlsafe(32)
        cls.objects.create(user=user, key_hash=hash_key(key))
        return key

    @classmethod
    def user_for(cls, key: str):
        token = cls.objects.select_related("user").filter(key_hash=hash_key(key)).first()
        if token is None or not token.user.is_active:
            return None
        return token.user
