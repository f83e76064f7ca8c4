#!/usr/bin/env bash
# Install the system packages the test suite drives for real: Redis, Chromium (for Playwright), docker-compose
# (Debian's; `docker-compose config` checks the compose file with no Docker engine) and curl (docs/api.md's curl
# examples run in tests/api/test_docs_examples.py). PostgreSQL needs none: it comes
# from a pip wheel (cab.embedded_db). Does nothing when they are already there; needs root (or sudo) otherwise.
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "system-deps: installing ${missing[*]} …"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
