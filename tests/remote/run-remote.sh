#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/remote/run-remote.sh - run the remote-mode suite (pytest) against
# the real services built in $top_builddir; exits with pytest's status.
# Extra arguments go to pytest.
. "$(dirname "$0")/../lib/suite.sh"
cd "$srcdir/tests/remote" || exit 99
exec "$py" -m pytest -p no:cacheprovider -q -s "$@" "$srcdir/tests/remote"
