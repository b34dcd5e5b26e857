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

# One worker per queue (issue 19, docs/operations.md): long fits on "synthesis" (WORKERS jobs at once, each
# with cores / WORKERS threads), draws and short releases on "fast", utility evaluations on "evaluation"
# (one thread each), so a draw never waits behind a long fit, on the embedded broker as on Redis.
worker() {  # queue concurrency threads-per-job
  DPPORTAL_WORKER_CONCURRENCY="$2" DPPORTAL_THREADS_PER_JOB="$3" "$PY" -m celery -A dpportal worker -Q "$1" \
    -n "$1@%h" --loglevel=INFO --concurrency="$2" --prefetch-multiplier=1 &
}
# Threads per fit: one core is kept for the fast and evaluation workers (short jobs), the rest shared by
# the synthesis jobs; on 2 cores that is 1 thread (measured: 2 threads per job spin on a busy 2-core
# machine, 2.5x the CPU for the same burst, docs/operations.md). DPPORTAL_THREADS_PER_JOB overrides.
CORES=$(nproc)
FIT_THREADS=${DPPORTAL_THREADS_PER_JOB:-$(( (CORES - 1) / ${WORKERS:-1} > 1 ? (CORES - 1) / ${WORKERS:-1} : 1 ))}
worker synthesis "${WORKERS:-1}" "$FIT_THREADS"
WORKER=$!
worker fast 1 1
FAST=$!
worker evaluation 1 1
EVAL=$!
cleanup() {
  trap - EXIT
  # A second Ctrl-C reaches Celery directly and aborts the running job (cold shutdown).
  trap 'kill -QUIT "$WORKER" "$FAST" "$EVAL" 2>/dev/null || true' INT TERM
  echo "dpportal: stopping; a running job is finished first (Ctrl-C again aborts it)"
  [ -n "${WEB:-}" ] && kill -TERM "$WEB" 2>/dev/null || true
  kill -TERM "$WORKER" "$FAST" "$EVAL" 2>/dev/null || true
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
wait -n "$WORKER" "$FAST" "$EVAL" "$WEB"
