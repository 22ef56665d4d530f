#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/run-e2e-1.sh - shard 1 of the end-to-end suite (run-e2e.sh),
# for make -j check.
E2E_SHARD=1 exec "$(dirname "$0")/run-e2e.sh" "$@"
