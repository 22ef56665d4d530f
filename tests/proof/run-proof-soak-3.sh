#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/proof/run-proof-soak-3.sh - shard 3 of the long proof suites
# (run-proof-soak.sh; the shards of run-proof.sh), for make -j check-soak.
PROOF_SHARD=3 exec "$(dirname "$0")/run-proof-soak.sh" "$@"
