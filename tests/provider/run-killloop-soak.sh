#!/bin/sh
# SPDX-License-Identifier: MIT
# The robust-mutex kill-loop soak (`make check-soak`): thousands of rounds of
# children that lock the shared table, modify it and are SIGKILLed at random
# points; the invariants must hold afterwards. A wrapper so the soak binary,
# which is not in TESTS, runs through the plain test driver.
exec "${top_builddir:-.}/tests/provider/test_killloop_soak" "$@"
