"""Deploy files: docker-compose.yml parses and wires web/worker/redis/postgres; the settings read the
environment it sets (PyYAML is not a dependency: a strict parser for the block-YAML subset used)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpportal.env import EnvError, env_bool, env_int, parse_database_url

ROOT = Path(__file__).resolve().parents[2]


def parse_block_yaml(text: str):
    """Block mappings, block sequences, JSON flow lists and quoted/plain scalars; anything else fails."""
    lines = []
    for raw in text.splitlines():
        stripped = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if stripped.strip():
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise ValueError(f"tab indentation: {raw!r}")
            lines.append((len(stripped) - len(stripped.lstrip()), stripped.strip()))

    def scalar(v: str):
        if v.startswith("["):
            return json.loads(v)
        if v[:1] in "\"'":
            if v[-1] != v[0]:
                raise ValueError(f"unterminated string {v!r}")
            return v[1:-1]
        return v

    def block(i: int, indent: int):
        if lines[i][1].startswith("- "):
            out = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
                out.append(scalar(lines[i][1][2:].strip()))
                i += 1
            return out, i
        out = {}
        while i < len(lines) and lines[i][0] == indent:
            m = re.fullmatch(r"([A-Za-z0-9_.-]+):(?: (.*))?", lines[i][1])
            if not m:
                raise ValueError(f"not a mapping entry: {lines[i][1]!r}")
            key, value = m.group(1), m.group(2)
            if key in out:
                raise ValueError(f"duplicate key {key!r}")
            i += 1
            if value:
                out[key] = scalar(value)
            elif i < len(lines) and lines[i][0] > indent:
                out[key], i = block(i, lines[i][0])
            else:
                out[key] = None
        return out, i

    doc, end = block(0, lines[0][0])
    if end != len(lines):
        raise ValueError(f"unparsed line: {lines[end][1]!r}")
    return doc


@pytest.fixture(scope="module")
def compose():
    return parse_block_yaml((ROOT / "docker-compose.yml").read_text())


def test_compose_has_web_worker_redis_postgres_and_an_uploads_volume(compose):
    services = compose["services"]
    assert set(services) == {"web", "worker", "redis", "postgres"}
    assert services["web"]["image"] == services["worker"]["image"]  # the worker is the web image
    assert "gunicorn" in " ".join(services["web"]["command"])
    assert services["worker"]["command"][:3] == ["celery", "-A", "dpportal"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DPPORTAL_DATA_DIR"] == "/data" and "uploads:/data" in services[name]["volumes"]
        assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
        assert env["DATABASE_URL"].startswith("postgres://dpportal:")
    assert "uploads" in compose["volumes"]
    assert (ROOT / "Dockerfile").read_text().count("FROM ") == 1


def _expand(value: str) -> str:
    """${VAR:-default} -> default; ${VAR:?msg} -> a test value."""
    value = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)
    return re.sub(r"\$\{([A-Z_]+):\?[^}]*\}", r"test-\1", value)


def test_settings_read_the_environment_compose_sets(compose, tmp_path):
    env = {k: _expand(v) for k, v in compose["services"]["web"]["environment"].items()}
    env["DPPORTAL_DATA_DIR"] = str(tmp_path)  # /data does not exist here; the variable itself is checked
    code = (
        "import json; from django.conf import settings as s; d = s.DATABASES['default']; print(json.dumps("
        "[d['ENGINE'], d['HOST'], d['PORT'], d['NAME'], d['USER'], s.CELERY_BROKER_URL, s.SECRET_KEY, "
        "s.ALLOWED_HOSTS, str(s.DATA_DIR), s.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'], "
        "s.CELERY_TASK_TIME_LIMIT]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); " + code],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "dpportal.settings", "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    engine, host, port, name, user, broker, key, hosts, data_dir, visibility, limit = json.loads(out.stdout)
    assert (engine, host, port, name, user) == (
        "django.db.backends.postgresql",
        "postgres",
        "5432",
        "dpportal",
        "dpportal",
    )
    assert broker == "redis://redis:6379/0" and key == "test-DJANGO_SECRET_KEY"
    assert hosts == ["localhost", "127.0.0.1"] and data_dir == str(tmp_path)
    assert visibility > limit  # a long job is never redelivered while it still runs


def test_database_urls_are_parsed_without_a_dependency():
    pg = parse_database_url("postgresql://u%40x:p%2Fw@db.example:6543/name?sslmode=require")
    assert (pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"], pg["NAME"]) == (
        "u@x",
        "p/w",
        "db.example",
        "6543",
        "name",
    )
    assert pg["OPTIONS"] == {"sslmode": "require"}
    assert parse_database_url("sqlite:////abs/db.sqlite3")["NAME"] == "/abs/db.sqlite3"
    assert parse_database_url("sqlite:///rel.sqlite3")["NAME"] == "rel.sqlite3"
    with pytest.raises(EnvError, match="must start with postgres:// or sqlite://"):
        parse_database_url("mysql://x/y")
    with pytest.raises(EnvError, match="needs a database name"):
        parse_database_url("postgres://u:secret@h/")


def test_env_helpers_reject_bad_values_naming_them(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(EnvError, match="X_FLAG must be a boolean.*got X_FLAG='maybe'"):
        env_bool("X_FLAG")
    monkeypatch.setenv("X_NUM", "-3")
    with pytest.raises(EnvError, match="X_NUM must be >= 1, got X_NUM='-3'"):
        env_int("X_NUM", 5, minimum=1)
    monkeypatch.delenv("X_NUM")
    assert env_int("X_NUM", 5) == 5


def test_the_make_targets_and_ci_entry_exist():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "ensure-system-packages.sh" in makefile
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "set -euo pipefail" in ci


def test_the_deploy_check_passes_with_production_settings(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "DPPORTAL_DATA_DIR": str(tmp_path),
        "DJANGO_SECRET_KEY": "k" * 20 + "-production-test-key-with-enough-length-and-variety-8472",
        "DJANGO_SECURE_COOKIES": "1",
        "DJANGO_SECURE_SSL_REDIRECT": "1",
        "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    }
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
