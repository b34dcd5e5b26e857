"""Typed readers for settings from the environment. Each rejects a bad value with a message that
names the variable and repeats the value (no Django import: usable and testable on its own)."""

from __future__ import annotations

import os
from urllib.parse import parse_qs, unquote, urlsplit


class EnvError(ValueError):
    pass


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise EnvError(f"{name} must be a boolean (1/0, true/false), got {name}={raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise EnvError(f"{name} must be an integer, got {name}={raw!r}") from None
    if minimum is not None and value < minimum:
        raise EnvError(f"{name} must be >= {minimum}, got {name}={raw!r}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise EnvError(f"{name} must be a number, got {name}={raw!r}") from None
    if minimum is not None and value < minimum:
        raise EnvError(f"{name} must be >= {minimum}, got {name}={raw!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


# SQLite serialises writers. A writer waits up to 20 s for the lock (the busy timeout), and every
# transaction takes the write lock when it begins (IMMEDIATE): a transaction that read first and then
# wrote could not wait for the lock (SQLite refuses the upgrade at once to avoid a deadlock) and failed
# with "database is locked" whenever another writer held the lock.
SQLITE_OPTIONS = {"timeout": 20, "transaction_mode": "IMMEDIATE"}


def parse_database_url(url: str) -> dict:
    """``postgres://user:pass@host:5432/name`` or ``sqlite:///path/db.sqlite3`` -> Django DATABASES entry."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        # dj-database-url convention: sqlite:///relative/path, sqlite:////absolute/path
        path = unquote(url.split("://", 1)[1])
        path = path[1:] if path.startswith("/") else path
        if not path:
            raise EnvError(f"DATABASE_URL for sqlite needs a file path, got DATABASE_URL={url!r}")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path, "OPTIONS": dict(SQLITE_OPTIONS)}
    if scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise EnvError(f"DATABASE_URL needs a database name, got DATABASE_URL={_redact(url)!r}")
        try:
            port = parts.port
        except ValueError:
            raise EnvError(f"DATABASE_URL has a bad port, got DATABASE_URL={_redact(url)!r}") from None
        options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(port or ""),
            "OPTIONS": options,
        }
    raise EnvError(f"DATABASE_URL must start with postgres:// or sqlite://, got DATABASE_URL={_redact(url)!r}")


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(parts.password, "***")
    return url
