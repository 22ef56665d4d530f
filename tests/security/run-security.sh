#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/security/run-security.sh - the quick security proof suites
# (docs/security.md groups 1, 2, 4, 5, 6, 11; group 10's corpus replay is
# tests/security/test_http_corpus). Runs pytest against the real service
# built in $top_builddir and its control daemons, then prints per group the
# cases tried, escapes, leaks, hangs and control catches. Exit status:
# pytest's, or 1 when the table shows a failure. Extra arguments go to
# pytest (e.g. -k identity).
. "$(dirname "$0")/../lib/suite.sh"
SEC_RESULTS=${SEC_RESULTS:-$builddir/tests/security/results.json}
export SEC_RESULTS
mkdir -p "$(dirname "$SEC_RESULTS")"
rm -f "$SEC_RESULTS"
cd "$srcdir/tests/security" || exit 99
"$py" -m pytest -p no:cacheprovider -q -m "not soak" "$@" "$srcdir/tests/security"
rc=$?
"$py" "$srcdir/tests/security/secfix.py" summary "$SEC_RESULTS" || rc=1
exit $rc
