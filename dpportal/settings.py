"""dpportal settings: everything deploy-specific comes from the environment (see docs/operations.md).

Embedded defaults need no server: SQLite under DPPORTAL_DATA_DIR and kombu's filesystem broker.
DATABASE_URL switches to PostgreSQL, CELERY_BROKER_URL (or REDIS_URL) to Redis.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from kombu import Queue

from .env import SQLITE_OPTIONS, EnvError, env_bool, env_float, env_int, env_list, env_str, parse_database_url
from .private import private_dir

BASE_DIR = Path(__file__).resolve().parent.parent

# Private storage: uploads, synthetic outputs, private summaries, the filesystem broker. Never
# under static/ or a served URL: files leave only through views that check access.
DATA_DIR = Path(env_str("DPPORTAL_DATA_DIR", str(BASE_DIR / "var"))).resolve()
UPLOAD_DIR = DATA_DIR / "uploads"
RELEASE_DIR = DATA_DIR / "releases"

# Object storage (dpportal/storage.py): with DPPORTAL_S3_BUCKET set, raw uploads, synthetic tables and
# private summaries go to that S3-compatible bucket (credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
# or boto3's usual chain) and DATA_DIR is each machine's cache; unset, they stay under DATA_DIR.
DPPORTAL_S3_BUCKET = env_str("DPPORTAL_S3_BUCKET").strip()
DPPORTAL_S3_ENDPOINT_URL = env_str("DPPORTAL_S3_ENDPOINT_URL").strip() or None  # MinIO, Ceph, ...
DPPORTAL_S3_REGION = env_str("DPPORTAL_S3_REGION", "us-east-1").strip()
DPPORTAL_S3_PREFIX = env_str("DPPORTAL_S3_PREFIX").strip().strip("/")  # keys under this folder
DPPORTAL_S3_SSE = env_str("DPPORTAL_S3_SSE").strip()  # server-side encryption: "", "AES256" or "aws:kms"
DPPORTAL_S3_SSE_KMS_KEY_ID = env_str("DPPORTAL_S3_SSE_KMS_KEY_ID").strip()
if DPPORTAL_S3_SSE not in ("", "AES256", "aws:kms"):
    raise EnvError(f"DPPORTAL_S3_SSE must be empty, AES256 or aws:kms, got DPPORTAL_S3_SSE={DPPORTAL_S3_SSE!r}")


def s3_storage(bucket: str, endpoint_url=None, region="us-east-1", prefix="", sse="", kms_key_id="") -> dict:
    """STORAGES["dpportal"] for a bucket: files overwrite (keys are unique), private, multipart in 8 MB parts,
    2 at a time (about 3 parts in memory whatever the file's size), read through a temporary file past 1 MB."""
    from boto3.s3.transfer import TransferConfig

    params = {"ServerSideEncryption": sse} if sse else {}
    if sse == "aws:kms" and kms_key_id:
        params["SSEKMSKeyId"] = kms_key_id
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint_url,
            "region_name": region,
            "location": prefix,
            "file_overwrite": True,
            "default_acl": None,
            "querystring_auth": True,
            "object_parameters": params,
            "max_memory_size": 1024 * 1024,
            "transfer_config": TransferConfig(
                multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024, max_concurrency=2
            ),
        },
    }


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "dpportal": (
        s3_storage(
            DPPORTAL_S3_BUCKET,
            DPPORTAL_S3_ENDPOINT_URL,
            DPPORTAL_S3_REGION,
            DPPORTAL_S3_PREFIX,
            DPPORTAL_S3_SSE,
            DPPORTAL_S3_SSE_KMS_KEY_ID,
        )
        if DPPORTAL_S3_BUCKET
        else {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(DATA_DIR)}}
    ),
}


def _secret_key() -> str:
    key = env_str("DJANGO_SECRET_KEY")
    if key:
        return key
    # Local runs: a random key kept in the private data directory (never in the repository).
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dpportal.accounts",
    "dpportal.datasets",
    "dpportal.releases",
    "dpportal.ledger",
    "dpportal.api",
    "dpportal.dashboards",
] + env_list("DPPORTAL_EXTRA_APPS", [])

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "dpportal.methods.WebMethodsMiddleware",  # pages: GET, HEAD, POST; any other method 405 with Allow
    "dpportal.datasets.middleware.UploadSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "dpportal.accounts.middleware.FirstPasswordMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "dpportal.urls"
