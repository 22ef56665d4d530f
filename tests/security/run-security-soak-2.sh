#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/security/run-security-soak-2.sh - part 2 of the security soak
# (run-security-soak.sh), for make -j check-soak.
SEC_SOAK_PART=2 exec "$(dirname "$0")/run-security-soak.sh" "$@"
