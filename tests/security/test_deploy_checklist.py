"""Deploy readiness (Django's deployment checklist): production settings come from the environment
and pass ``manage.py check --deploy --fail-level WARNING``; no secret is in the repository; private
files are reachable only through views that check access; every form needs its CSRF token; session
and password settings follow the checklist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_ENV = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "prod-" + "k3y-" * 16,  # 50+ characters, varied: passes security.W009
    "DJANGO_ALLOWED_HOSTS": "dp.example.org",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://dp.example.org",
    "DJANGO_SECURE_COOKIES": "1",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_BEHIND_PROXY": "1",
}


def _run(args: list[str], env: dict, tmp_path) -> subprocess.CompletedProcess:
    base = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "dpportal.settings",
        "PYTHONPATH": str(ROOT),
        "DPPORTAL_DATA_DIR": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_passes_with_production_environment(tmp_path):
    out = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION_ENV, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_check_deploy_fails_without_it(tmp_path):
    """The gate has teeth: the development defaults are refused."""
    out = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], {}, tmp_path)
    assert out.returncode != 0
    for code in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert code in out.stderr + out.stdout, code


def test_production_settings_follow_the_checklist(tmp_path):
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; print(json.dumps({k: "
        "getattr(s, k) for k in ['DEBUG', 'SECRET_KEY', 'ALLOWED_HOSTS', 'SESSION_COOKIE_SECURE', "
        "'CSRF_COOKIE_SECURE', 'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', "
        "'SESSION_COOKIE_HTTPONLY', 'SESSION_COOKIE_SAMESITE', 'CSRF_COOKIE_SAMESITE', 'X_FRAME_OPTIONS', "
        "'SECURE_CONTENT_TYPE_NOSNIFF', 'SECURE_PROXY_SSL_HEADER', 'CSRF_TRUSTED_ORIGINS']}, default=list))"
    )
    out = _run(["-c", code], PRODUCTION_ENV, tmp_path)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["DEBUG"] is False and s["SECRET_KEY"] == PRODUCTION_ENV["DJANGO_SECRET_KEY"]
    assert s["ALLOWED_HOSTS"] == ["dp.example.org"] and s["CSRF_TRUSTED_ORIGINS"] == ["https://dp.example.org"]
    assert s["SESSION_COOKIE_SECURE"] and s["CSRF_COOKIE_SECURE"] and s["SECURE_SSL_REDIRECT"]
    assert s["SECURE_HSTS_SECONDS"] >= 31536000 and s["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert s["SESSION_COOKIE_HTTPONLY"] and s["SESSION_COOKIE_SAMESITE"] in ("Lax", "Strict")
    assert s["CSRF_COOKIE_SAMESITE"] in ("Lax", "Strict")
    assert s["X_FRAME_OPTIONS"] == "DENY" and s["SECURE_CONTENT_TYPE_NOSNIFF"]
    assert s["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_debug_is_off_unless_asked_for_and_a_bad_value_is_refused(tmp_path):
    code = "import django; django.setup(); from django.conf import settings as s; print(s.DEBUG)"
    assert _run(["-c", code], {}, tmp_path).stdout.strip() == "False"
    bad = _run(["-c", code], {"DJANGO_DEBUG": "perhaps"}, tmp_path)
    assert bad.returncode != 0 and "DJANGO_DEBUG must be a boolean" in bad.stderr


@pytest.mark.slow
def test_without_an_env_key_the_secret_key_lives_in_the_private_data_dir(tmp_path):
    code = "import django; django.setup(); from django.conf import settings as s; print(s.SECRET_KEY)"
    first = _run(["-c", code], {}, tmp_path).stdout.strip()
    assert len(first) >= 50 and first == (tmp_path / "secret_key").read_text().strip()
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0  # owner-only file
    assert _run(["-c", code], {}, tmp_path).stdout.strip() == first  # stable across restarts


def test_the_password_validators_and_hasher_follow_the_checklist():
    names = {v["NAME"].rsplit(".", 1)[1] for v in django_settings.AUTH_PASSWORD_VALIDATORS}
    assert names >= {
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    }
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    for weak in ("password", "12345678", "abc"):
        with pytest.raises(ValidationError):
            validate_password(weak)


# -- secrets never in the repository -----------------------------------------------------------------
SECRET_PATTERNS = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----|SECRET_KEY\s*=\s*['\"][^'\"]{8,}['\"]|AKIA[0-9A-Z]{16}"
    r"|(?:password|passwd|api_key|token)\s*=\s*['\"][A-Za-z0-9+/_\-]{20,}['\"]",
    re.I,
)


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return out.stdout.splitlines()


def test_no_secrets_or_private_data_files_are_tracked():
    files = _tracked_files()
    forbidden = [
        f
        for f in files
        if re.search(r"(^|/)(\.env|secret_key|.*\.sqlite3|.*\.pem|.*\.key)$", f)
        or f.startswith(("var/", "test-artifacts/"))
    ]
    assert not forbidden, forbidden
    hits = []
    for f in files:
        path = ROOT / f
        if (
            path.suffix in {".py", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".env", ".sh", ".md", ".txt", ".json"}
            and path.is_file()
            and path.stat().st_size < 2_000_000
            and not f.startswith("tests/")
        ):  # test fixtures
            hits += [f"{f}: {m.group(0)[:40]}" for m in SECRET_PATTERNS.finditer(path.read_text(errors="ignore"))]
    assert not hits, hits


def test_the_secret_pattern_catches_a_planted_key():
    assert SECRET_PATTERNS.search('SECRET_KEY = "django-insecure-abcdefgh12345"')
    assert SECRET_PATTERNS.search("-----BEGIN RSA PRIVATE KEY-----")


def test_compose_takes_the_secrets_from_the_environment():
    compose = (ROOT / "docker-compose.yml").read_text()
    for line in compose.splitlines():
        if re.search(r"(SECRET_KEY|PASSWORD)\s*:", line):
            assert "${" in line, f"a literal secret in docker-compose.yml: {line.strip()}"


# -- private files only through authorized views --------------------------------------------------------
def test_private_storage_is_outside_every_served_directory():
    data = Path(django_settings.DATA_DIR).resolve()
    served = [Path(p).resolve() for p in django_settings.STATICFILES_DIRS] + [Path(django_settings.STATIC_ROOT)]
    for d in served:
        assert data not in d.parents and d not in data.parents and d != data, (d, data)
    assert not getattr(django_settings, "MEDIA_URL", "") or django_settings.MEDIA_URL in ("", "/")
    assert not getattr(django_settings, "MEDIA_ROOT", "")


def test_raw_and_release_files_have_no_url(world):
    raw = world.dataset.file_path  # e.g. uploads/<key>.csv, relative to DATA_DIR
    out = world.release.output_file
    client = world.client(world.owner)
    for path in (raw, out, world.release.summary_file):
        for prefix in ("/", "/static/", "/media/", "/static/../", "/uploads/", "/var/", "/data/"):
            if prefix + path == f"/releases/{world.release.pk}/synthetic.csv":
                continue  # that IS the authorized download view (tested in the access matrix)
            assert client.get(prefix + path).status_code == 404, prefix + path


# -- CSRF on every form -----------------------------------------------------------------------------------
def _web_posts():
    from tests.security.test_access_matrix import MATRIX

    for _route, cases in sorted(MATRIX.items()):
        for case in cases:
            if case.method == "post" and not case.url.startswith("/api/"):
                yield case


def test_every_web_post_without_the_token_is_403(world):
    from tests.security.test_access_matrix import upload_body

    posts = list(_web_posts())
    assert len(posts) >= 12
    for case in posts:
        client = Client(enforce_csrf_checks=True)
        client.force_login(world.owner)
        data = upload_body() if case.data == "upload" else (case.data or {})
        resp = client.post(case.url.format(d=world.dataset.pk, r=world.release.pk), data)
        assert resp.status_code == 403, (case.url, resp.status_code)


def test_login_itself_needs_the_token():
    client = Client(enforce_csrf_checks=True)
    assert client.post("/accounts/login/", {"username": "x", "password": "y"}).status_code == 403


def test_a_post_with_the_token_passes(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    page = client.get(f"/datasets/{world.dataset.pk}/")
    token = page.cookies["csrftoken"].value
    resp = client.post(
        f"/datasets/{world.dataset.pk}/grants/", {"username": "stan", "action": "grant", "csrfmiddlewaretoken": token}
    )
    assert resp.status_code == 302


def test_every_post_form_in_the_templates_carries_the_token():
    missing = []
    for path in sorted(ROOT.glob("**/templates/**/*.html")):
        if ".venv" in path.parts:
            continue
        text = path.read_text()
        for m in re.finditer(r"<form\b[^>]*method=[\"']?post[^>]*>(.*?)</form>", text, re.S | re.I):
            if "{% csrf_token %}" not in m.group(1):
                missing.append(f"{path.relative_to(ROOT)}: {m.group(0)[:80]}")
    assert not missing, missing


def test_the_api_uses_tokens_not_the_session_cookie(world):
    """API views are CSRF-exempt, so they must never act on a session cookie alone."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    resp = client.put(f"/api/datasets/{world.dataset.pk}/budget/", '{"epsilon": "9"}', content_type="application/json")
    assert resp.status_code == 401
