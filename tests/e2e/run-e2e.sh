#!/bin/sh
# tests/e2e/run-e2e.sh - run the end-to-end suite (pytest) against the real
# service built in $top_builddir; exits with pytest's status. Debian's
# python3 is used on purpose: it has python3-pytest and python3-requests.
# Tests marked `slow` are skipped unless YUXI_E2E_SLOW=1.
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
cd "$srcdir/tests/e2e" || exit 99
if [ "${YUXI_E2E_SLOW:-0}" = 1 ]; then
	PYTHONDONTWRITEBYTECODE=1 exec "$py" -m pytest -p no:cacheprovider -q "$@" "$srcdir/tests/e2e"
fi
PYTHONDONTWRITEBYTECODE=1 exec "$py" -m pytest -p no:cacheprovider -q -m "not slow" "$@" "$srcdir/tests/e2e"
