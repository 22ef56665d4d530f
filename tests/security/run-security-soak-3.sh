#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/security/run-security-soak-3.sh - part 3 of the security soak
# (run-security-soak.sh), for make -j check-soak.
SEC_SOAK_PART=3 exec "$(dirname "$0")/run-security-soak.sh" "$@"
