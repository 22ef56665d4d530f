# SPDX-License-Identifier: MIT
# tests/cli: the operator CLI (src/cli) against the real engine.
#   test_cli.sh  doctor, exec, list --json, usage errors, --help, destroy/gc
TESTS += tests/cli/test_cli.sh
EXTRA_DIST += tests/cli/test_cli.sh
