#!/usr/bin/env bash
# Installs Debian's Chromium for the web view's browser tests (web/),
# which fail under CI=true without it. The tests start it themselves,
# headless, with a fresh profile and no network but loopback.
set -euo pipefail
if ! command -v chromium >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium </dev/null
fi
# The wrapper script prints a shell warning on some machines; the version
# line is what matters.
chromium --version 2>/dev/null | tail -n 1
