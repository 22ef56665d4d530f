#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/install/run-install.sh - the packaged install, end to end
# (install_test.py says what it checks): builds the Debian package from a
# copy of this checkout (and a second one with a bumped version), checks it
# with lintian and dpkg -c, checks `make install`/`make uninstall` with
# DESTDIR, installs the package into a host whose nginx already serves a
# site, starts the installed daemon as its systemd unit would
# (unitexec.py), puts what `nginx-conf` writes into that site under a URL
# prefix with basic auth, drives the API, downloads and workbench over
# HTTP, rotates the audit log, runs the CLI as root, a second instance,
# upgrades with the service running, removes and purges the package and
# checks what is left. About 2 minutes on 2 cores (three builds).
#
# Not part of `make check`: it installs and purges the system package
# yuxi-sandbox on this machine (it refuses to run when that package is
# already installed). Run as root on Debian 12 with dockerd running and
# the image yuxi-sandbox:latest built (scripts/test.sh does both); CI runs
# it as a stage of its own. Packages it needs beyond scripts/setup.sh's:
# debhelper dh-autoreconf lintian fakeroot python3-seccomp logrotate.
# Exit status 0 when every check passed, 1 otherwise, 77 when not root.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
export top_srcdir="$top"
PYTHONPATH=$top/tests/lib${PYTHONPATH:+:$PYTHONPATH}
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
for t in dpkg-buildpackage lintian setpriv unshare logrotate nginx docker systemd-analyze; do
	command -v "$t" >/dev/null 2>&1 || { echo "run-install.sh: $t missing" >&2; exit 1; }
done
/usr/bin/python3 -c 'import seccomp, requests' 2>/dev/null ||
	{ echo "run-install.sh: python3-seccomp and python3-requests needed" >&2; exit 1; }
exec /usr/bin/python3 "$top/tests/install/install_test.py" "$@"
