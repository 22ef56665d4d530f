#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/deepagents/run-deepagents.sh - the deepagents adapter
# (clients/deepagents-js) against the real service: brings up yuxi-sandboxd
# + nginx (TLS, bearer tokens) with the default sandbox image through the
# test harness (serve.py) on a free 127.0.0.1 port with its own state, runs
# the adapter's vitest suites, then stops everything and removes the run's
# containers:
#   - unit.test.js         path helpers, retries and the answers of pending
#                          API changes, against a fake peer;
#   - conformance.test.js  deepagents' conformance suite for sandbox backends
#                          (93 tests), used from
#                          ../shared/third_party/sandbox-standard-tests beside
#                          the checkout; skipped, saying so, when absent;
#   - agent-loop.test.js   a real createDeepAgent loop with a scripted fake
#                          chat model, compared with LocalShellBackend;
#   - options.test.js      cwd and env of commands, thread metadata and idle
#                          timeout, bad input as errors;
#   - sessions.test.js     sessions and processes on a terminal (the plain
#                          calls, typed errors) and the session mode.
# YUXI_DA_SESSION=1 runs the conformance suite with the backend in session
# mode (session: true).
# Ends with "deepagents: N passed, N failed, N skipped"; exits with the
# tests' status, 77 (skip) without Node.js >= 20 or without the npm
# packages and no way to install them.
#
# environment: top_srcdir, top_builddir (as for the other suites),
# YUXI_DA_STANDARD_TESTS (the conformance suite's directory),
# YUXI_DA_IMAGE (sandbox image, default yuxi-sandbox:latest),
# YUXI_DA_KEEP=1 keeps the service's state directory. Extra arguments go to
# vitest (e.g. a test file or -t NAME).
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/suite.sh"
top=$srcdir
bd=$builddir
pkg=$top/clients/deepagents-js

say() { echo "run-deepagents: $*" >&2; }

command -v node >/dev/null 2>&1 || { say "node not installed; skipped"; exit 77; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] 2>/dev/null || { say "Node.js $major < 20; skipped"; exit 77; }

if [ ! -d "$pkg/node_modules/deepagents" ]; then
	# scripts/setup.sh runs `npm ci` in the checkout; a read-only tree
	# (distcheck) gets its copy installed in the build tree instead
	if [ ! -w "$pkg" ]; then
		copy=$bd/clients/deepagents-js
		mkdir -p "$copy" || exit 1
		cp -R "$pkg/package.json" "$pkg/package-lock.json" "$pkg/vitest.config.js" \
		    "$pkg/src" "$pkg/test" "$copy/" || exit 1
		chmod -R u+w "$copy"
		pkg=$copy
	fi
	if [ ! -d "$pkg/node_modules/deepagents" ]; then
		say "installing the adapter's npm packages in $pkg"
		(cd "$pkg" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
		    { say "npm ci failed in $pkg; skipped"; exit 77; }
	fi
fi

suite=${YUXI_DA_STANDARD_TESTS:-$top/../shared/third_party/sandbox-standard-tests}
case $suite in /*) ;; *) suite=$(pwd)/$suite ;; esac
if [ -f "$suite/src/index.ts" ]; then
	suite=$(cd "$suite" && pwd)
else
	say "no conformance suite at $suite (../shared beside the checkout): its 93 tests are skipped"
fi
export YUXI_DA_STANDARD_TESTS="$suite"

serve_start "$here/serve.py" yxda-run || exit 1
field() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$serve_info" "$1"; }
YUXI_DA_URL=$(field url)
YUXI_DA_TOKEN=$(field token)
YUXI_DA_CA=$(field ca)
YUXI_DA_TOKEN_BOB=$(field token_bob)
export YUXI_DA_URL YUXI_DA_TOKEN YUXI_DA_CA YUXI_DA_TOKEN_BOB

(cd "$pkg" && node_modules/.bin/vitest run --reporter=default --reporter=json \
    --outputFile.json="$serve_dir/results.json" "$@")
rc=$?
if [ -s "$serve_dir/results.json" ]; then
	node -e '
		const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
		console.log(`deepagents: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
	' "$serve_dir/results.json"
else
	echo "deepagents: 0 passed, 1 failed"
	[ $rc -eq 0 ] && rc=1
fi
serve_stop
exit $rc
