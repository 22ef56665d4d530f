#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/proof/run-proof.sh - the quick proof suites of docs/security.md,
# part B (groups 3, 7, 8, 9, 12; group 9 includes reload and stop): pytest against the real service built in
# $top_builddir, then the per-group table. Exit status: pytest's, or 1 when
# a group has an escape, a leak, a hang, a lost request beyond the killed
# worker's, a leaked container, or a control case that did not catch its
# leak. Extra arguments go to pytest (e.g. -k g3); YUXI_PROOF_SELECT, when
# set, is passed as -k "$YUXI_PROOF_SELECT" (make check-runsc selects the
# in-sandbox attack suites with it, since make check cannot pass arguments).
# PROOF_SHARD=1|2|3 runs one third of the groups (run-proof-N.sh): make
# check runs the three at once, each with its own results file and table.
. "$(dirname "$0")/../lib/suite.sh"
PROOF_RESULTS=${PROOF_RESULTS:-$builddir/tests/proof/results${PROOF_SHARD:+-$PROOF_SHARD}.json}
export PROOF_RESULTS
mkdir -p "$(dirname "$PROOF_RESULTS")"
[ "${PROOF_RESULTS_KEEP:-0}" = 1 ] || rm -f "$PROOF_RESULTS"
docker version >/dev/null 2>&1 || { echo "proof: no container engine"; exit 77; }
cd "$srcdir/tests/proof" || exit 99
[ -z "${YUXI_PROOF_SELECT:-}" ] || set -- -k "$YUXI_PROOF_SELECT" "$@"
# the groups' files: all of them, or one shard's (PROOF_SHARD, run-proof-N.sh:
# make check runs the three shards side by side)
case ${PROOF_SHARD:-all} in
1) files="test_g12_tenants.py test_g12_pool.py" ;;
2) files="test_g3_hostside.py test_g7_confine.py test_g8_exhaust.py test_g8_quota.py" ;;
3) files="test_g9_lifecycle.py test_g9_reload.py test_g9_supervise.py test_g8_budget.py" ;;
*) files="test_g3_hostside.py test_g7_confine.py test_g9_lifecycle.py test_g9_reload.py
	test_g8_exhaust.py test_g12_tenants.py test_g8_budget.py test_g8_quota.py
	test_g12_pool.py test_g9_supervise.py" ;;
esac
set -- "$@"
for f in $files; do set -- "$@" "$srcdir/tests/proof/$f"; done
"$py" -m pytest -p no:cacheprovider -q -s -o console_output_style=classic "$@"
rc=$?
"$py" "$srcdir/tests/proof/prooffix.py" summary "$PROOF_RESULTS" || rc=1
exit $rc
