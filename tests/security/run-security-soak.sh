#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/security/run-security-soak.sh - the long part of the security
# suites (`make check-soak`): the hostile-listing group with 1,000,000
# entries in one directory, then the whole quick suite three times in a row
# on the same services (repeatability; worker memory must stay bounded).
here=$(cd "$(dirname "$0")" && pwd)
rc=0
SEC_LIST_ENTRIES=1000000 "$here/run-security.sh" -k 100k_entries || rc=1
for i in 1 2 3; do
	"$here/run-security.sh" || rc=1
done
exit $rc
