#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/web/run-web.sh - browser tests of the workbench page (web/): brings up
# the real service (yuxi-sandboxd + nginx + Docker, through the test harness,
# see serve.py) on a free 127.0.0.1 port with its own state directory, runs
# workbench.test.mjs (node --test, headless Chromium via playwright-core)
# against it, then stops everything and removes the run's containers.
# Exits with the tests' status; 77 (skip) when node or Chromium is missing.
#
# environment: top_srcdir (checkout; default ../..), top_builddir (build dir
# with yuxi-sandboxd; required, `make check` sets it), YUXI_E2E_IMAGE
# (sandbox image, default yuxi-sandbox-test:latest), YUXI_CHROMIUM (default
# /usr/bin/chromium), YUXI_WEB_ARTIFACTS (screenshots; default
# tests/web/artifacts), YUXI_WEB_KEEP=1 keeps the service's state directory.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/suite.sh"
chromium=${YUXI_CHROMIUM:-/usr/bin/chromium}
export YUXI_CHROMIUM="$chromium"

command -v node >/dev/null 2>&1 || { echo "run-web: node not installed; skipped" >&2; exit 77; }
[ -x "$chromium" ] || { echo "run-web: no $chromium (apt-get install chromium); skipped" >&2; exit 77; }
if [ ! -d "$here/node_modules/playwright-core" ]; then
	# scripts/setup.sh runs `npm ci` here; a read-only tree (distcheck)
	# cannot get it, so the test is skipped there
	[ -w "$here" ] || { echo "run-web: no node_modules in read-only $here; skipped" >&2; exit 77; }
	(cd "$here" && npm ci --no-audit --no-fund >/dev/null) ||
	    { echo "run-web: npm ci failed in $here" >&2; exit 1; }
fi

serve_start "$here/serve.py" yxweb-run || exit 1
YUXI_WEB_INFO="$serve_info" node --test --test-concurrency=1 --test-timeout=600000 \
    "$here/workbench.test.mjs"
rc=$?
serve_stop
exit $rc
