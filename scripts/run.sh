#!/bin/sh
# SPDX-License-Identifier: MIT
# Run yuxi-sandbox on this machine (Debian 12, root): prepare the machine
# (packages, dockerd, build, images: scripts/setup.sh), then start nginx +
# workers + reaper (scripts/run-service.sh) at https://127.0.0.1:8443/.
# Foreground by default (Ctrl-C stops everything); --detach returns once the
# service answers; --stop stops a detached instance. --provisioners N runs
# the remote mode on this machine: N sandbox hosts and the front at
# https://127.0.0.1:8443/ (docs/scaling.md).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$top/build}
export BUILD_DIR
case "${1:-}" in
--stop) exec "$top/scripts/run-service.sh" --stop ;;
esac
"$top/scripts/setup.sh"
exec "$top/scripts/run-service.sh" "$@"
