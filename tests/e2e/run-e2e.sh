#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/run-e2e.sh - run the end-to-end suite (pytest) against the real
# service built in $top_builddir; exits with pytest's status. Extra
# arguments go to pytest. Tests marked `slow` are skipped unless
# YUXI_E2E_SLOW=1. YUXI_E2E_SELECT, when set, is passed as
# -k "$YUXI_E2E_SELECT" (make check-runsc selects the primed-shell tests).
# E2E_SHARD picks half of the files for `make check`, which runs the two
# halves side by side (run-e2e-1.sh, run-e2e-2.sh): shard 1 is the files
# of E2E_SHARD1 (about half of the suite's time, measured with pytest
# --durations and in CI: 7.6 and 3.2 minutes before test_pool.py and
# test_tx_kill.py moved to shard 2), shard 2 every other file (a new file
# lands there); none runs them all.
. "$(dirname "$0")/../lib/suite.sh"
[ -z "${YUXI_E2E_SELECT:-}" ] || set -- -k "$YUXI_E2E_SELECT" "$@"
cd "$srcdir/tests/e2e" || exit 99
E2E_SHARD1="test_lifecycle.py test_tx.py test_snapshots.py test_primed.py
	test_observe.py test_recipes.py test_network.py test_fs.py
	test_tx_tiers.py test_service.py test_site.py"
where=$srcdir/tests/e2e
case ${E2E_SHARD:-all} in
1)	where=
	for f in $E2E_SHARD1; do where="$where $srcdir/tests/e2e/$f"; done ;;
2)	for f in $E2E_SHARD1; do set -- "$@" --ignore="$srcdir/tests/e2e/$f"; done ;;
esac
if [ "${YUXI_E2E_SLOW:-0}" = 1 ]; then
	exec "$py" -m pytest -p no:cacheprovider -q "$@" $where
fi
exec "$py" -m pytest -p no:cacheprovider -q -m "not slow" "$@" $where
