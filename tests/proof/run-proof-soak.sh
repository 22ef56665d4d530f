#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/proof/run-proof-soak.sh - the long proof suites (make check-soak):
# the same tests at full size (PROOF_SOAK=1: 10,000 rename-exchange tries per
# host-side reader, long worker kill loops, longer attacks), in the three
# shards of `make check` (run-proof-soak-N.sh, side by side under make -j;
# PROOF_SHARD picks one, none runs them all); the shard with group 9 (3, or
# all) first runs the provider's robust-mutex kill-loop soak
# (tests/provider/test_killloop_soak) and puts its numbers in the report. The engine restart case (SIGTERM to
# dockerd, started again as scripts/setup.sh does) disturbs every container
# on the machine: it runs only with YUXI_PROOF_ENGINE_RESTART=1.
. "$(dirname "$0")/../lib/suite.sh"
PROOF_SOAK=1
export PROOF_SOAK
PROOF_RESULTS=${PROOF_RESULTS:-$builddir/tests/proof/results-soak${PROOF_SHARD:+-$PROOF_SHARD}.json}
export PROOF_RESULTS
rm -f "$PROOF_RESULTS"
kl="$builddir/tests/provider/test_killloop_soak"
krc=0
case ${PROOF_SHARD:-all} in
1 | 2) ;;	# no group 9 in these shards
*) if [ -x "$kl" ]; then
	# (an empty CRITERION_OUTPUTS makes Criterion print its usage and
	# exit 0 without running a test: unset, not empty)
	out=$(env -u CRITERION_OUTPUTS "$kl" --verbose 2>&1); krc=$?
	echo "$out" | grep -E "[0-9]+ rounds, |Synthesis" | sed 's/^/killloop-soak: /'
	n=$(echo "$out" | sed -n 's/.* \([0-9][0-9]*\) rounds, \([0-9][0-9]*\) lock repairs.*/\1 \2/p' | tail -1)
	# no rounds reported: the kill loop did not run
	[ -n "$n" ] || { echo "killloop-soak: no rounds reported"; krc=1; }
	"$py" - "$PROOF_RESULTS" "$krc" $n <<'PY'
import json, sys
path, rc = sys.argv[1], int(sys.argv[2])
try:
    d = json.load(open(path))
except (OSError, ValueError):
    d = {}
g = d.setdefault("9", {})
m = g.setdefault("measures", {})
m["killloop_soak_exit"] = rc
if len(sys.argv) > 4:
    m["killloop_soak_rounds"] = int(sys.argv[3])
    m["killloop_soak_lock_repairs"] = int(sys.argv[4])
json.dump(d, open(path, "w"), indent=1, sort_keys=True)
PY
else
	echo "killloop-soak: $kl not built"
	krc=1
fi ;;
esac
PROOF_RESULTS_KEEP=1 "$srcdir/tests/proof/run-proof.sh" "$@"
rc=$?
[ $krc -eq 0 ] || rc=1
exit $rc
