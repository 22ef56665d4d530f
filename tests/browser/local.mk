# SPDX-License-Identifier: MIT
# tests/browser: the browser profile (docs/browser.md) - its services kept
# by the in-sandbox agent, DevTools, the VNC desktop - against the real
# service (nginx + yuxi-sandboxd + dockerd), driven by pytest. Skipped when
# the image yuxi-sandbox-browser is not built (run-browser.sh).
TESTS += tests/browser/run-browser.sh
EXTRA_DIST += tests/browser/run-browser.sh tests/browser/conftest.py \
	tests/browser/pngcheck.py tests/browser/test_browser.py \
	tests/browser/test_browser_security.py \
	tests/browser/test_desktop.py
