#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/run-e2e-2.sh - shard 2 of the end-to-end suite (run-e2e.sh),
# for make -j check.
E2E_SHARD=2 exec "$(dirname "$0")/run-e2e.sh" "$@"
