"""A password change revokes every API token of the user, as it logs out the user's other web sessions."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import pre_save

from .models import Token


def revoke_tokens_on_password_change(sender, instance, update_fields=None, **kwargs):
    """A new password (``set_password``: the admin, the password page, ``changepassword``) or an unusable
    one. Not the rehash Django does at login when the hasher's settings change (same password)."""
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    changed = getattr(instance, "_password", None) is not None or not instance.has_usable_password()
    if not changed:
        return
    old = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if old is not None and old != instance.password:
        Token.objects.filter(user_id=instance.pk).delete()


def connect():
    pre_save.connect(
        revoke_tokens_on_password_change,
        sender=get_user_model(),
        dispatch_uid="dpportal-revoke-tokens-on-password-change",
    )
