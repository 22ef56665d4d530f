# SPDX-License-Identifier: MIT
# tests/deepagents: the deepagents adapter (clients/deepagents-js, npm) against
# the real service (nginx + workers + dockerd, default sandbox image): unit
# tests, deepagents' conformance suite for sandbox backends (from
# ../shared/third_party/sandbox-standard-tests beside the checkout; skipped,
# saying so, when absent) and a createDeepAgent loop compared with
# LocalShellBackend. Exits 77 (skip) without Node.js >= 20.
TESTS += tests/deepagents/run-deepagents.sh
EXTRA_DIST += tests/deepagents/run-deepagents.sh tests/deepagents/serve.py \
	clients/deepagents-js/package.json clients/deepagents-js/package-lock.json \
	clients/deepagents-js/vitest.config.js clients/deepagents-js/README.md \
	clients/deepagents-js/src/index.js clients/deepagents-js/src/sandbox.js \
	clients/deepagents-js/src/http.js clients/deepagents-js/src/paths.js \
	clients/deepagents-js/src/mime.js clients/deepagents-js/src/check.js \
	clients/deepagents-js/src/sessions.js clients/deepagents-js/src/processes.js \
	clients/deepagents-js/test/service.js clients/deepagents-js/test/unit.test.js \
	clients/deepagents-js/test/conformance.test.js \
	clients/deepagents-js/test/agent-loop.test.js \
	clients/deepagents-js/test/options.test.js \
	clients/deepagents-js/test/sessions.test.js docs/deepagents.md
