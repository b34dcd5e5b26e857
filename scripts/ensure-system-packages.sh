#!/usr/bin/env bash
# Installs the Debian packages the test suite needs (real Redis, PostgreSQL, Chromium, nginx) when missing.
# Idempotent; does nothing when everything is present. Needs root (CI and dev machines run as root).
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
{ command -v nginx || [ -x /usr/sbin/nginx ]; } >/dev/null 2>&1 || need+=(nginx)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
