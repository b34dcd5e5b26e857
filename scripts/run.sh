#!/usr/bin/env bash
# `make run`: migrate, create the demo steward (once), then start and supervise the Celery workers and the
# web server. A child that exits is restarted (the others keep serving); Ctrl-C stops
# them all. Embedded defaults (SQLite + filesystem broker) need no server; DATABASE_URL and
# CELERY_BROKER_URL / REDIS_URL switch to PostgreSQL / Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}
DATA_DIR=${DPPORTAL_DATA_DIR:-var}
mkdir -p "$DATA_DIR/uploads/tmp"

"$PY" manage.py migrate --noinput -v0
"$PY" manage.py create_demo_steward
"$PY" manage.py sweep_releases  # releases and files a previous run left (killed jobs, upload temporaries)

# One worker per queue (docs/operations.md): long fits on "synthesis" (WORKERS jobs at once, each with
# cores / WORKERS threads), draws and short releases on "fast", utility evaluations on "evaluation" (one
# thread each), so a draw never waits behind a long fit, on the embedded broker as on Redis.
# Long fits and evaluations run at a lower CPU priority (nice 10), so that pages and draws keep answering
# while a fit holds the cores (DPPORTAL_WORKER_NICE overrides).
worker() {  # queue concurrency threads-per-job niceness
  DPPORTAL_WORKER_CONCURRENCY="$2" DPPORTAL_THREADS_PER_JOB="$3" nice -n "$4" "$PY" -m celery -A dpportal worker \
    -Q "$1" -n "$1@%h" --loglevel=INFO --concurrency="$2" --prefetch-multiplier=1 &
}
NICE=${DPPORTAL_WORKER_NICE:-10}
# Threads per fit: one core is kept for the fast and evaluation workers (short jobs), the rest shared by
# the synthesis jobs; on 2 cores that is 1 thread (measured: 2 threads per job spin on a busy 2-core
# machine, 2.5x the CPU for the same burst, docs/operations.md). DPPORTAL_THREADS_PER_JOB overrides.
CORES=$(nproc)
FIT_THREADS=${DPPORTAL_THREADS_PER_JOB:-$(( (CORES - 1) / ${WORKERS:-1} > 1 ? (CORES - 1) / ${WORKERS:-1} : 1 ))}

# The web server: waitress (dpportal/serve.py) on $HOST:$PORT, WEB_THREADS threads. It reads each request
# whole in its event loop before a thread runs Django, so slow clients hold no thread; bodies over the
# upload limit are 413 before Django.
web() {
  if [ -n "${DEV:-}" ]; then  # DEV=1 make run: Django's development server (one process, not for load)
    "$PY" manage.py runserver "$HOST:$PORT" --noreload &
  else
    "$PY" -m dpportal.serve --listen "$HOST:$PORT" &
  fi
}

declare -A PIDS=()
start() {  # name
  case "$1" in
    synthesis) worker synthesis "${WORKERS:-1}" "$FIT_THREADS" "$NICE" ;;
    fast) worker fast 1 1 0 ;;
    evaluation) worker evaluation 1 1 "$NICE" ;;
    web) web ;;
  esac
  PIDS[$1]=$!
}

STOPPING=
cleanup() {  # [exit status]
  local status=${1:-0}
  STOPPING=1
  trap - EXIT
  # A second Ctrl-C reaches Celery directly and aborts the running job (cold shutdown).
  trap 'kill -QUIT "${PIDS[synthesis]}" "${PIDS[fast]}" "${PIDS[evaluation]}" 2>/dev/null || true' INT TERM
  echo "dpportal: stopping; a running job is finished first (Ctrl-C again aborts it)"
  kill -TERM "${PIDS[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  exit "$status"
}
trap cleanup INT TERM EXIT

for name in synthesis fast evaluation web; do start "$name"; done
echo "dpportal: serving http://$HOST:$PORT (Ctrl-C stops web and workers)"

# Supervise: a child that exits (killed, out of memory) is restarted after a second; the others keep
# serving. The sweep settles the release a killed worker was running (no heartbeat). A child that exits
# 5 times within a minute (the port is taken, a broken setting) stops everything instead of looping.
declare -A EXITS=() SINCE=()
restart() {  # name
  local now; now=$(date +%s)
  if [ $(( now - ${SINCE[$1]:-0} )) -gt 60 ]; then SINCE[$1]=$now; EXITS[$1]=0; fi
  EXITS[$1]=$(( ${EXITS[$1]} + 1 ))
  if [ "${EXITS[$1]}" -gt 5 ]; then
    echo "dpportal: $1 exited ${EXITS[$1]} times within a minute; stopping (see its messages above)"
    cleanup 1
  fi
  echo "dpportal: $1 (pid ${PIDS[$1]}) exited; restarting it"
  sleep 1
  start "$1"
}
while [ -z "$STOPPING" ]; do
  wait -n "${PIDS[@]}" 2>/dev/null || true
  [ -n "$STOPPING" ] && break
  for name in "${!PIDS[@]}"; do
    kill -0 "${PIDS[$name]}" 2>/dev/null || restart "$name"
  done
done
