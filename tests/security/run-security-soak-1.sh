#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/security/run-security-soak-1.sh - part 1 of the security soak
# (run-security-soak.sh), for make -j check-soak.
SEC_SOAK_PART=1 exec "$(dirname "$0")/run-security-soak.sh" "$@"
