#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/proof/run-proof-3.sh - shard 3 of the quick proof suites
# (run-proof.sh: which groups), so that make check runs the three shards
# side by side.
PROOF_SHARD=3 exec "$(dirname "$0")/run-proof.sh" "$@"
