#!/bin/sh
# SPDX-License-Identifier: MIT
# Sum automake's per-test results (.trs files) of a build tree into one
# closing line "N passed, N failed, N skipped" (CI reads it).
set -eu
dir=${1:-.}
find "$dir" -name '*.trs' -not -path '*/_build/*' -print0 | xargs -0 cat 2>/dev/null | awk '
	/^:test-result: PASS/  { p++ }
	/^:test-result: XFAIL/ { p++ }
	/^:test-result: FAIL/  { f++ }
	/^:test-result: XPASS/ { f++ }
	/^:test-result: ERROR/ { f++ }
	/^:test-result: SKIP/  { s++ }
	END { printf "%d passed, %d failed, %d skipped\n", p, f, s }'
