#!/usr/bin/env bash
# `make run`: migrate, create the demo steward (once), start a Celery worker and the web server.
# Ctrl-C stops both. Embedded defaults (SQLite + filesystem broker) need no server; DATABASE_URL and
# CELERY_BROKER_URL / REDIS_URL switch to PostgreSQL / Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}

"$PY" manage.py migrate --noinput -v0
"$PY" manage.py create_demo_steward

"$PY" -m celery -A dpportal worker --loglevel=INFO --concurrency="${WORKERS:-1}" --prefetch-multiplier=1 &
WORKER=$!
cleanup() {
  trap - EXIT
  # A second Ctrl-C reaches Celery directly and aborts the running job (cold shutdown).
  trap 'kill -QUIT "$WORKER" 2>/dev/null || true' INT TERM
  echo "dpportal: stopping; a running job is finished first (Ctrl-C again aborts it)"
  [ -n "${WEB:-}" ] && kill -TERM "$WEB" 2>/dev/null || true
  kill -TERM "$WORKER" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

echo "dpportal: serving http://$HOST:$PORT (Ctrl-C stops web and worker)"
if [ -n "${DEV:-}" ]; then  # DEV=1 make run: Django's development server (one process, not for load)
  "$PY" manage.py runserver "$HOST:$PORT" --noreload &
else  # gunicorn: WEB_WORKERS processes x WEB_THREADS threads, so concurrent requests queue, not drop
  "$PY" -m gunicorn dpportal.wsgi:application --bind "$HOST:$PORT" --workers "${WEB_WORKERS:-2}" \
    --threads "${WEB_THREADS:-8}" --timeout 120 --graceful-timeout 10 --backlog 2048 --access-logfile - &
fi
WEB=$!
wait -n "$WORKER" "$WEB"
