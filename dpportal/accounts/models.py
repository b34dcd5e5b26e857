"""Roles: a steward owns datasets and releases; an analyst downloads releases of datasets a steward
granted them (grants live on ``Dataset.analysts``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Profile(models.Model):
    STEWARD = "steward"
    ANALYST = "analyst"
    ROLES = [(STEWARD, "Data steward"), (ANALYST, "Analyst")]

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=16, choices=ROLES, default=ANALYST)
    # an account created with a one-time password: every page leads to the password change until it is done
    must_change_password = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.user.username} ({self.role})"


def must_change_password(user) -> bool:
    try:
        return user.is_authenticated and user.profile.must_change_password
    except Profile.DoesNotExist:
        return False


def role_of(user) -> str | None:
    if not user.is_authenticated:
        return None
    try:
        return user.profile.role
    except Profile.DoesNotExist:
        return None


def is_steward(user) -> bool:
    return role_of(user) == Profile.STEWARD


def make_user(username: str, password: str, *, role: str, email: str = ""):
    """Create a user with a role (used by create_steward, the demo account and tests)."""
    from django.contrib.auth import get_user_model

    if role not in dict(Profile.ROLES):
        raise ValueError(f"role must be one of {list(dict(Profile.ROLES))}, got role={role!r}")
    user = get_user_model().objects.create_user(username=username, password=password, email=email)
    Profile.objects.create(user=user, role=role)
    return user


class LoginFailure(models.Model):
    """One failed login, kept for the throttle's window (``dpportal/accounts/throttle.py``): ``scope`` is
    the client address alone, or the address and the username tried."""

    scope = models.CharField(max_length=300, db_index=True)
    at = models.DateTimeField(db_index=True)
