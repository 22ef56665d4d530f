#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/preview/run-preview.sh - the preview suite (pytest): preview URLs
# (docs/api.md "Previews") against the real service (nginx + TLS +
# yuxi-sandboxd + dockerd) built in $top_builddir; exits with pytest's
# status. Extra arguments go to pytest. YUXI_TEST_RUNTIME=runsc runs it
# with every sandbox under gVisor (make check-runsc runs the GET and
# WebSocket checks so).
. "$(dirname "$0")/../lib/suite.sh"
cd "$srcdir/tests/preview" || exit 99
exec "$py" -m pytest -p no:cacheprovider -q "$@" "$srcdir/tests/preview"
