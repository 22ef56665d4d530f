#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/proof/run-proof-soak-2.sh - shard 2 of the long proof suites
# (run-proof-soak.sh; the shards of run-proof.sh), for make -j check-soak.
PROOF_SHARD=2 exec "$(dirname "$0")/run-proof-soak.sh" "$@"
