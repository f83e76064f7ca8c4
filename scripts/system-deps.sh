#!/usr/bin/env bash
# Install the system packages the test suite drives for real: PostgreSQL, Redis, Chromium (for Playwright).
# Does nothing when they are already there; needs root (or sudo) otherwise.
set -euo pipefail
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
command -v runuser >/dev/null || missing+=(util-linux)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "system-deps: installing ${missing[*]} …"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
