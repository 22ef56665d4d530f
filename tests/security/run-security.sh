#!/bin/sh
# tests/security/run-security.sh - the quick security proof suites
# (docs/security.md groups 1, 2, 4, 5, 6; group 10's corpus replay is
# tests/security/test_http_corpus). Runs pytest against the real service
# built in $top_builddir and its control daemons, then prints per group the
# cases tried, escapes, leaks, hangs and control catches. Exit status:
# pytest's. Extra arguments go to pytest (e.g. -k identity).
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${top_builddir:-$(pwd)}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
export top_srcdir="$srcdir" top_builddir="$builddir"
SEC_RESULTS=${SEC_RESULTS:-$builddir/tests/security/results.json}
export SEC_RESULTS
mkdir -p "$(dirname "$SEC_RESULTS")"
rm -f "$SEC_RESULTS"
cd "$srcdir/tests/security" || exit 99
PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -p no:cacheprovider -q \
	-m "not soak" "$@" "$srcdir/tests/security"
rc=$?
"$py" "$srcdir/tests/security/summary.py" "$SEC_RESULTS" || rc=1
exit $rc
