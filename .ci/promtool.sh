#!/usr/bin/env bash
# promtool for the alert-rule tests of deploy/prometheus: Debian's
# prometheus package ships it (building it from source takes far longer).
# The package's own server is not started (no init system runs here).
set -euo pipefail
if ! command -v promtool >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus </dev/null >/dev/null
fi
promtool --version 2>&1 | sed -n 1p
