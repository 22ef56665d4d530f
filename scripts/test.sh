#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the whole yuxi-sandbox test suite on this machine (Debian 12, root):
# prepares the machine exactly like the run command (packages, dockerd,
# images, build), then `make check` in the build tree: unit tests (Criterion),
# real-engine driver/provider/executor tests and end-to-end tests through real
# nginx + workers + reaper + dockerd. Prints a closing "N passed, N failed".
#   BUILD_DIR=...            build tree (default ./build)
#   YUXI_CONFIGURE_FLAGS=... extra configure flags (e.g. --enable-asan)
#   YUXI_CHECK_JOBS=N        suites run side by side (default: the CPUs;
#                            the suites mostly wait on the engine, CI uses 4)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$top/build}
export BUILD_DIR
"$top/scripts/setup.sh"
cd "$BUILD_DIR"
rc=0
make -j"${YUXI_CHECK_JOBS:-$(nproc)}" check ${TESTS+TESTS="$TESTS"} || rc=$?
"$top/scripts/test-summary.sh" "$BUILD_DIR" || true
if [ $rc -ne 0 ]; then
	echo "test.sh: failures; logs:" >&2
	grep -l -E '^(FAIL|ERROR|not ok)' $(find . -name '*.log' -newer Makefile 2>/dev/null) 2>/dev/null | head -20 >&2 || true
fi
exit $rc
