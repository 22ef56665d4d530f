#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/run-e2e.sh - run the end-to-end suite (pytest) against the real
# service built in $top_builddir; exits with pytest's status. Extra
# arguments go to pytest. Tests marked `slow` are skipped unless
# YUXI_E2E_SLOW=1. YUXI_E2E_SELECT, when set, is passed as
# -k "$YUXI_E2E_SELECT" (make check-runsc selects the primed-shell tests).
. "$(dirname "$0")/../lib/suite.sh"
[ -z "${YUXI_E2E_SELECT:-}" ] || set -- -k "$YUXI_E2E_SELECT" "$@"
cd "$srcdir/tests/e2e" || exit 99
if [ "${YUXI_E2E_SLOW:-0}" = 1 ]; then
	exec "$py" -m pytest -p no:cacheprovider -q "$@" "$srcdir/tests/e2e"
fi
exec "$py" -m pytest -p no:cacheprovider -q -m "not slow" "$@" "$srcdir/tests/e2e"
