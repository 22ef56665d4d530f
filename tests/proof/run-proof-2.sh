#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/proof/run-proof-2.sh - shard 2 of the quick proof suites
# (run-proof.sh: which groups), so that make check runs the three shards
# side by side.
PROOF_SHARD=2 exec "$(dirname "$0")/run-proof.sh" "$@"
