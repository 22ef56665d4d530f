#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/stream/run-stream.sh - the stream suite (pytest): streamed execute
# and background processes against the real service built in
# $top_builddir; exits with pytest's status. Extra arguments go to pytest.
# Tests marked `slow` are skipped unless YUXI_E2E_SLOW=1.
. "$(dirname "$0")/../lib/suite.sh"
cd "$srcdir/tests/stream" || exit 99
if [ "${YUXI_E2E_SLOW:-0}" = 1 ]; then
	exec "$py" -m pytest -p no:cacheprovider -q "$@" "$srcdir/tests/stream"
fi
exec "$py" -m pytest -p no:cacheprovider -q -m "not slow" "$@" "$srcdir/tests/stream"
