#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/security/run-security-soak.sh - the long part of the security
# suites (`make check-soak`): the hostile-listing group with 1,000,000
# entries in one directory, and the whole quick suite three times
# (repeatability; worker memory must stay bounded). SEC_SOAK_PART picks a
# third of it for make -j check-soak (run-security-soak-N.sh): 1 is the
# listing group and the first pass, 2 and 3 a pass each; none runs it all
# in a row. Each part has its own results file and its own services.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/suite.sh"
rc=0
part=${SEC_SOAK_PART:-all}
res=$builddir/tests/security/results-soak-$part
case $part in
1 | all)
	SEC_RESULTS=$res-list.json SEC_LIST_ENTRIES=1000000 \
	    "$here/run-security.sh" -k 100k_entries || rc=1 ;;
esac
case $part in
all) passes="1 2 3" ;;
*) passes=$part ;;
esac
for i in $passes; do
	SEC_RESULTS=$res-$i.json "$here/run-security.sh" || rc=1
done
exit $rc
