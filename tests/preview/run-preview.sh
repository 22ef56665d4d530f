#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/preview/run-preview.sh - the preview suite (pytest): preview URLs
# (docs/api.md "Previews") against the real service (nginx + TLS +
# yuxi-sandboxd + dockerd) built in $top_builddir; exits with pytest's
# status. Extra arguments go to pytest. YUXI_TEST_RUNTIME=runsc runs it
# with every sandbox under gVisor; YUXI_PREVIEW_SELECT, when set, is
# passed as -k (make check-runsc selects the GET, WebSocket, streaming,
# revoke and remote checks).
. "$(dirname "$0")/../lib/suite.sh"
[ -z "${YUXI_PREVIEW_SELECT:-}" ] || set -- -k "$YUXI_PREVIEW_SELECT" "$@"
cd "$srcdir/tests/preview" || exit 99
exec "$py" -m pytest -p no:cacheprovider -q "$@" "$srcdir/tests/preview"
