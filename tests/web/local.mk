# SPDX-License-Identifier: MIT
# tests/web: the workbench page (web/) in headless Chromium (playwright-core,
# node --test) against the real service; exits 77 (skip) without node,
# Chromium or tests/web/node_modules in a read-only tree.
TESTS += tests/web/run-web.sh
EXTRA_DIST += tests/web/run-web.sh tests/web/serve.py tests/web/workbench.test.mjs \
	tests/web/package.json tests/web/package-lock.json \
	web/index.html web/app.css web/app.js web/api.js web/tree.js web/term.js \
	web/xterm-csp.js web/favicon.svg \
	nginx/workbench.conf docs/workbench.md
