"""Deploy files: docker-compose.yml parses and wires nginx, gunicorn, the workers, MinIO, Redis and
PostgreSQL; the settings read the environment it sets
(PyYAML is not a dependency: a strict parser for the block-YAML subset used)."""

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


APP_SERVICES = ("migrate", "web", "worker-synthesis", "worker-fast", "worker-evaluation")
SHARED_ENV = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "DJANGO_SECRET_KEY",
    "DPPORTAL_S3_BUCKET",
    "DPPORTAL_S3_ENDPOINT_URL",
    "DPPORTAL_S3_SSE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)


def test_compose_runs_nginx_gunicorn_workers_and_minio_sharing_no_disk(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "minio", "minio-init", "nginx", *APP_SERVICES}
    assert {services[n]["image"] for n in APP_SERVICES} == {"dpportal:latest"}  # one image, built once
    assert services["migrate"]["build"] == "."
    web = services["web"]
    assert web["command"][:2] == ["gunicorn", "dpportal.wsgi:application"]
    assert web["restart"] == "unless-stopped" and web["healthcheck"]["test"][0] == "CMD"
    assert "ports" not in web and web["environment"]["DJANGO_BEHIND_PROXY"] == "1"
    # nginx is the only published port; gunicorn waits for the migrations, nginx for a healthy gunicorn
    assert [n for n, svc in services.items() if "ports" in svc] == ["nginx"]
    assert web["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["nginx"]["depends_on"]["web"]["condition"] == "service_healthy"
    # one worker service per queue the settings declare, each restarted by Compose
    from dpportal import settings

    queues = {q.name for q in settings.CELERY_TASK_QUEUES}
    workers = {n: services[n] for n in services if n.startswith("worker-")}
    assert {svc["command"][svc["command"].index("-Q") + 1] for svc in workers.values()} == queues
    for name, svc in workers.items():
        assert svc["command"][:4] == ["celery", "-A", "dpportal", "worker"] and svc["restart"] == "unless-stopped"
    # no shared disk: web and workers mount nothing; they share PostgreSQL, Redis and the bucket
    for name in APP_SERVICES:
        env = services[name]["environment"]
        assert name == "migrate" or "volumes" not in services[name], name
        assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0" and env["DATABASE_URL"].startswith("postgres://")
        assert {k: env[k] for k in SHARED_ENV} == {k: web["environment"][k] for k in SHARED_ENV}, name
    assert web["environment"]["DPPORTAL_S3_ENDPOINT_URL"] == "http://minio:9000"
    assert services["minio-init"]["entrypoint"][-1].endswith("store/" + web["environment"]["DPPORTAL_S3_BUCKET"])
    assert (ROOT / "Dockerfile").read_text().count("FROM ") == 1


def test_the_nginx_service_fills_every_variable_of_the_shipped_config(compose):
    from dpportal import settings

    nginx = compose["services"]["nginx"]
    template = (ROOT / "deploy" / "nginx.conf").read_text()
    assert set(re.findall(r"\$\{([A-Z_]+)\}", template)) == set(nginx["environment"])
    assert "./deploy/nginx.conf:/etc/nginx/templates/default.conf.template:ro" in nginx["volumes"]
    assert (
        nginx["environment"]["DPPORTAL_UPSTREAM"] == "web:8000"
        and "0.0.0.0:8000" in compose["services"]["web"]["command"]
    )
    # the body limit is the upload limit + the 1 MB of multipart slack the application allows
    upload = int(compose["services"]["web"]["environment"]["DPPORTAL_MAX_UPLOAD_BYTES"])
    assert upload == settings.DPPORTAL_MAX_UPLOAD_BYTES  # the default, stated where nginx's limit is derived
    assert int(nginx["environment"]["NGINX_MAX_BODY"].rstrip("m")) * 1024 * 1024 == upload + 1024 * 1024
    assert "static:/srv/static:ro" in nginx["volumes"] and nginx["environment"]["DPPORTAL_STATIC_ROOT"] == "/srv/static"
    assert compose["services"]["migrate"]["environment"]["DJANGO_STATIC_ROOT"] == "/srv/static"


def _expand(value: str) -> str:
    """${VAR:-default} -> default; ${VAR:?msg} -> a test value."""
    value = re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)
    return re.sub(r"\$\{([A-Z0-9_]+):\?[^}]*\}", r"test-\1", value)


def test_settings_read_the_environment_compose_sets(compose, tmp_path):
    env = {k: _expand(v) for k, v in compose["services"]["web"]["environment"].items()}
    env["DPPORTAL_DATA_DIR"] = str(tmp_path)  # /data does not exist here; the variable itself is checked
    code = (
        "import json; from django.conf import settings as s; d = s.DATABASES['default']; print(json.dumps("
        "[d['ENGINE'], d['HOST'], d['PORT'], d['NAME'], d['USER'], s.CELERY_BROKER_URL, s.SECRET_KEY, "
        "s.ALLOWED_HOSTS, str(s.DATA_DIR), s.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'], "
        "s.CELERY_TASK_TIME_LIMIT, s.STORAGES['dpportal']['BACKEND'], "
        "s.STORAGES['dpportal']['OPTIONS']['bucket_name'], s.STORAGES['dpportal']['OPTIONS']['endpoint_url'], "
        "s.DPPORTAL_BEHIND_PROXY]))"
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
    engine, host, port, name, user, broker, key, hosts, data_dir, visibility, limit, *rest = json.loads(out.stdout)
    storage_backend, bucket, endpoint, behind_proxy = rest
    assert (storage_backend, bucket, endpoint) == ("storages.backends.s3.S3Storage", "dpportal", "http://minio:9000")
    assert behind_proxy is True  # gunicorn's only client is nginx, which sets X-Forwarded-*
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