WSGI_APPLICATION = "dpportal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dpportal.accounts.context.role",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL")
DATABASES = {
    "default": parse_database_url(_database_url)
    if _database_url
    else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "db.sqlite3",
        "OPTIONS": dict(SQLITE_OPTIONS),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
WHITENOISE_USE_FINDERS = True  # serve static/ directly in `make run` (no collectstatic needed)

# Security (production values come from the environment; see docs/operations.md)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
DPPORTAL_BEHIND_PROXY = env_bool("DJANGO_BEHIND_PROXY", False)
if DPPORTAL_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Login throttle (dpportal/accounts/throttle.py): failed logins per address and username in the window;
# an address alone may fail 5 times as often
DPPORTAL_LOGIN_MAX_FAILURES = env_int("DPPORTAL_LOGIN_MAX_FAILURES", 10, minimum=1)
DPPORTAL_LOGIN_WINDOW_SECONDS = env_int("DPPORTAL_LOGIN_WINDOW_SECONDS", 900, minimum=1)
# Upload temporaries and unnamed raw files untouched this long are removed by the sweep (releases/leftovers.py)
DPPORTAL_LEFTOVER_SECONDS = env_int("DPPORTAL_LEFTOVER_SECONDS", 3600, minimum=60)

# Upload limits (each checked while streaming, with a message naming the limit)
DPPORTAL_MAX_UPLOAD_BYTES = env_int("DPPORTAL_MAX_UPLOAD_BYTES", 5 * 1024**3, minimum=1)
DPPORTAL_MAX_ROWS = env_int("DPPORTAL_MAX_ROWS", 10_000_000, minimum=1)
DPPORTAL_MAX_COLUMNS = env_int("DPPORTAL_MAX_COLUMNS", 200, minimum=1)
DPPORTAL_MAX_FIELD_LENGTH = env_int("DPPORTAL_MAX_FIELD_LENGTH", 1000, minimum=1)
DPPORTAL_MAX_SYNTHETIC_ROWS = env_int("DPPORTAL_MAX_SYNTHETIC_ROWS", 1_000_000, minimum=1)
DPPORTAL_DRAFT_SAMPLE_ROWS = env_int("DPPORTAL_DRAFT_SAMPLE_ROWS", 200_000, minimum=1)
# ... and at most this many cells (rows x columns): the web process holds the draft's sample as text
DPPORTAL_DRAFT_SAMPLE_CELLS = env_int("DPPORTAL_DRAFT_SAMPLE_CELLS", 2_000_000, minimum=1)
# Confirming a schema reads every record: in the request up to this many cells (rows x columns), else on a
# worker with a progress page (dpportal/datasets/checks.py)
DPPORTAL_SCHEMA_CHECK_INLINE_CELLS = env_int("DPPORTAL_SCHEMA_CHECK_INLINE_CELLS", 2_000_000, minimum=0)
# Memory one release job may plan to use (Mechanism.planned_memory_bytes), refused before reservation
DPPORTAL_MAX_JOB_MEMORY_MB = env_int("DPPORTAL_MAX_JOB_MEMORY_MB", 8192, minimum=64)
# The hard cap on each worker pool process's data memory (RLIMIT_DATA): the plan's limit plus room for the
# interpreter, libraries and estimate error; a job past it fails with MemoryError (0: no cap)
DPPORTAL_JOB_MEMORY_LIMIT_MB = env_int("DPPORTAL_JOB_MEMORY_LIMIT_MB", DPPORTAL_MAX_JOB_MEMORY_MB + 2048, minimum=0)
# The whole request body (file included) may not exceed the upload cap by much; Django itself does
# not count file data against DATA_UPLOAD_MAX_MEMORY_SIZE, so the upload view enforces the cap.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_TEMP_DIR = None  # set below once DATA_DIR exists
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # non-file fields (schema JSON, forms)
# The schema page posts 7 fields per column: leave room for the widest table allowed.
DATA_UPLOAD_MAX_NUMBER_FIELDS = DPPORTAL_MAX_COLUMNS * 8 + 100

# Celery
_broker = env_str("CELERY_BROKER_URL") or env_str("REDIS_URL")
BROKER_DIR = DATA_DIR / "broker"
CELERY_TASK_TIME_LIMIT = env_int("DPPORTAL_TASK_TIME_LIMIT", 3600, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = max(CELERY_TASK_TIME_LIMIT - 30, 5)
if _broker:
    CELERY_BROKER_URL = _broker
    # Redis redelivers an unacknowledged task after the visibility timeout: keep it above the
    # hard time limit so a long job is never delivered twice while it still runs.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}
else:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "dpportal.broker:Transport"  # kombu's, with messages written atomically
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        # remote-control (pidbox) messages: without this kombu writes ./control in the cwd
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": env_float("DPPORTAL_BROKER_POLLING_INTERVAL", 0.1, minimum=0.01),
    }
CELERY_TASK_IGNORE_RESULT = True  # job state lives in the Release row
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Jobs per worker; mechanisms.resources gives each job cores // concurrency threads (docs/operations.md)
CELERY_WORKER_CONCURRENCY = env_int("DPPORTAL_WORKER_CONCURRENCY", 1, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = env_bool("DPPORTAL_TASKS_EAGER", False)
# Stranded jobs (dpportal/releases/sweeper.py, dpportal/jobs.py): a running job of any kind beats every
# HEARTBEAT seconds; one silent for STALE seconds is failed (a release settled) by the sweep every SWEEP seconds.
DPPORTAL_HEARTBEAT_SECONDS = env_float("DPPORTAL_HEARTBEAT_SECONDS", 10.0, minimum=0.1)
DPPORTAL_STALE_SECONDS = env_float("DPPORTAL_STALE_SECONDS", 60.0, minimum=1.0)
DPPORTAL_SWEEP_SECONDS = env_float("DPPORTAL_SWEEP_SECONDS", 30.0, minimum=0.1)
# Ledger anchor (dpportal/ledger/anchor.py): every new chain head is appended to this file, outside the
# database. Empty: <DATA_DIR>/ledger-anchor.log (resolved when written); "off": no anchor.
DPPORTAL_LEDGER_ANCHOR = env_str("DPPORTAL_LEDGER_ANCHOR", "")
# Queues: long fits on "synthesis"; draws and releases estimated under
# DPPORTAL_FAST_JOB_SECONDS (mechanisms/guidance/runtime.py) on "fast"; utility evaluations and risk reports on
# "evaluation".
# A worker started without -Q consumes all three; scripts/run.sh starts one worker per queue so a draw
# never waits behind a long fit (docs/operations.md).
CELERY_TASK_DEFAULT_QUEUE = "synthesis"
CELERY_TASK_QUEUES = [Queue("synthesis"), Queue("fast"), Queue("evaluation")]
CELERY_TASK_ROUTES = {
    "dpportal.dashboards.tasks.evaluate_release_task": {"queue": "evaluation"},
    "dpportal.dashboards.tasks.risk_report_task": {"queue": "evaluation"},
}
# Privacy risk reports (dpportal/dashboards/risk.py): computed on the evaluation queue after each release;
# up to RUNS refits of the mechanism (target pairs in or out, docs/privacy-model.md section 9) plus one with
# its noise off, made while max(TIME_FACTOR x the release's time, MIN_SECONDS) lasts (the first always runs).
DPPORTAL_RISK_REPORT = env_bool("DPPORTAL_RISK_REPORT", True)
DPPORTAL_RISK_RUNS = env_int("DPPORTAL_RISK_RUNS", 30, minimum=1)
DPPORTAL_RISK_TIME_FACTOR = env_float("DPPORTAL_RISK_TIME_FACTOR", 3.0, minimum=0.0)
DPPORTAL_RISK_MIN_SECONDS = env_float("DPPORTAL_RISK_MIN_SECONDS", 10.0, minimum=0.0)
DPPORTAL_FAST_JOB_SECONDS = env_float("DPPORTAL_FAST_JOB_SECONDS", 10.0, minimum=0.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
}

for _d in (
    STATIC_ROOT,
    UPLOAD_DIR,
    RELEASE_DIR,
    BROKER_DIR / "queue",
    BROKER_DIR / "processed",
    BROKER_DIR / "control",
    UPLOAD_DIR / "tmp",
):
    _d.mkdir(parents=True, exist_ok=True)
for _d in (DATA_DIR, UPLOAD_DIR, UPLOAD_DIR / "tmp", RELEASE_DIR, BROKER_DIR):
    private_dir(_d)  # 0700 (dpportal/private.py): nothing below it can be reached by another user
FILE_UPLOAD_TEMP_DIR = str(UPLOAD_DIR / "tmp")
