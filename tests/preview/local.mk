# SPDX-License-Identifier: MIT
# tests/preview: preview URLs (docs/api.md "Previews") against the real
# service (nginx + yuxi-sandboxd + dockerd), driven by pytest: serving,
# WebSocket, server-sent events, 100 MB, revocation, ownership, workers
# left free, and the protections against their controls; test_records.c
# the tokens and records (src/preview/preview.c) alone.
PREVIEW_TESTS = tests/preview/test_records
check_PROGRAMS += $(PREVIEW_TESTS)
TESTS += $(PREVIEW_TESTS) tests/preview/run-preview.sh
EXTRA_DIST += tests/preview/run-preview.sh tests/preview/conftest.py \
	tests/preview/boxsrv.py tests/preview/test_preview.py \
	tests/preview/test_preview_security.py tests/preview/test_preview_remote.py \
	tests/preview/test_preview_browser.py tests/preview/browser.mjs
